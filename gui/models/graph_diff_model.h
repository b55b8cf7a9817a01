// Two IR graphs side by side, matched by node position (post-order index):
// row i shows node i of the graph compared with (Before) and node i of the
// recompiled graph (After). Rows whose nodes differ in op, operands, shape,
// dtype or attributes, or that exist in one graph only, are highlighted.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "lazyscope/ir.pb.h"

namespace lazyscope::gui {

class GraphDiffModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Columns {
    Position,
    BeforeOp,     // "matmul(%0, %1)"
    BeforeShape,  // "f32[8, 3]"
    AfterOp,
    AfterShape,
    Source,  // where the After node (else the Before node) was traced
    NUM_COLUMNS
  };
  enum Roles {
    SortRole = Qt::UserRole,
    DiffersRole,  // bool: the row's two nodes differ, in every column
  };

  explicit GraphDiffModel(QObject* parent = nullptr);
  ~GraphDiffModel() override;

  // Replaces both graphs (a model reset). An empty graph stands for one that
  // is unknown (a first compile, or IR that was not stored).
  void setGraphs(pb::IrGraph before, pb::IrGraph after);
  void clear();
  // Rows whose nodes differ.
  int differingCount() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  const pb::IrNode* node(const pb::IrGraph& graph, int row) const;
  bool differs(int row) const;
  QVariant displayData(int row, int column) const;

  pb::IrGraph before_;
  pb::IrGraph after_;
  std::vector<bool> differs_;
};

// "matmul(%0, %1)", with attributes: "sum(%2; dims=[0])".
QString nodeOpText(const pb::IrNode& node);
// "f32[8, 3]".
QString nodeShapeText(const pb::IrNode& node);

}  // namespace lazyscope::gui
