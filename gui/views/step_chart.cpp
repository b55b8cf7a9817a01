#include "views/step_chart.h"

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
    if (!s.steps.empty())
      xMax_ = std::max(xMax_, s.steps.back());
  }
  yMax_ = 1;
  if (!all.empty()) {
    std::sort(all.begin(), all.end());
    const double p98 =
        all[static_cast<size_t>(static_cast<double>(all.size() - 1) * 0.98)];
    yMax_ = niceAxis(std::max(p98 * 1.25, 1e-3), 4).top;  // round labels
  }
  update();
}

void StepChart::paintEvent(QPaintEvent *) {
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  const QFontMetrics metrics(font());
  const QRectF plot = QRectF(rect()).adjusted(
      metrics.horizontalAdvance(QStringLiteral("000.0 ms")) + 12,
      metrics.height() + 10, -12, -metrics.height() - 12);
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
    painter.drawText(QRectF(0, y - metrics.height() / 2.0, plot.left() - 6,
                            metrics.height()),
                     Qt::AlignRight | Qt::AlignVCenter,
                     formatStepTime(value));
    painter.setPen(grid);
  }
  painter.setPen(text);
  painter.drawText(
      QRectF(plot.left(), plot.bottom() + 4, plot.width(), metrics.height()),
      Qt::AlignLeft, tr("step 0"));
  painter.drawText(
      QRectF(plot.left(), plot.bottom() + 4, plot.width(), metrics.height()),
      Qt::AlignRight, tr("step %1").arg(xMax_, 0, 'f', 0));
  if (series_.empty() ||
      std::all_of(series_.begin(), series_.end(),
                  [](const Series &s) { return s.ms.empty(); })) {
    painter.drawText(plot, Qt::AlignCenter, tr("No steps recorded."));
    return;
  }

  // Legend on top.
  double x = plot.left();
  for (const Series &s : series_) {
    painter.fillRect(QRectF(x, 4, 12, metrics.height() - 2), s.color);
    painter.setPen(text);
    const QString label = tr("%1 (%2 steps)").arg(s.name).arg(s.ms.size());
    painter.drawText(QPointF(x + 16, 3 + metrics.ascent()), label);
    x += 16 + metrics.horizontalAdvance(label) + 18;
  }

  painter.setClipRect(plot.adjusted(-2, -2, 2, 2));
  for (const Series &s : series_) {
    QPainterPath path;
    for (size_t i = 0; i < s.ms.size(); ++i) {
      const QPointF p(
          plot.left() + plot.width() * s.steps[i] / std::max(xMax_, 1.0),
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

} // namespace lazyscope::gui
