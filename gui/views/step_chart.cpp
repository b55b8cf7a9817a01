#include "views/step_chart.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>

#include "util/format.h"

namespace lazyscope::gui {

StepChart::StepChart(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("stepChart"));
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::Base);
}

void StepChart::setSeries(std::vector<Series> series) {
  series_ = std::move(series);
  std::vector<double> all;
  xMax_ = 1;
  for (const Series &s : series_) {
    all.insert(all.end(), s.ms.begin(), s.ms.end());
    if (!s.steps.empty()) xMax_ = std::max(xMax_, s.steps.back());
  }
  yMax_ = 1;
  if (!all.empty()) {
    std::sort(all.begin(), all.end());
    const double p98 = all[static_cast<size_t>(static_cast<double>(all.size() - 1) * 0.98)];
    yMax_ = niceAxis(std::max(p98 * 1.25, 1e-3), 4).top;  // round labels
  }
  update();
}

std::vector<StepChart::LegendEntry> StepChart::legend() const {
  const QFontMetricsF metrics(font());
  const double left = 8;
  const double right = width() - 8.0;
  const double rowHeight = metrics.height() + 4;
  std::vector<LegendEntry> entries;
  double x = left;
  double y = 4;
  for (const Series &s : series_) {
    if (s.ms.empty()) continue;
    QString text = tr("%1 (%2 steps)").arg(s.name).arg(s.ms.size());
    // A label alone wider than a row is elided; otherwise it starts a new
    // row when it does not fit on this one.
    const double room = std::max(0.0, right - left - 16);
    if (metrics.horizontalAdvance(text) > room) text = metrics.elidedText(text, Qt::ElideMiddle, room);
    const double entryWidth = 16 + metrics.horizontalAdvance(text);
    if (x > left && x + entryWidth > right) {
      x = left;
      y += rowHeight;
    }
    LegendEntry entry;
    entry.swatch = QRectF(x, y + 1, 12, metrics.height() - 2);
    entry.label = QRectF(x + 16, y, metrics.horizontalAdvance(text), metrics.height());
    entry.text = text;
    entries.push_back(entry);
    x += entryWidth + 18;
  }
  return entries;
}

QRectF StepChart::plotRect() const {
  const QFontMetrics metrics(font());
  double top = metrics.height() + 10;
  for (const LegendEntry &entry : legend()) top = std::max(top, entry.label.bottom() + 8);
  return QRectF(rect()).adjusted(metrics.horizontalAdvance(QStringLiteral("000.0 ms")) + 12, top, -12,
                                 -metrics.height() - 12);
}

void StepChart::paintEvent(QPaintEvent *) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  const QFontMetrics metrics(font());
  const QRectF plot = plotRect();
  const QColor text = palette().color(QPalette::Text);
  QColor grid = palette().color(QPalette::Mid);
  grid.setAlpha(120);

  // Axes: y ticks at round values up to the (round) top; x at the first and
  // last step.
  painter.setPen(grid);
  const double interval = niceAxis(yMax_, 4).interval;
  for (double value = 0.0; value <= yMax_ * (1 + 1e-9); value += interval) {
    const double y = plot.bottom() - plot.height() * value / yMax_;
    painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    painter.setPen(text);
    painter.drawText(QRectF(0, y - metrics.height() / 2.0, plot.left() - 6, metrics.height()),
                     Qt::AlignRight | Qt::AlignVCenter, formatStepTime(value));
    painter.setPen(grid);
  }
  painter.setPen(text);
  painter.drawText(QRectF(plot.left(), plot.bottom() + 4, plot.width(), metrics.height()), Qt::AlignLeft, tr("step 0"));
  painter.drawText(QRectF(plot.left(), plot.bottom() + 4, plot.width(), metrics.height()), Qt::AlignRight,
                   tr("step %1").arg(xMax_, 0, 'f', 0));
  if (series_.empty() || std::all_of(series_.begin(), series_.end(), [](const Series &s) { return s.ms.empty(); })) {
    painter.drawText(plot, Qt::AlignCenter, tr("No steps recorded."));
    return;
  }

  // Legend on top, in as many rows as the width needs.
  const std::vector<LegendEntry> entries = legend();
  size_t entry = 0;
  for (const Series &s : series_) {
    if (s.ms.empty()) continue;
    const LegendEntry &e = entries[entry++];
    painter.fillRect(e.swatch, s.color);
    painter.setPen(text);
    painter.drawText(e.label, Qt::AlignLeft | Qt::AlignVCenter, e.text);
  }

  painter.setClipRect(plot.adjusted(-2, -2, 2, 2));
  for (const Series &s : series_) {
    QPainterPath path;
    for (size_t i = 0; i < s.ms.size(); ++i) {
      const QPointF p(plot.left() + plot.width() * s.steps[i] / std::max(xMax_, 1.0),
                      plot.bottom() - plot.height() * std::min(s.ms[i], yMax_) / yMax_);
      if (i == 0) {
        path.moveTo(p);
      } else {
        path.lineTo(p);
      }
    }
    painter.setPen(QPen(s.color, 1.8));
    painter.setBrush(Qt::NoBrush);
    painter.drawPath(path);
  }
}

}  // namespace lazyscope::gui
