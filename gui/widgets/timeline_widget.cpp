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

constexpr int kMarkerRowHeight = 9;  // one row of markers per kind
constexpr int kMarkerRows = 3;
constexpr int kRightMargin = 8;
constexpr double kZoomStep = 1.25;    // one wheel notch or key press
constexpr double kKeyPanShare = 0.1;  // an arrow key pans a tenth of the view
constexpr int kDragThreshold = 4;     // pixels before a press becomes a pan
constexpr int kLaneGap = 6;           // between the lanes of several replicas
constexpr int kMinLaneHeight = 28;    // a lane still shows its bars' parts

int rowOf(StepMarker::Kind kind) { return static_cast<int>(kind); }

}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("timeline"));
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

TimelineWidget::~TimelineWidget() = default;

QSize TimelineWidget::sizeHint() const {
  const int lanes = std::max(laneCount(), 1);
  return {800, lanes == 1 ? 260 : 140 + lanes * (2 * kMinLaneHeight + kLaneGap)};
}

QSize TimelineWidget::minimumSizeHint() const {
  const int lanes = std::max(laneCount(), 1);
  return {240, lanes == 1 ? 140 : 100 + lanes * (kMinLaneHeight + kLaneGap)};
}

QString TimelineWidget::partName(Part part) {
  switch (part) {
    case Trace: return tr("trace");
    case Compile: return tr("compile");
    case Execute: return tr("execute");
    case Collective: return tr("collective wait");
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
    case Collective: return dark ? QColor(0x5b, 0xc8, 0xe8) : QColor(0x0e, 0x7c, 0x9e);
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
  std::vector<TimelineLane> lanes(1);
  lanes[0].steps = std::move(steps);
  lanes[0].markers = std::move(markers);
  setLanes(std::move(lanes));
}

void TimelineWidget::setLanes(std::vector<TimelineLane> lanes) {
  lanes_ = std::move(lanes);
  // Columns are the union of the lanes' step numbers, so that step n of
  // every lane lines up; a lane without step n leaves its column empty.
  positions_.clear();
  for (const TimelineLane& lane : lanes_)
    positions_.insert(positions_.end(), lane.steps.steps().begin(), lane.steps.steps().end());
  std::sort(positions_.begin(), positions_.end());
  positions_.erase(std::unique(positions_.begin(), positions_.end()), positions_.end());
  laneIndexes_.assign(lanes_.size(), std::vector<int>(positions_.size(), -1));
  markers_.clear();
  for (size_t l = 0; l < lanes_.size(); ++l) {
    const auto& steps = lanes_[l].steps.steps();
    size_t column = 0;
    for (int i = 0; i < steps.size(); ++i) {  // both ascending: one merge pass
      while (column < positions_.size() && positions_[column] < steps[i]) ++column;
      if (column < positions_.size() && positions_[column] == steps[i]) laneIndexes_[l][column] = i;
    }
    for (const StepMarker& marker : lanes_[l].markers) markers_.push_back(&marker);
  }
  selected_ = -1;
  selectedLane_ = 0;
  updateGeometry();  // the minimum height follows the number of lanes
  geometry_.setWidth(plotRect().width());
  geometry_.setCount(stepCount());
  afterViewChange();
}

void TimelineWidget::clear() { setLanes({}); }

int64_t TimelineWidget::laneStepCount(int lane) const {
  return lane >= 0 && lane < laneCount() ? lanes_[static_cast<size_t>(lane)].steps.steps_size() : 0;
}

QString TimelineWidget::laneName(int lane) const {
  return lane >= 0 && lane < laneCount() ? lanes_[static_cast<size_t>(lane)].name : QString();
}

int64_t TimelineWidget::firstVisibleStep() const {
  if (positions_.empty()) return -1;
  const auto column = std::clamp<int64_t>(static_cast<int64_t>(std::floor(geometry_.first())), 0, stepCount() - 1);
  return positions_[static_cast<size_t>(column)];
}

int64_t TimelineWidget::lastVisibleStep() const {
  if (positions_.empty()) return -1;
  const auto column = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(geometry_.last())) - 1, 0, stepCount() - 1);
  return positions_[static_cast<size_t>(column)];
}

