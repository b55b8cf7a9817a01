// The compiled graphs of one run, one row per graph hash, in order of first
// use: what each cost and the line whose sync first compiled it.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "loaders/graph_loader.h"

namespace lazyscope::gui {

class GraphListModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Columns { Hash, Nodes, Compiles, CompileTime, Executions, ExecuteTime, FirstStep, Source, NUM_COLUMNS };
  enum Roles {
    SortRole = Qt::UserRole,  // raw values: numbers sort as numbers
    HashRole,                 // the graph hash (quint64), in every column
    HasIrRole,                // bool: the IR is stored
  };

  explicit GraphListModel(QObject* parent = nullptr);

  void setGraphs(std::vector<GraphRow> rows);
  const std::vector<GraphRow>& graphs() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<GraphRow> rows_;
};

}  // namespace lazyscope::gui
