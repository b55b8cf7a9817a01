// The step timeline: one stacked bar per step (trace, compile, execute,
// collective wait, transfer, host wait, CPU fallback; as
// storage/analysis/step_times.h defines them), with rows of markers above it
// for compiles, fallbacks and syncs. Zoom and pan with the wheel, a drag or
// the keyboard (+/- or W/S zoom, arrows or A/D pan, Home/End, F fits, Esc
// clears the selection); hover shows a step's breakdown; a click selects a
// step.
//
// A run of several replicas (threads or process ranks) draws one lane per
// replica, stacked, on one step axis and one time scale: step n of every
// lane sits in the same column, so a straggler (tall compute, little
// collective wait) and the replicas waiting for it (tall collective wait)
// show at a glance. The markers' rows hold every lane's markers; a lane's
// tooltip lists its own.
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

// One replica's row of bars.
struct TimelineLane {
  QString name;                     // "rank 1"; empty for a run of one replica
  pb::StepSeries steps;             // in step order
  std::vector<StepMarker> markers;  // in step order
};

class TimelineWidget : public QWidget {
  Q_OBJECT

 public:
  // The parts of a step, bottom to top.
  // Collective is the part of execute spent in collectives (waiting for the
  // other replicas, exchanging), drawn apart from the rest of execute.
  enum Part { Trace, Compile, Execute, Collective, Transfer, HostWait, Fallback, NUM_PARTS };

  explicit TimelineWidget(QWidget* parent = nullptr);
  ~TimelineWidget() override;

  // Shows `steps` and `markers` (in step order) as one lane, fitted,
  // nothing selected.
  void setData(pb::StepSeries steps, std::vector<StepMarker> markers);
  // Shows one lane per replica, fitted, nothing selected.
  void setLanes(std::vector<TimelineLane> lanes);
  void clear();

  const TimelineGeometry& geometryModel() const { return geometry_; }
  // Columns: the step numbers of every lane together.
  int64_t stepCount() const { return static_cast<int64_t>(positions_.size()); }
  int laneCount() const { return static_cast<int>(lanes_.size()); }
  int64_t laneStepCount(int lane) const;
  QString laneName(int lane) const;
  // The lane drawn at widget y `y` (the nearest one above or below the
  // lanes), or -1 when there are none.
  int laneAt(double y) const;
  // The lanes' rectangles in widget coordinates.
  QRect laneRect(int lane) const;
  // First and last step number in view.
  int64_t firstVisibleStep() const;
  int64_t lastVisibleStep() const;

  // The selected step number, or -1, and the lane it was selected in.
  int64_t selectedStep() const;
  int selectedLane() const { return selectedLane_; }
  // Selects step number `step` (and scrolls to it); false when no such step.
  bool selectStep(int64_t step, int lane = 0);
  // The step number drawn at widget x `x` in `lane`, or -1 (outside the
  // bars, or no step of that lane there).
  int64_t stepAt(double x, int lane = 0) const;
  // The tooltip text of step number `step` of `lane` ("" when the lane has
  // no such step).
  QString describeStep(int64_t step, int lane = 0) const;

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
  // Column (index into positions_) of lane `lane`'s bar at plot x
  // (aggregated: the lane's slowest step in the pixel column), or -1.
  int64_t columnAt(double plotX, int lane) const;
  int64_t columnOfStep(int64_t step) const;
  // Index into lane `lane`'s series of column `column`, or -1.
  int indexIn(int lane, int64_t column) const;
  double partMs(Part part, int lane, int64_t column) const;
  double totalMs(int lane, int64_t column) const;
  void setSelected(int64_t column, int lane);
  void afterViewChange();

  void paintLegend(QPainter& painter) const;
  void paintAxes(QPainter& painter, double maxMs) const;
  void paintBars(QPainter& painter, int lane, double maxMs) const;
  void paintBar(QPainter& painter, const QRect& area, int lane, int64_t column, double x0, double x1,
                double maxMs) const;
  void paintMarkers(QPainter& painter) const;

  std::vector<TimelineLane> lanes_;
  std::vector<int64_t> positions_;             // the step number of each column, ascending
  std::vector<std::vector<int>> laneIndexes_;  // per lane: column -> index into its series, or -1
  std::vector<const StepMarker*> markers_;     // every lane's, for the marker rows
  TimelineGeometry geometry_;
  int64_t selected_ = -1;  // column
  int selectedLane_ = 0;
  QPoint pressPos_;
  bool dragging_ = false;
  double dragLastX_ = 0.0;
};

}  // namespace lazyscope::gui
