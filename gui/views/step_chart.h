// Step times of several runs overlaid on one chart (step on x, ms on y),
// painted directly: a few thousand points per run need no chart library.
// The y axis ends a little above the 98th percentile so that the first,
// compiling step does not flatten every other one; clipped points are drawn
// on the top edge.
#pragma once

#include <QColor>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <vector>

namespace lazyscope::gui {

class StepChart : public QWidget {
  Q_OBJECT

 public:
  struct Series {
    QString name;
    QColor color;
    std::vector<double> steps;
    std::vector<double> ms;
  };

  explicit StepChart(QWidget *parent = nullptr);

  void setSeries(std::vector<Series> series);
  const std::vector<Series> &series() const { return series_; }
  double yMax() const { return yMax_; }

  // Where each series' legend entry is drawn (its swatch and label), for
  // the current width: entries wrap onto more rows rather than run off the
  // right edge, and a label wider than the chart is elided.
  struct LegendEntry {
    QRectF swatch;
    QRectF label;
    QString text;
  };
  std::vector<LegendEntry> legend() const;
  // The plotting area, below the legend's rows.
  QRectF plotRect() const;

  QSize sizeHint() const override { return {480, 220}; }
  QSize minimumSizeHint() const override { return {200, 120}; }

 protected:
  void paintEvent(QPaintEvent *event) override;

 private:
  std::vector<Series> series_;
  double xMax_ = 1;
  double yMax_ = 1;
};

}  // namespace lazyscope::gui
