#include "widgets/timeline_widget.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "util/format.h"
#include "util/run_status.h"

namespace lazyscope::gui {

namespace {

constexpr int kLaneHeight = 9;  // one lane of markers per kind
constexpr int kLanes = 3;
constexpr int kRightMargin = 8;
constexpr double kZoomStep = 1.25;     // one wheel notch or key press
constexpr double kKeyPanShare = 0.1;   // an arrow key pans a tenth of the view
constexpr int kDragThreshold = 4;      // pixels before a press becomes a pan

int laneOf(StepMarker::Kind kind) { return static_cast<int>(kind); }

}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("timeline"));
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

TimelineWidget::~TimelineWidget() = default;

QSize TimelineWidget::sizeHint() const { return {800, 260}; }

QSize TimelineWidget::minimumSizeHint() const { return {240, 140}; }

QString TimelineWidget::partName(Part part) {
  switch (part) {
    case Trace: return tr("trace");
    case Compile: return tr("compile");
    case Execute: return tr("execute");
    case Transfer: return tr("transfer");
    case HostWait: return tr("host wait");
    case Fallback: return tr("CPU fallback");
    default: return {};
  }
}

QColor TimelineWidget::partColor(Part part, const QPalette& palette) {
  const bool dark = isDarkPalette(palette);
  switch (part) {
    case Trace: return dark ? QColor(0x77, 0x8c, 0xa8) : QColor(0x9a, 0xad, 0xc6);
    case Compile: return dark ? QColor(0xff, 0x6b, 0x6b) : QColor(0xd0, 0x2a, 0x2a);
    case Execute: return dark ? QColor(0x57, 0xd3, 0x8c) : QColor(0x26, 0xa2, 0x69);
    case Transfer: return dark ? QColor(0xc0, 0x80, 0xe0) : QColor(0x91, 0x41, 0xac);
    case HostWait: return dark ? QColor(0xf6, 0xc1, 0x43) : QColor(0xe5, 0xa5, 0x0a);
    case Fallback: return markerColor(StepMarker::Kind::Fallback, palette);
    default: return palette.color(QPalette::Text);
  }
}

QColor TimelineWidget::markerColor(StepMarker::Kind kind, const QPalette& palette) {
  const bool dark = isDarkPalette(palette);
  switch (kind) {
    case StepMarker::Kind::Compile: return partColor(Compile, palette);
    case StepMarker::Kind::Fallback: return dark ? QColor(0xff, 0x9e, 0x5e) : QColor(0xc6, 0x46, 0x00);
    case StepMarker::Kind::Sync: return dark ? QColor(0x62, 0xa0, 0xea) : QColor(0x1c, 0x71, 0xd8);
  }
  return palette.color(QPalette::Text);
}

void TimelineWidget::setData(pb::StepSeries steps, std::vector<StepMarker> markers) {
  steps_ = std::move(steps);
  markers_ = std::move(markers);
  selected_ = -1;
  geometry_.setWidth(plotRect().width());
  geometry_.setCount(steps_.steps_size());
  afterViewChange();
}

void TimelineWidget::clear() { setData({}, {}); }

int64_t TimelineWidget::firstVisibleStep() const {
  if (steps_.steps_size() == 0) return -1;
  const auto index = std::clamp<int64_t>(static_cast<int64_t>(std::floor(geometry_.first())), 0,
                                         steps_.steps_size() - 1);
  return steps_.steps(static_cast<int>(index));
}

int64_t TimelineWidget::lastVisibleStep() const {
  if (steps_.steps_size() == 0) return -1;
  const auto index = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(geometry_.last())) - 1, 0,
                                         steps_.steps_size() - 1);
  return steps_.steps(static_cast<int>(index));
}

int64_t TimelineWidget::selectedStep() const {
  return selected_ < 0 ? -1 : steps_.steps(static_cast<int>(selected_));
}

int64_t TimelineWidget::indexOfStep(int64_t step) const {
  // Steps are stored in step order: binary search.
  const auto begin = steps_.steps().begin();
  const auto end = steps_.steps().end();
  const auto found = std::lower_bound(begin, end, step);
  return found != end && *found == step ? found - begin : -1;
}

