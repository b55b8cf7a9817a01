// The step timeline: one stacked bar per step (trace, compile, execute,
// transfer, host wait, CPU fallback; as storage/analysis/step_times.h defines them), with lanes of markers above it for compiles,
// fallbacks and syncs. Zoom and pan with the wheel, a drag or the keyboard
// (+/- or W/S zoom, arrows or A/D pan, Home/End, F fits, Esc clears the
// selection); hover shows a step's breakdown; a click selects a step.
//
// Painting is proportional to the pixels, not the steps: zoomed out past one
// step per pixel, each pixel column draws the slowest step it covers, so a
// spike is never averaged away and 100k steps paint as fast as 100.
#pragma once

#include <QWidget>
#include <array>
#include <cstdint>
#include <vector>

#include "lazyscope/history.pb.h"
#include "loaders/run_profile_loader.h"
#include "widgets/timeline_geometry.h"

namespace lazyscope::gui {

class TimelineWidget : public QWidget {
  Q_OBJECT

 public:
  // The parts of a step, bottom to top.
  enum Part { Trace, Compile, Execute, Transfer, HostWait, Fallback, NUM_PARTS };

  explicit TimelineWidget(QWidget* parent = nullptr);
  ~TimelineWidget() override;

  // Shows `steps` and `markers` (in step order), fitted, nothing selected.
  void setData(pb::StepSeries steps, std::vector<StepMarker> markers);
  void clear();

  const TimelineGeometry& geometryModel() const { return geometry_; }
  int64_t stepCount() const { return static_cast<int64_t>(steps_.steps_size()); }
  // First and last step number in view.
  int64_t firstVisibleStep() const;
  int64_t lastVisibleStep() const;

  // The selected step number, or -1.
  int64_t selectedStep() const;
  // Selects step number `step` (and scrolls to it); false when no such step.
  bool selectStep(int64_t step);
  // The step number drawn at widget x `x`, or -1 (outside the bars).
  int64_t stepAt(double x) const;
  // The tooltip text of step number `step`.
  QString describeStep(int64_t step) const;

  void zoomIn();
  void zoomOut();
  void fit();

  static QString partName(Part part);
  // Colours chosen for `palette` (lighter on dark backgrounds).
  static QColor partColor(Part part, const QPalette& palette);
  static QColor markerColor(StepMarker::Kind kind, const QPalette& palette);

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void stepSelected(qint64 step);  // -1 when the selection is cleared
  void visibleRangeChanged(qint64 firstStep, qint64 lastStep);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  bool event(QEvent* event) override;

 private:
  QRect plotRect() const;
  QRect markerRect() const;
  // Index of the bar at plot x (aggregated: the slowest step in the column).
  int64_t indexAt(double plotX) const;
  int64_t indexOfStep(int64_t step) const;
  double partMs(Part part, int64_t index) const;
  double totalMs(int64_t index) const;
  void setSelectedIndex(int64_t index);
  void afterViewChange();

  void paintLegend(QPainter& painter) const;
  void paintAxes(QPainter& painter, const QRect& plot, double maxMs) const;
  void paintBars(QPainter& painter, const QRect& plot, double maxMs) const;
  void paintBar(QPainter& painter, const QRect& plot, int64_t index, double x0, double x1,
                double maxMs) const;
  void paintMarkers(QPainter& painter) const;

  pb::StepSeries steps_;
  std::vector<StepMarker> markers_;
  TimelineGeometry geometry_;
  int64_t selected_ = -1;  // index into steps_
  QPoint pressPos_;
  bool dragging_ = false;
  double dragLastX_ = 0.0;
};

}  // namespace lazyscope::gui