int64_t TimelineWidget::selectedStep() const { return selected_ < 0 ? -1 : positions_[static_cast<size_t>(selected_)]; }

int64_t TimelineWidget::columnOfStep(int64_t step) const {
  const auto found = std::lower_bound(positions_.begin(), positions_.end(), step);
  return found != positions_.end() && *found == step ? found - positions_.begin() : -1;
}

int TimelineWidget::indexIn(int lane, int64_t column) const {
  if (lane < 0 || lane >= laneCount() || column < 0 || column >= stepCount()) return -1;
  return laneIndexes_[static_cast<size_t>(lane)][static_cast<size_t>(column)];
}

bool TimelineWidget::selectStep(int64_t step, int lane) {
  const int64_t column = columnOfStep(step);
  if (column < 0) return false;
  geometry_.ensureVisible(static_cast<double>(column));
  setSelected(column, std::clamp(lane, 0, std::max(laneCount() - 1, 0)));
  afterViewChange();
  return true;
}

void TimelineWidget::setSelected(int64_t column, int lane) {
  if (column == selected_ && lane == selectedLane_) return;
  selected_ = column;
  selectedLane_ = lane;
  update();
  emit stepSelected(selectedStep());
}

double TimelineWidget::partMs(Part part, int lane, int64_t column) const {
  const int i = indexIn(lane, column);
  if (i < 0) return 0.0;
  const pb::StepSeries& s = lanes_[static_cast<size_t>(lane)].steps;
  const auto at = [i](const google::protobuf::RepeatedField<double>& values) {
    return i < values.size() ? values[i] : 0.0;
  };
  switch (part) {
    case Trace: return at(s.trace_ms());
    case Compile: return at(s.compile_ms());
    // Collective time is inside execute: drawn as its own segment, so the
    // rest of execute is what is left.
    case Execute: return std::max(0.0, at(s.execute_ms()) - at(s.collective_ms()));
    case Collective: return at(s.collective_ms());
    case Transfer: return at(s.transfer_ms());
    case HostWait: return at(s.host_wait_ms());
    case Fallback: return at(s.fallback_ms());
    default: return 0.0;
  }
}

double TimelineWidget::totalMs(int lane, int64_t column) const {
  const int i = indexIn(lane, column);
  if (i < 0) return 0.0;
  double parts = 0.0;
  for (int part = 0; part < NUM_PARTS; ++part) parts += partMs(static_cast<Part>(part), lane, column);
  const pb::StepSeries& s = lanes_[static_cast<size_t>(lane)].steps;
  return std::max(parts, i < s.step_ms_size() ? s.step_ms(i) : 0.0);
}

QRect TimelineWidget::markerRect() const {
  const int legend = fontMetrics().height() + 8;
  return {plotRect().left(), legend, plotRect().width(), kMarkerRows * kMarkerRowHeight + 2};
}

QRect TimelineWidget::plotRect() const {
  const QFontMetrics metrics = fontMetrics();
  const int left = metrics.horizontalAdvance(QStringLiteral("000.0 ms")) + 10;
  const int top = metrics.height() + 8 + kMarkerRows * kMarkerRowHeight + 6;
  const int bottom = metrics.height() + 6;
  return {left, top, std::max(width() - left - kRightMargin, 1), std::max(height() - top - bottom, 1)};
}

QRect TimelineWidget::laneRect(int lane) const {
  const QRect plot = plotRect();
  const int lanes = std::max(laneCount(), 1);
  if (lanes == 1) return plot;
  const int height = std::max((plot.height() - (lanes - 1) * kLaneGap) / lanes, 1);
  return {plot.left(), plot.top() + lane * (height + kLaneGap), plot.width(), height};
}