bool TimelineWidget::selectStep(int64_t step) {
  const int64_t index = indexOfStep(step);
  if (index < 0) return false;
  geometry_.ensureVisible(static_cast<double>(index));
  setSelectedIndex(index);
  afterViewChange();
  return true;
}

void TimelineWidget::setSelectedIndex(int64_t index) {
  if (index == selected_) return;
  selected_ = index;
  update();
  emit stepSelected(selectedStep());
}

double TimelineWidget::partMs(Part part, int64_t index) const {
  const int i = static_cast<int>(index);
  switch (part) {
    case Trace: return i < steps_.trace_ms_size() ? steps_.trace_ms(i) : 0.0;
    case Compile: return i < steps_.compile_ms_size() ? steps_.compile_ms(i) : 0.0;
    case Execute: return i < steps_.execute_ms_size() ? steps_.execute_ms(i) : 0.0;
    case Transfer: return i < steps_.transfer_ms_size() ? steps_.transfer_ms(i) : 0.0;
    case HostWait: return i < steps_.host_wait_ms_size() ? steps_.host_wait_ms(i) : 0.0;
    case Fallback: return i < steps_.fallback_ms_size() ? steps_.fallback_ms(i) : 0.0;
    default: return 0.0;
  }
}

double TimelineWidget::totalMs(int64_t index) const {
  double parts = 0.0;
  for (int part = 0; part < NUM_PARTS; ++part) parts += partMs(static_cast<Part>(part), index);
  const int i = static_cast<int>(index);
  return std::max(parts, i < steps_.step_ms_size() ? steps_.step_ms(i) : 0.0);
}

QRect TimelineWidget::markerRect() const {
  const int legend = fontMetrics().height() + 8;
  return {plotRect().left(), legend, plotRect().width(), kLanes * kLaneHeight + 2};
}

QRect TimelineWidget::plotRect() const {
  const QFontMetrics metrics = fontMetrics();
  const int left = metrics.horizontalAdvance(QStringLiteral("000.0 ms")) + 10;
  const int top = metrics.height() + 8 + kLanes * kLaneHeight + 6;
  const int bottom = metrics.height() + 6;
  return {left, top, std::max(width() - left - kRightMargin, 1), std::max(height() - top - bottom, 1)};
}

int64_t TimelineWidget::indexAt(double plotX) const {
  const int64_t count = steps_.steps_size();
  if (count == 0 || plotX < 0.0 || plotX >= geometry_.width()) return -1;
  const auto from = static_cast<int64_t>(std::floor(geometry_.toPosition(plotX)));
  if (geometry_.stepsPerPixel() <= 1.0) return from >= 0 && from < count ? from : -1;
  // Zoomed out: the bar at this pixel is the slowest step of its column.
  const auto to = std::min(count, std::max(from + 1, static_cast<int64_t>(std::floor(geometry_.toPosition(
                                                          std::floor(plotX) + 1.0)))));
  int64_t best = -1;
  for (int64_t i = std::max<int64_t>(from, 0); i < to; ++i) {
    if (best < 0 || totalMs(i) > totalMs(best)) best = i;
  }
  return best;
}

int64_t TimelineWidget::stepAt(double x) const {
  const int64_t index = indexAt(x - plotRect().left());
  return index < 0 ? -1 : steps_.steps(static_cast<int>(index));
}

QString TimelineWidget::describeStep(int64_t step) const {
  const int64_t index = indexOfStep(step);
  if (index < 0) return {};
  const int i = static_cast<int>(index);
  QStringList lines;
  lines << tr("<b>Step %1</b>: %2").arg(step).arg(formatStepTime(i < steps_.step_ms_size() ? steps_.step_ms(i) : 0.0));
  for (int part = 0; part < NUM_PARTS; ++part) {
    const double value = partMs(static_cast<Part>(part), index);
    lines << QStringLiteral("<span style='color:%1'>■</span> %2: %3")
                 .arg(partColor(static_cast<Part>(part), palette()).name(), partName(static_cast<Part>(part)),
                      formatStepTime(value));
  }
  const auto range = std::equal_range(markers_.begin(), markers_.end(), StepMarker{step, {}, {}},
                                      [](const StepMarker& a, const StepMarker& b) { return a.step < b.step; });
  constexpr int kMaxMarkerLines = 8;  // a step with hundreds of syncs must not fill the screen
  int shown = 0;
  for (auto it = range.first; it != range.second; ++it) {
    if (shown++ == kMaxMarkerLines) {
      lines << tr("… and %1 more").arg(std::distance(it, range.second));
      break;
    }
    lines << QStringLiteral("<span style='color:%1'>▼</span> %2")
                 .arg(markerColor(it->kind, palette()).name(), it->text.toHtmlEscaped());
  }
  return lines.join(QStringLiteral("<br>"));
}

