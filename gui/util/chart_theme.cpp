#include "util/chart_theme.h"

#include <QAbstractAxis>
#include <QChart>
#include <QLegend>
#include <QPalette>

namespace lazyscope::gui {

void applyChartPalette(QChart* chart, const QPalette& pal) {
  chart->setBackgroundBrush(pal.color(QPalette::Base));
  chart->setPlotAreaBackgroundVisible(false);
  chart->setTitleBrush(pal.color(QPalette::Text));
  chart->legend()->setLabelColor(pal.color(QPalette::Text));
  QColor grid = pal.color(QPalette::Text);
  grid.setAlphaF(0.15f);
  for (QAbstractAxis* axis : chart->axes()) {
    axis->setLabelsColor(pal.color(QPalette::Text));
    axis->setTitleBrush(pal.color(QPalette::Text));
    axis->setGridLineColor(grid);
    axis->setLinePenColor(pal.color(QPalette::Mid));
  }
}

}  // namespace lazyscope::gui