int TimelineWidget::laneAt(double y) const {
  if (lanes_.empty()) return -1;
  for (int lane = 0; lane < laneCount(); ++lane) {
    if (y < laneRect(lane).bottom() + kLaneGap / 2 + 1) return lane;
  }
  return laneCount() - 1;
}

int64_t TimelineWidget::columnAt(double plotX, int lane) const {
  const int64_t count = stepCount();
  if (count == 0 || lane < 0 || lane >= laneCount() || plotX < 0.0 || plotX >= geometry_.width()) return -1;
  const auto from = static_cast<int64_t>(std::floor(geometry_.toPosition(plotX)));
  if (geometry_.stepsPerPixel() <= 1.0) return from >= 0 && from < count && indexIn(lane, from) >= 0 ? from : -1;
  // Zoomed out: the bar at this pixel is the lane's slowest step of its column.
  const auto to = std::min(
      count, std::max(from + 1, static_cast<int64_t>(std::floor(geometry_.toPosition(std::floor(plotX) + 1.0)))));
  int64_t best = -1;
  for (int64_t c = std::max<int64_t>(from, 0); c < to; ++c) {
    if (indexIn(lane, c) >= 0 && (best < 0 || totalMs(lane, c) > totalMs(lane, best))) best = c;
  }
  return best;
}

int64_t TimelineWidget::stepAt(double x, int lane) const {
  const int64_t column = columnAt(x - plotRect().left(), lane);
  return column < 0 ? -1 : positions_[static_cast<size_t>(column)];
}

QString TimelineWidget::describeStep(int64_t step, int lane) const {
  const int64_t column = columnOfStep(step);
  const int i = indexIn(lane, column);
  if (i < 0) return {};
  const TimelineLane& row = lanes_[static_cast<size_t>(lane)];
  QStringList lines;
  const QString title = row.name.isEmpty() ? tr("Step %1").arg(step) : tr("%1, step %2").arg(row.name).arg(step);
  lines << QStringLiteral("<b>%1</b>: %2")
               .arg(title.toHtmlEscaped(), formatStepTime(i < row.steps.step_ms_size() ? row.steps.step_ms(i) : 0.0));
  for (int part = 0; part < NUM_PARTS; ++part) {
    // A run without collectives has no collective part to explain.
    if (part == Collective && std::none_of(row.steps.collective_ms().begin(), row.steps.collective_ms().end(),
                                           [](double ms) { return ms > 0.0; })) {
      continue;
    }
    const double value = partMs(static_cast<Part>(part), lane, column);
    lines << QStringLiteral("<span style='color:%1'>■</span> %2: %3")
                 .arg(partColor(static_cast<Part>(part), palette()).name(), partName(static_cast<Part>(part)),
                      formatStepTime(value));
  }
  const auto range = std::equal_range(row.markers.begin(), row.markers.end(), StepMarker{step, {}, {}},
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
  const int lane = std::max(laneAt(event->position().y()), 0);
  setSelected(columnAt(event->position().x() - plotRect().left(), lane), lane);
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
    case Qt::Key_Escape: setSelected(-1, selectedLane_); break;
    default: QWidget::keyPressEvent(event); return;
  }
  event->accept();
}