void TimelineWidget::zoomIn() {
  geometry_.zoom(kZoomStep, geometry_.width() / 2.0);
  afterViewChange();
}

void TimelineWidget::zoomOut() {
  geometry_.zoom(1.0 / kZoomStep, geometry_.width() / 2.0);
  afterViewChange();
}

void TimelineWidget::fit() {
  geometry_.fit();
  afterViewChange();
}

void TimelineWidget::afterViewChange() {
  update();
  emit visibleRangeChanged(firstVisibleStep(), lastVisibleStep());
}

void TimelineWidget::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const bool wasFit = geometry_.isFit();
  geometry_.setWidth(plotRect().width());
  if (wasFit) geometry_.fit();
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
  const QPoint angle = event->angleDelta();
  const double plotX = event->position().x() - plotRect().left();
  if (angle.x() != 0 || (event->modifiers() & Qt::ShiftModifier)) {
    // Horizontal scrolling (touchpads, Shift+wheel) pans.
    const int delta = angle.x() != 0 ? angle.x() : angle.y();
    geometry_.pan(-delta / 120.0 * geometry_.width() * kKeyPanShare);
  } else {
    geometry_.zoom(std::pow(kZoomStep, angle.y() / 120.0), plotX);
  }
  afterViewChange();
  event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
  pressPos_ = event->position().toPoint();
  dragLastX_ = event->position().x();
  dragging_ = false;
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton)) return;
  if (!dragging_ && (event->position().toPoint() - pressPos_).manhattanLength() < kDragThreshold) return;
  dragging_ = true;
  setCursor(Qt::ClosedHandCursor);
  geometry_.pan(dragLastX_ - event->position().x());
  dragLastX_ = event->position().x();
  afterViewChange();
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QWidget::mouseReleaseEvent(event);
  unsetCursor();
  if (dragging_) {
    dragging_ = false;
    return;
  }
  const int64_t index = indexAt(event->position().x() - plotRect().left());
  setSelectedIndex(index);
}

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
    case Qt::Key_W: zoomIn(); break;
    case Qt::Key_Minus:
    case Qt::Key_S: zoomOut(); break;
    case Qt::Key_Left:
    case Qt::Key_A:
      geometry_.pan(-geometry_.width() * kKeyPanShare);
      afterViewChange();
      break;
    case Qt::Key_Right:
    case Qt::Key_D:
      geometry_.pan(geometry_.width() * kKeyPanShare);
      afterViewChange();
      break;
    case Qt::Key_Home:
      geometry_.toStart();
      afterViewChange();
      break;
    case Qt::Key_End:
      geometry_.toEnd();
      afterViewChange();
      break;
    case Qt::Key_F:
    case Qt::Key_0: fit(); break;
    case Qt::Key_Escape: setSelectedIndex(-1); break;
    default: QWidget::keyPressEvent(event); return;
  }
  event->accept();
}

bool TimelineWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int64_t step = stepAt(help->pos().x());
    if (step >= 0) {
      QToolTip::showText(help->globalPos(), describeStep(step), this);
    } else {
      QToolTip::hideText();
      event->ignore();
    }
    return true;
  }
  return QWidget::event(event);
}

