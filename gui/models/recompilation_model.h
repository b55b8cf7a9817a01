// The uncached compiles of one run, one row per compile, in the order the
// storage query library returns them. Sorting is left to a
// QSortFilterProxyModel that sorts on SortRole.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "lazyscope/events.pb.h"

namespace lazyscope::gui {

class RecompilationModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Columns {
    Step,
    Graph,  // short graph hash; the full one is the tooltip
    Nodes,
    Duration,
    ReasonKind,  // first sight, shape, dtype, structure, evicted
    Reason,
    Source,  // file:line of the sync that triggered the compile
    NUM_COLUMNS
  };
  enum Roles {
    SortRole = Qt::UserRole,  // raw value of the cell
    CompileIndexRole,         // the row's index into compiles(), in every column
  };

  explicit RecompilationModel(QObject* parent = nullptr);
  ~RecompilationModel() override;

  // Replaces every row (a model reset). The events need not carry their IR.
  void setCompiles(std::vector<pb::CompileEvent> compiles);
  // Compiles that were recompilations (not a graph's first compile).
  int recompileCount() const;
  const std::vector<pb::CompileEvent>& compiles() const { return compiles_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant displayData(const pb::CompileEvent& compile, int column) const;
  QVariant sortData(const pb::CompileEvent& compile, int column) const;

  std::vector<pb::CompileEvent> compiles_;
};

// "shape", "dtype", "structure", "evicted", "first sight".
QString reasonKindText(pb::CompileReasonKind kind);
// The first 12 hex digits of a graph hash.
QString shortHash(uint64_t hash);
// "train.py:42", or "" when unknown.
QString sourceText(const pb::SourceLocation& source);

}  // namespace lazyscope::gui
