// The Kernels tab: a run's profiled kernels by total time (a tree: each
// kernel's IR nodes with their source lines under it), achieved GFLOP/s and
// GB/s against the machine's measured peaks, and a roofline chart (log-log:
// arithmetic intensity against GFLOP/s, the bandwidth and compute roofs, one
// point per kernel; the selected kernel is highlighted). A run without a
// profile shows why instead. Reads its own data, by path and run id, off the
// GUI thread.
#pragma once

#include <QWidget>
#include <cstdint>

#include "lazyscope/history.pb.h"

class QChartView;
class QLabel;
class QScatterSeries;
class QSortFilterProxyModel;
class QStackedLayout;
class QTreeView;

namespace lazyscope::gui {

class BackgroundJob;
class KernelModel;

// The base of a log axis over [lo, hi] with at most `maxLabels` labels (one
// per power of the base): 10, else 100, 1000... A narrow roofline over six
// decades drew "1e-…", "0.0…" at every power of 10, each label elided.
int logAxisBase(double lo, double hi, int maxLabels);

class KernelsView : public QWidget {
  Q_OBJECT

 public:
  explicit KernelsView(QWidget* parent = nullptr);
  ~KernelsView() override;

  // Reads the kernel report of run `runId` of `path` in the background.
  void setRun(const QString& path, int64_t runId);
  // Shows `report` at once (what setRun delivers).
  void setReport(const pb::KernelReport& report);
  void clear();
  bool isLoading() const;

  KernelModel* model() const { return model_; }
  QTreeView* tree() const { return tree_; }
  QChartView* roofline() const { return chart_; }
  // The line above the table: the machine's peaks, or why there is nothing.
  QString caption() const;
  // The message shown instead of the table, or "" when the table shows.
  QString emptyText() const;
  // Points on the chart: kernels with FLOPs and a measured time.
  int plottedKernels() const;
  // Selects kernel `row` of the report (its order: by total time).
  bool selectKernel(int row);

 signals:
  void kernelCountChanged(int count);

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void plot();
  void highlight(int kernel);
  void applyTheme();
  void showMessage(const QString& text);

  BackgroundJob* job_;
  KernelModel* model_;
  QSortFilterProxyModel* proxy_;
  QTreeView* tree_;
  QChartView* chart_;
  QScatterSeries* selected_ = nullptr;
  QLabel* caption_;
  QLabel* empty_;
  QStackedLayout* stack_;
  int plotted_ = 0;
};

}  // namespace lazyscope::gui