void TimelineWidget::paintEvent(QPaintEvent* /*event*/) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().color(QPalette::Base));
  const QRect plot = plotRect();
  if (steps_.steps_size() == 0) {
    painter.setPen(palette().color(QPalette::PlaceholderText));
    painter.drawText(rect(), Qt::AlignCenter, tr("No steps recorded for this run."));
    return;
  }
  // The vertical scale follows the steps in view, so that zooming into a
  // calm stretch after a slow first step shows its detail.
  double maxMs = 0.0;
  const auto from = std::max<int64_t>(static_cast<int64_t>(std::floor(geometry_.first())), 0);
  const auto to = std::min<int64_t>(static_cast<int64_t>(std::ceil(geometry_.last())), steps_.steps_size());
  for (int64_t i = from; i < to; ++i) maxMs = std::max(maxMs, totalMs(i));
  // A round top, so that the time axis's labels are round numbers.
  maxMs = niceAxis(maxMs, 3).top;

  paintLegend(painter);
  paintAxes(painter, plot, maxMs);
  painter.save();
  painter.setClipRect(plot.adjusted(0, -1, 1, 1));
  paintBars(painter, plot, maxMs);
  painter.restore();
  paintMarkers(painter);
  if (hasFocus()) {
    QPen pen(palette().color(QPalette::Highlight));
    pen.setWidth(1);
    painter.setPen(pen);
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(rect().adjusted(0, 0, -1, -1));
  }
}

void TimelineWidget::paintLegend(QPainter& painter) const {
  const QFontMetrics metrics = fontMetrics();
  const int box = metrics.ascent() - 2;
  int x = plotRect().left();
  const int baseline = metrics.ascent() + 4;
  auto entry = [&](const QColor& color, const QString& text, bool triangle) {
    painter.setPen(Qt::NoPen);
    painter.setBrush(color);
    if (triangle) {
      const QPolygon shape({QPoint(x, baseline - box), QPoint(x + box, baseline - box), QPoint(x + box / 2, baseline)});
      painter.drawPolygon(shape);
    } else {
      painter.drawRect(x, baseline - box, box, box);
    }
    painter.setPen(palette().color(QPalette::Text));
    painter.drawText(x + box + 4, baseline, text);
    x += box + 4 + metrics.horizontalAdvance(text) + 14;
  };
  for (int part = 0; part < NUM_PARTS; ++part) {
    entry(partColor(static_cast<Part>(part), palette()), partName(static_cast<Part>(part)), false);
  }
  x += 10;
  entry(markerColor(StepMarker::Kind::Compile, palette()), tr("compile"), true);
  entry(markerColor(StepMarker::Kind::Fallback, palette()), tr("fallback"), true);
  entry(markerColor(StepMarker::Kind::Sync, palette()), tr("sync"), true);
}

void TimelineWidget::paintAxes(QPainter& painter, const QRect& plot, double maxMs) const {
  const QFontMetrics metrics = fontMetrics();
  QColor grid = palette().color(QPalette::Text);
  grid.setAlphaF(0.12f);
  const QColor text = palette().color(QPalette::PlaceholderText);
  // Time axis: round values from 0 to the top of the scale (a round number).
  const double interval = niceAxis(maxMs, 3).interval;
  for (double value = 0.0; value <= maxMs * (1 + 1e-9); value += interval) {
    const int y = plot.bottom() - static_cast<int>(std::lround(value / maxMs * plot.height()));
    painter.setPen(grid);
    painter.drawLine(plot.left(), y, plot.right(), y);
    painter.setPen(text);
    const QRect label(0, y - metrics.height() / 2, plot.left() - 6, metrics.height());
    painter.drawText(label, Qt::AlignRight | Qt::AlignVCenter,
                     value == 0.0 ? QStringLiteral("0") : formatStepTime(value));
  }
  // Step axis: round step numbers, about one label per 90 pixels.
  const double stepInterval = std::max(1.0, niceInterval(geometry_.span(), std::max(1, plot.width() / 90)));
  const double start = std::ceil(geometry_.first() / stepInterval) * stepInterval;
  painter.setPen(text);
  for (double position = start; position <= geometry_.last(); position += stepInterval) {
    const auto index = static_cast<int>(position);
    if (index >= steps_.steps_size()) break;
    const int x = plot.left() + static_cast<int>(std::lround(geometry_.toX(position + 0.5)));
    painter.drawLine(x, plot.bottom() + 1, x, plot.bottom() + 4);
    const QString label = QString::number(steps_.steps(index));
    const int w = metrics.horizontalAdvance(label);
    painter.drawText(std::clamp(x - w / 2, plot.left() - w / 2, width() - w - 2),
                     plot.bottom() + 4 + metrics.ascent(), label);
  }
}

