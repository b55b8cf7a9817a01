// The drawing of a laid-out GraphOutline: one GraphItemBox per item and all
// edges in one path (10,000 edges as separate items would dominate the cost
// of building and painting the scene); the selected item's edges are drawn
// again, highlighted, in a second path.
#pragma once

#include <QGraphicsItem>
#include <QGraphicsScene>
#include <memory>
#include <vector>

#include "views/graph_layout.h"
#include "views/graph_outline.h"

class QGraphicsPathItem;

namespace lazyscope::gui {

inline constexpr double kNodeWidth = 150;
inline constexpr double kScopeWidth = 190;
inline constexpr double kNodeHeight = 36;

// Widths of the outline's items as the layout takes them.
LayoutInput layoutInputFor(const GraphOutline& outline);

class GraphItemBox : public QGraphicsItem {
 public:
  GraphItemBox(int index, const OutlineItem& item, double width);

  int index() const { return index_; }
  bool isScope() const { return scope_; }
  void setMatched(bool matched);

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  int index_;
  bool scope_;
  bool matched_ = false;
  double width_;
  QColor fill_;
  QString title_;
  QString subtitle_;
};

class GraphScene : public QGraphicsScene {
  Q_OBJECT

 public:
  explicit GraphScene(QObject* parent = nullptr);
  // Deleting selected items emits selectionChanged: nobody may hear it from
  // a scene (or its viewers) half destroyed.
  ~GraphScene() override { blockSignals(true); }

  // Replaces the drawing.
  void build(std::shared_ptr<const GraphOutline> outline, const LayoutResult& layout);
  void clearGraph();

  const GraphOutline* outline() const { return outline_.get(); }
  GraphItemBox* box(int index) const;
  // The item index of the selected box, or -1.
  int selectedIndex() const;
  void selectItem(int index);
  void setMatches(const std::vector<int>& indices);

 private:
  void highlightEdgesOf(int index);

  std::shared_ptr<const GraphOutline> outline_;
  std::vector<GraphItemBox*> boxes_;
  std::vector<QPointF> top_;     // where edges enter each item
  std::vector<QPointF> bottom_;  // where edges leave it
  QGraphicsPathItem* edges_ = nullptr;
  QGraphicsPathItem* highlighted_ = nullptr;
};

}  // namespace lazyscope::gui
