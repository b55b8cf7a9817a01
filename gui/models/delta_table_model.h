// Rows that exist in run A, run B or both, each with a few values measured in
// both runs, shown as "A → B (Δ)" and sorted by the delta: the graph,
// recompile-reason and fallback tables of the Compare view. A value column
// may be "lower is better" (its delta coloured green when B is lower).
#pragma once

#include <QAbstractTableModel>
#include <QPalette>
#include <QStringList>
#include <optional>
#include <vector>

namespace lazyscope::gui {

struct DeltaRow {
  QString presence; // "only in A", "only in B", "both", or a category
  QString item;     // graph hash, op, reason kind
  QString where;    // source line
  // One (A, B) pair per value column; nullopt where the row is absent from a
  // run.
  std::vector<std::pair<std::optional<double>, std::optional<double>>> values;
};

struct DeltaColumn {
  QString title;
  bool isTime = false;       // milliseconds, else a count
  bool lowerIsBetter = true; // false: neutral
};

class DeltaTableModel : public QAbstractTableModel {
  Q_OBJECT

public:
  enum FixedColumns { Presence, Item, Where, FIRST_VALUE };
  enum Roles { SortRole = Qt::UserRole, DeltaRole };

  DeltaTableModel(QStringList fixedTitles, std::vector<DeltaColumn> columns,
                  QObject *parent = nullptr);

  void setRows(std::vector<DeltaRow> rows);
  void setPalette(const QPalette &palette) { palette_ = palette; }

  int rowCount(const QModelIndex &parent = {}) const override;
  int columnCount(const QModelIndex &parent = {}) const override;
  QVariant data(const QModelIndex &index,
                int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

private:
  QStringList fixedTitles_;
  std::vector<DeltaColumn> columns_;
  std::vector<DeltaRow> rows_;
  QPalette palette_;
};

} // namespace lazyscope::gui
