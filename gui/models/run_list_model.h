// The runs of one history as a table, one row per run, in the order the
// storage query library returns them (newest first). Sorting and filtering
// are left to a QSortFilterProxyModel that sorts on SortRole.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "lazyscope/history.pb.h"

namespace lazyscope::gui {

class RunListModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Columns {
    Id,
    Name,
    Script,  // file name; the full path is the tooltip
    Status,
    Started,
    Duration,
    Steps,
    Compiles,    // uncached compiles
    CacheHits,   // executions that reused a compiled graph
    MedianStep,  // after warm-up
    Fallbacks,   // ops that ran on the host
    LastLoss,    // the last value logged as "loss"
    Tags,
    NUM_COLUMNS
  };
  enum Roles {
    SortRole = Qt::UserRole,  // raw value of the cell: numbers sort as numbers
    RunIdRole,                // the run's id, in every column
    StatusRole,               // the run's pb::RunStatus as an int, in every column
  };

  explicit RunListModel(QObject* parent = nullptr);
  ~RunListModel() override;

  // Replaces every row (a model reset).
  void setRuns(std::vector<pb::RunSummary> runs);
  const std::vector<pb::RunSummary>& runs() const { return runs_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant displayData(const pb::RunSummary& summary, int column) const;
  QVariant sortData(const pb::RunSummary& summary, int column) const;
  QVariant toolTipData(const pb::RunSummary& summary, int column) const;

  std::vector<pb::RunSummary> runs_;
};

}  // namespace lazyscope::gui
