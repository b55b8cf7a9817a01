// The Charts tab: one quantity over steps (a logged scalar such as the loss,
// or a step timing) for one run, or overlaid for several runs. Drag a
// rectangle to zoom in, Reset (or a right click) to zoom out; export as PNG
// or SVG.
//
// Long runs are thinned to two points (minimum and maximum) per bucket of
// about a pixel, so a spike stays visible and 100k steps draw quickly.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "lazyscope/history.pb.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QPointF;
class QStackedLayout;

namespace lazyscope::gui {

struct RunProfile;

class ChartsView : public QWidget {
  Q_OBJECT

 public:
  // Most points one series draws; more are thinned (see above).
  static constexpr int kMaxPoints = 4000;

  explicit ChartsView(QWidget* parent = nullptr);
  ~ChartsView() override;

  void setProfile(const RunProfile& profile);
  // Overlays several runs (in the order given), one line each.
  void setRuns(const std::vector<RunProfile>& runs);
  void clear();

  // Names offered in the quantity box: the scalars any run logged, then the
  // step timings ("step time", "trace", "compile", ...).
  QStringList quantities() const;
  QString quantity() const;
  // False when `name` is not offered.
  bool setQuantity(const QString& name);
  int runCount() const { return static_cast<int>(runs_.size()); }

  QChart* chart() const;
  QChartView* chartView() const { return view_; }
  void resetZoom();
  // Saves the chart as .png or .svg; returns an error message or "".
  QString exportImage(const QString& path);

  // Thins `points` (in x order) to at most about `maxPoints`, keeping each
  // bucket's minimum and maximum in x order. Pure, for tests.
  static std::vector<QPointF> thin(const std::vector<QPointF>& points, int maxPoints);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  struct Run {
    int64_t id = 0;
    QString name;
    pb::StepSeries steps;
    std::vector<pb::ScalarSeries> scalars;
  };

  void fillQuantities();
  void plot();
  void applyTheme();
  std::vector<QPointF> pointsOf(const Run& run, const QString& quantity) const;

  std::vector<Run> runs_;
  QString chosen_;  // the quantity the user picked last, kept across runs
  QComboBox* quantity_;
  QChartView* view_;
  QLabel* empty_;
  QStackedLayout* stack_ = nullptr;  // the chart, or empty_ when there is nothing to plot
};

}  // namespace lazyscope::gui
