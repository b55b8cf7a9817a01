// Two runs side by side, in a window of its own: the summary deltas (B − A,
// coloured by better or worse) above both runs' step times overlaid, and
// tabs for the graphs (only in A, only in B, both, with per-graph compile
// and execute deltas), the recompile reasons and the CPU fallbacks whose
// counts differ. Read in the background by a CompareLoader.
#pragma once

#include <QWidget>
#include <cstdint>

class QAbstractItemModel;
class QLabel;
class QTabWidget;
class QTableView;

namespace lazyscope::gui {

class CompareLoader;
class DeltaTableModel;
class MetricDeltaModel;
class StepChart;
struct Comparison;

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget *parent = nullptr);
  ~CompareView() override;

  // Reads runs `runA` and `runB` of `path` and shows them.
  void compare(const QString &path, int64_t runA, int64_t runB);

  bool isLoading() const;
  MetricDeltaModel *metrics() const { return metrics_; }
  DeltaTableModel *graphs() const { return graphs_; }
  DeltaTableModel *reasons() const { return reasons_; }
  DeltaTableModel *fallbacks() const { return fallbacks_; }
  StepChart *chart() const { return chart_; }
  QString statusText() const;

 protected:
  void changeEvent(QEvent *event) override;

 private:
  void showComparison(const Comparison &comparison);
  QTableView *table(QAbstractItemModel *model, const QString &name);

  CompareLoader *loader_;
  MetricDeltaModel *metrics_;
  DeltaTableModel *graphs_;
  DeltaTableModel *reasons_;
  DeltaTableModel *fallbacks_;
  QLabel *title_ = nullptr;
  QLabel *status_ = nullptr;
  StepChart *chart_ = nullptr;
  QTabWidget *tabs_ = nullptr;
};

}  // namespace lazyscope::gui