bool TimelineWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const int lane = laneAt(help->pos().y());
    const int64_t step = stepAt(help->pos().x(), lane);
    if (step >= 0) {
      QToolTip::showText(help->globalPos(), describeStep(step, lane), this);
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
  if (positions_.empty()) {
    painter.setPen(palette().color(QPalette::PlaceholderText));
    painter.drawText(rect(), Qt::AlignCenter, tr("No steps recorded for this run."));
    return;
  }
  // The vertical scale follows the steps in view, so that zooming into a
  // calm stretch after a slow first step shows its detail; one scale for
  // every lane, so that lanes compare by height.
  double maxMs = 0.0;
  const auto from = std::max<int64_t>(static_cast<int64_t>(std::floor(geometry_.first())), 0);
  const auto to = std::min<int64_t>(static_cast<int64_t>(std::ceil(geometry_.last())), stepCount());
  for (int lane = 0; lane < laneCount(); ++lane) {
    for (int64_t c = from; c < to; ++c) maxMs = std::max(maxMs, totalMs(lane, c));
  }
  // A round top, so that the time axis's labels are round numbers.
  maxMs = niceAxis(maxMs, 3).top;

  paintLegend(painter);
  paintAxes(painter, maxMs);
  for (int lane = 0; lane < laneCount(); ++lane) {
    painter.save();
    painter.setClipRect(laneRect(lane).adjusted(0, -1, 1, 1));
    paintBars(painter, lane, maxMs);
    painter.restore();
  }
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

void TimelineWidget::paintAxes(QPainter& painter, double maxMs) const {
  const QFontMetrics metrics = fontMetrics();
  QColor grid = palette().color(QPalette::Text);
  grid.setAlphaF(0.12f);
  const QColor text = palette().color(QPalette::PlaceholderText);
  const QRect plot = plotRect();
  // Time axis of each lane: round values from 0 to the top of the scale (a
  // round number). Several lanes label only their top, where it fits beside
  // the lane's name.
  const bool several = laneCount() > 1;
  const double interval = niceAxis(maxMs, 3).interval;
  for (int lane = 0; lane < std::max(laneCount(), 1); ++lane) {
    const QRect area = laneRect(lane);
    const bool roomForTop = area.height() >= 2 * metrics.height() + 2;
    for (double value = 0.0; value <= maxMs * (1 + 1e-9); value += interval) {
      const int y = area.bottom() - static_cast<int>(std::lround(value / maxMs * area.height()));
      painter.setPen(grid);
      painter.drawLine(area.left(), y, area.right(), y);
      const bool top = value + interval > maxMs * (1 + 1e-9);
      if (several && !(top && roomForTop)) continue;
      painter.setPen(text);
      const int labelY = several ? y : y - metrics.height() / 2;
      const QRect label(0, labelY, area.left() - 6, metrics.height());
      painter.drawText(label, Qt::AlignRight | (several ? Qt::AlignTop : Qt::AlignVCenter),
                       value == 0.0 ? QStringLiteral("0") : formatStepTime(value));
    }
    if (several) {
      QFont bold = painter.font();
      bold.setBold(true);
      painter.save();
      painter.setFont(bold);
      painter.setPen(palette().color(QPalette::Text));
      const QRect name(0, area.bottom() - metrics.height() + 1, area.left() - 6, metrics.height());
      painter.drawText(name, Qt::AlignRight | Qt::AlignBottom, lanes_[static_cast<size_t>(lane)].name);
      painter.restore();
    }
  }
  // Step axis: round step numbers, about one label per 90 pixels.
  const double stepInterval = std::max(1.0, niceInterval(geometry_.span(), std::max(1, plot.width() / 90)));
  const double start = std::ceil(geometry_.first() / stepInterval) * stepInterval;
  painter.setPen(text);
  for (double position = start; position <= geometry_.last(); position += stepInterval) {
    const auto column = static_cast<int64_t>(position);
    if (column >= stepCount()) break;
    const int x = plot.left() + static_cast<int>(std::lround(geometry_.toX(position + 0.5)));
    painter.drawLine(x, plot.bottom() + 1, x, plot.bottom() + 4);
    const QString label = QString::number(positions_[static_cast<size_t>(column)]);
    const int w = metrics.horizontalAdvance(label);
    painter.drawText(std::clamp(x - w / 2, plot.left() - w / 2, width() - w - 2), plot.bottom() + 4 + metrics.ascent(),
                     label);
  }
}

void TimelineWidget::paintBar(QPainter& painter, const QRect& area, int lane, int64_t column, double x0, double x1,
                              double maxMs) const {
  double bottom = area.bottom() + 1;
  const double scale = area.height() / maxMs;
  for (int part = 0; part < NUM_PARTS; ++part) {
    const double h = partMs(static_cast<Part>(part), lane, column) * scale;
    if (h <= 0.0) continue;
    painter.fillRect(QRectF(area.left() + x0, bottom - h, x1 - x0, h), partColor(static_cast<Part>(part), palette()));
    bottom -= h;
  }
}

void TimelineWidget::paintBars(QPainter& painter, int lane, double maxMs) const {
  const QRect area = laneRect(lane);
  const int64_t count = stepCount();
  if (geometry_.stepsPerPixel() <= 1.0) {
    const auto from = std::max<int64_t>(static_cast<int64_t>(std::floor(geometry_.first())), 0);
    const auto to = std::min<int64_t>(static_cast<int64_t>(std::ceil(geometry_.last())), count);
    for (int64_t c = from; c < to; ++c) {
      const double x0 = geometry_.toX(static_cast<double>(c));
      const double x1 = geometry_.toX(static_cast<double>(c + 1));
      // A gap between bars once they are wide enough to show one.
      const double gap = x1 - x0 >= 6.0 ? 1.0 : 0.0;
      paintBar(painter, area, lane, c, x0 + gap, x1 - gap, maxMs);
    }
  } else {
    for (int px = 0; px < area.width(); ++px) {
      const int64_t column = columnAt(px, lane);
      if (column >= 0) paintBar(painter, area, lane, column, px, px + 1, maxMs);
    }
  }
  if (selected_ >= 0) {
    // Around and above the selected bar, never over it: its breakdown stays
    // readable however narrow it is. The lane it was selected in is marked
    // more strongly.
    const double x0 = area.left() + geometry_.toX(static_cast<double>(selected_));
    const double x1 = std::max(area.left() + geometry_.toX(static_cast<double>(selected_ + 1)), x0 + 1.0);
    const double barTop = area.bottom() + 1 - totalMs(lane, selected_) * area.height() / maxMs;
    QColor band = palette().color(QPalette::Highlight);
    band.setAlphaF(lane == selectedLane_ ? 0.25f : 0.12f);
    painter.fillRect(QRectF(x0, area.top(), x1 - x0, std::max(0.0, barTop - area.top())), band);
    painter.setPen(QPen(palette().color(QPalette::Highlight), lane == selectedLane_ ? 1.5 : 0.75));
    painter.drawLine(QPointF(x0 - 2, area.top()), QPointF(x0 - 2, area.bottom()));
    painter.drawLine(QPointF(x1 + 2, area.top()), QPointF(x1 + 2, area.bottom()));
    painter.drawLine(QPointF(x0 - 2, area.top()), QPointF(x1 + 2, area.top()));
  }
}

void TimelineWidget::paintMarkers(QPainter& painter) const {
  const QRect rows = markerRect();
  painter.setPen(Qt::NoPen);
  // Several markers in one pixel column of a row draw once (several lanes'
  // markers of one step among them).
  std::array<int, kMarkerRows> lastX;
  lastX.fill(-1);
  for (const StepMarker* marker : markers_) {
    const int64_t column = columnOfStep(marker->step);
    if (column < 0) continue;
    const double center = geometry_.toX(static_cast<double>(column) + 0.5);
    if (center < 0.0 || center >= geometry_.width()) continue;
    const int x = rows.left() + static_cast<int>(center);
    const int row = rowOf(marker->kind);
    if (x == lastX[static_cast<size_t>(row)]) continue;
    lastX[static_cast<size_t>(row)] = x;
    const int top = rows.top() + row * kMarkerRowHeight;
    painter.setBrush(markerColor(marker->kind, palette()));
    const QPolygon triangle({QPoint(x - 4, top), QPoint(x + 4, top), QPoint(x, top + kMarkerRowHeight - 2)});
    painter.drawPolygon(triangle);
  }
}

}  // namespace lazyscope::gui
