#include "views/graph_scene.h"

#include <QFontMetricsF>
#include <QGraphicsPathItem>
#include <QPainter>
#include <QPalette>
#include <QStyleOptionGraphicsItem>

#include "util/run_status.h"

namespace lazyscope::gui {
namespace {

QPainterPath edgePath(QPointF from, QPointF to) {
  QPainterPath path(from);
  const double bend = std::max(12.0, (to.y() - from.y()) / 2);
  path.cubicTo(from + QPointF(0, bend), to - QPointF(0, bend), to);
  return path;
}

}  // namespace

LayoutInput layoutInputFor(const GraphOutline& outline) {
  LayoutInput input;
  input.widths.reserve(outline.items.size());
  for (const OutlineItem& item : outline.items) {
    input.widths.push_back(item.node < 0 ? kScopeWidth : kNodeWidth);
  }
  input.edges = outline.edges;
  input.nodeHeight = kNodeHeight;
  return input;
}

GraphItemBox::GraphItemBox(int index, const OutlineItem& item, double width)
    : index_(index),
      scope_(item.node < 0),
      width_(width),
      fill_(opKindColor(item.kind)),
      title_(item.title),
      subtitle_(item.subtitle) {
  setFlag(ItemIsSelectable);
  setAcceptHoverEvents(false);
  QString tip = scope_ ? item.tooltip + QObject::tr("\nDouble-click to expand")
                       : QStringLiteral("%1  %2").arg(title_, subtitle_);
  if (!scope_ && !item.scope.isEmpty()) tip += QObject::tr("\nscope %1").arg(item.scope);
  setToolTip(tip);
}

void GraphItemBox::setMatched(bool matched) {
  if (matched_ == matched) return;
  matched_ = matched;
  update();
}

QRectF GraphItemBox::boundingRect() const { return QRectF(-2, -2, width_ + 4, kNodeHeight + 4); }

void GraphItemBox::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const QRectF rect(0, 0, width_, kNodeHeight);
  const QPalette palette = scene() != nullptr ? scene()->palette() : QPalette();
  QPen pen(isSelected() ? palette.color(QPalette::Highlight)
           : matched_   ? QColor(0xe0, 0x80, 0x00)
                        : QColor(0x50, 0x50, 0x50));
  pen.setWidthF(isSelected() || matched_ ? 3.0 : 1.0);
  if (scope_) pen.setStyle(isSelected() || matched_ ? Qt::SolidLine : Qt::DashLine);
  painter->setPen(pen);
  painter->setBrush(fill_);
  painter->drawRoundedRect(rect, scope_ ? 8 : 4, scope_ ? 8 : 4);

  // Zoomed far out the text is unreadable anyway; skipping it keeps panning
  // over thousands of boxes smooth.
  const double detail = option->levelOfDetailFromTransform(painter->worldTransform());
  if (detail < 0.4) return;
  painter->setPen(Qt::black);  // the fills are light in every palette
  QFont font = painter->font();
  font.setBold(true);
  painter->setFont(font);
  const QFontMetricsF metrics(font);
  const QRectF text = rect.adjusted(6, 2, -6, -2);
  const QRectF top(text.left(), text.top(), text.width(), text.height() / 2);
  const QRectF bottom(text.left(), text.center().y(), text.width(), text.height() / 2);
  // A scope's path is elided at its start: the last component names it.
  painter->drawText(top, Qt::AlignCenter,
                    metrics.elidedText(title_, scope_ ? Qt::ElideLeft : Qt::ElideRight, text.width()));
  font.setBold(false);
  painter->setFont(font);
  painter->drawText(bottom, Qt::AlignCenter, QFontMetricsF(font).elidedText(subtitle_, Qt::ElideMiddle, text.width()));
}

GraphScene::GraphScene(QObject* parent) : QGraphicsScene(parent) {
  connect(this, &QGraphicsScene::selectionChanged, this, [this] { highlightEdgesOf(selectedIndex()); });
}

void GraphScene::clearGraph() {
  clearSelection();
  clear();
  boxes_.clear();
  top_.clear();
  bottom_.clear();
  edges_ = nullptr;
  highlighted_ = nullptr;
  outline_.reset();
}

void GraphScene::build(std::shared_ptr<const GraphOutline> outline, const LayoutResult& layout) {
  clearGraph();
  outline_ = std::move(outline);
  const size_t n = outline_->items.size();
  boxes_.reserve(n);
  top_.reserve(n);
  bottom_.reserve(n);
  const LayoutInput input = layoutInputFor(*outline_);
  for (size_t i = 0; i < n; ++i) {
    auto* box = new GraphItemBox(static_cast<int>(i), outline_->items[i], input.widths[i]);
    box->setPos(layout.x[i], layout.y[i]);
    addItem(box);
    boxes_.push_back(box);
    top_.emplace_back(layout.x[i] + input.widths[i] / 2, layout.y[i]);
    bottom_.emplace_back(layout.x[i] + input.widths[i] / 2, layout.y[i] + kNodeHeight);
  }
  QPainterPath all;
  for (auto [from, to] : outline_->edges) {
    // Edges laid out reversed (a cycle between scopes) still leave the
    // upper box at its bottom.
    if (layout.y[from] <= layout.y[to]) {
      all.addPath(edgePath(bottom_[from], top_[to]));
    } else {
      all.addPath(edgePath(bottom_[to], top_[from]));
    }
  }
  const bool dark = isDarkPalette(palette());
  edges_ = addPath(all, QPen(dark ? QColor(0xb4, 0xb4, 0xb4) : QColor(0x70, 0x70, 0x70), 1.2));
  edges_->setZValue(-2);
  QPen highlight(palette().color(QPalette::Highlight), 2.5);
  highlighted_ = addPath(QPainterPath(), highlight);
  highlighted_->setZValue(-1);
  setSceneRect(QRectF(-40, -40, layout.width + 80, layout.height + 80));
}

GraphItemBox* GraphScene::box(int index) const {
  return index >= 0 && index < static_cast<int>(boxes_.size()) ? boxes_[index] : nullptr;
}

int GraphScene::selectedIndex() const {
  for (QGraphicsItem* item : selectedItems()) {
    if (auto* found = dynamic_cast<GraphItemBox*>(item)) return found->index();
  }
  return -1;
}

void GraphScene::selectItem(int index) {
  clearSelection();
  if (GraphItemBox* found = box(index)) found->setSelected(true);
}

void GraphScene::setMatches(const std::vector<int>& indices) {
  for (GraphItemBox* b : boxes_) b->setMatched(false);
  for (int index : indices) {
    if (GraphItemBox* found = box(index)) found->setMatched(true);
  }
}

void GraphScene::highlightEdgesOf(int index) {
  if (highlighted_ == nullptr) return;
  QPainterPath path;
  if (index >= 0 && outline_) {
    for (auto [from, to] : outline_->edges) {
      if (from != index && to != index) continue;
      const bool down = boxes_[from]->y() <= boxes_[to]->y();
      path.addPath(down ? edgePath(bottom_[from], top_[to]) : edgePath(bottom_[to], top_[from]));
    }
  }
  highlighted_->setPath(path);
}

}  // namespace lazyscope::gui
