#include "views/graph_canvas.h"

#include <QContextMenuEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "views/graph_scene.h"

namespace lazyscope::gui {
namespace {
constexpr double kMinZoom = 0.02;
constexpr double kMaxZoom = 4.0;
constexpr double kReadableZoom = 0.5;  // GraphItemBox draws no text below 0.4
}  // namespace

GraphCanvas::GraphCanvas(QWidget* parent) : QGraphicsView(parent) {
  setObjectName(QStringLiteral("graphCanvas"));
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  // Boxes repaint themselves on selection; a full repaint on scroll is
  // cheaper than tracking many small regions over thousands of items.
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setOptimizationFlag(QGraphicsView::DontSavePainterState);
  setFocusPolicy(Qt::StrongFocus);
}

void GraphCanvas::zoomBy(double factor) {
  const double target = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
  scale(target / zoom(), target / zoom());
}

void GraphCanvas::fitReadable() {
  if (scene() == nullptr) return;
  const QRectF rect = scene()->sceneRect();
  resetTransform();
  const double fit = std::min(viewport()->width() / std::max(rect.width(), 1.0),
                              viewport()->height() / std::max(rect.height(), 1.0));
  const double zoomTo = std::clamp(fit, kReadableZoom, 1.0);
  scale(zoomTo, zoomTo);
  if (fit >= kReadableZoom) {
    centerOn(rect.center());
  } else {
    // Too large to read whole: show the top, where the inputs are.
    centerOn(rect.center().x(), rect.top() + viewport()->height() / zoomTo / 2);
  }
}

void GraphCanvas::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps == 0) {
    QGraphicsView::wheelEvent(event);
    return;
  }
  zoomBy(std::pow(1.2, steps));
  event->accept();
}

void GraphCanvas::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomBy(1.25); return;
    case Qt::Key_Minus: zoomBy(0.8); return;
    case Qt::Key_F: fitReadable(); return;
    case Qt::Key_1: resetTransform(); return;
    default: QGraphicsView::keyPressEvent(event);
  }
}

int GraphCanvas::indexAt(const QPoint& pos) const {
  for (QGraphicsItem* item : items(pos)) {
    if (auto* box = dynamic_cast<GraphItemBox*>(item)) return box->index();
  }
  return -1;
}

void GraphCanvas::mouseDoubleClickEvent(QMouseEvent* event) {
  const int index = indexAt(event->position().toPoint());
  if (index >= 0) {
    emit itemActivated(index);
    event->accept();
    return;
  }
  QGraphicsView::mouseDoubleClickEvent(event);
}

void GraphCanvas::contextMenuEvent(QContextMenuEvent* event) {
  const int index = indexAt(event->pos());
  if (index < 0) return;
  emit itemMenuRequested(index, event->globalPos());
  event->accept();
}

}  // namespace lazyscope::gui
