// The graph viewer's QGraphicsView: drag to pan, wheel (or +/-) to zoom
// around the pointer, F to fit, 1 for actual size. Reports double-clicks
// and context menus on a box by its item index.
#pragma once

#include <QGraphicsView>

namespace lazyscope::gui {

class GraphCanvas : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphCanvas(QWidget* parent = nullptr);

  void zoomBy(double factor);
  // Fits the whole drawing, but never below a scale where boxes are mere
  // dots: a large graph then opens readable at its top.
  void fitReadable();
  double zoom() const { return transform().m11(); }

 signals:
  void itemActivated(int index);
  void itemMenuRequested(int index, const QPoint& globalPos);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  int indexAt(const QPoint& pos) const;
};

}  // namespace lazyscope::gui