void TimelineWidget::paintBar(QPainter& painter, const QRect& plot, int64_t index, double x0, double x1,
                              double maxMs) const {
  double bottom = plot.bottom() + 1;
  const double scale = plot.height() / maxMs;
  for (int part = 0; part < NUM_PARTS; ++part) {
    const double h = partMs(static_cast<Part>(part), index) * scale;
    if (h <= 0.0) continue;
    painter.fillRect(QRectF(plot.left() + x0, bottom - h, x1 - x0, h), partColor(static_cast<Part>(part), palette()));
    bottom -= h;
  }
}

void TimelineWidget::paintBars(QPainter& painter, const QRect& plot, double maxMs) const {
  const int64_t count = steps_.steps_size();
  if (geometry_.stepsPerPixel() <= 1.0) {
    const auto from = std::max<int64_t>(static_cast<int64_t>(std::floor(geometry_.first())), 0);
    const auto to = std::min<int64_t>(static_cast<int64_t>(std::ceil(geometry_.last())), count);
    for (int64_t i = from; i < to; ++i) {
      const double x0 = geometry_.toX(static_cast<double>(i));
      const double x1 = geometry_.toX(static_cast<double>(i + 1));
      // A gap between bars once they are wide enough to show one.
      const double gap = x1 - x0 >= 6.0 ? 1.0 : 0.0;
      paintBar(painter, plot, i, x0 + gap, x1 - gap, maxMs);
    }
  } else {
    for (int px = 0; px < plot.width(); ++px) {
      const int64_t index = indexAt(px);
      if (index >= 0) paintBar(painter, plot, index, px, px + 1, maxMs);
    }
  }
  if (selected_ >= 0) {
    // Around and above the selected bar, never over it: its breakdown stays
    // readable however narrow it is.
    const double x0 = plot.left() + geometry_.toX(static_cast<double>(selected_));
    const double x1 = std::max(plot.left() + geometry_.toX(static_cast<double>(selected_ + 1)), x0 + 1.0);
    const double barTop = plot.bottom() + 1 - totalMs(selected_) * plot.height() / maxMs;
    QColor band = palette().color(QPalette::Highlight);
    band.setAlphaF(0.25f);
    painter.fillRect(QRectF(x0, plot.top(), x1 - x0, std::max(0.0, barTop - plot.top())), band);
    painter.setPen(QPen(palette().color(QPalette::Highlight), 1.5));
    painter.drawLine(QPointF(x0 - 2, plot.top()), QPointF(x0 - 2, plot.bottom()));
    painter.drawLine(QPointF(x1 + 2, plot.top()), QPointF(x1 + 2, plot.bottom()));
    painter.drawLine(QPointF(x0 - 2, plot.top()), QPointF(x1 + 2, plot.top()));
  }
}

void TimelineWidget::paintMarkers(QPainter& painter) const {
  const QRect lanes = markerRect();
  painter.setPen(Qt::NoPen);
  // Several markers in one pixel column of a lane draw once.
  std::array<int, kLanes> lastX;
  lastX.fill(-1);
  for (const StepMarker& marker : markers_) {
    const int64_t index = indexOfStep(marker.step);
    if (index < 0) continue;
    const double center = geometry_.toX(static_cast<double>(index) + 0.5);
    if (center < 0.0 || center >= geometry_.width()) continue;
    const int x = lanes.left() + static_cast<int>(center);
    const int lane = laneOf(marker.kind);
    if (x == lastX[static_cast<size_t>(lane)]) continue;
    lastX[static_cast<size_t>(lane)] = x;
    const int top = lanes.top() + lane * kLaneHeight;
    painter.setBrush(markerColor(marker.kind, palette()));
    const QPolygon triangle({QPoint(x - 4, top), QPoint(x + 4, top), QPoint(x, top + kLaneHeight - 2)});
    painter.drawPolygon(triangle);
  }
}

}  // namespace lazyscope::gui
