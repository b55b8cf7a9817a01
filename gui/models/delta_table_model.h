// Rows that exist in run A, run B or both, each with a few values measured in
// both runs, shown as "A → B (Δ)" and sorted by the delta: the graph,
// recompile-reason and fallback tables of the Compare view. A value column
// is coloured green where B is better, red where worse, by what the column
// measures (betterDirection), and only where the row is in both runs.
#pragma once

#include <QAbstractTableModel>
#include <QHash>
#include <QPalette>
#include <QStringList>
#include <optional>
#include <vector>

namespace lazyscope::gui {

struct DeltaRow {
  QString presence;  // "only in A", "only in B", "both", or a category
  QString item;      // graph hash, op, reason kind
  QString where;     // source line
  // One (A, B) pair per value column; nullopt where the row is absent from a
  // run.
  std::vector<std::pair<std::optional<double>, std::optional<double>>> values;
};

// Which way a change of a measured figure is good: one table
// (betterDirection) by the figure's key, so that a column is coloured by what
// it means, not by the sign of its delta.
enum class Better { Neither, Lower, Higher };

// "compiles", "compile_ms", "executions", "execute_ms", "fallbacks",
// "fallback_ms", "steps", "steps_per_s", "cache_hit_rate"; an unknown key is
// Neither (no colour rather than a wrong one).
Better betterDirection(const QString &metric);

// +1 when B is better than A, -1 when worse, 0 when equal or neither.
int deltaVerdict(Better better, double delta);

struct DeltaColumn {
  QString title;
  QString metric;  // the key of betterDirection(); its unit: "_ms" is time
};

class DeltaTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum FixedColumns { Presence, Item, Where, FIRST_VALUE };
  enum Roles { SortRole = Qt::UserRole, DeltaRole, VerdictRole };

  DeltaTableModel(QStringList fixedTitles, std::vector<DeltaColumn> columns, QObject *parent = nullptr);

  void setRows(std::vector<DeltaRow> rows);
  // A change of `metric` no larger than `noise` (in its unit) is no verdict:
  // the runs' own spread (storage's comparison estimates it per run-level
  // metric; a graph's share of it is smaller, so this errs towards "no
  // verdict").
  void setNoise(const QString &metric, double noise);
  void setPalette(const QPalette &palette) { palette_ = palette; }

  int rowCount(const QModelIndex &parent = {}) const override;
  int columnCount(const QModelIndex &parent = {}) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QStringList fixedTitles_;
  std::vector<DeltaColumn> columns_;
  std::vector<DeltaRow> rows_;
  QHash<QString, double> noise_;
  QPalette palette_;
};

}  // namespace lazyscope::gui
