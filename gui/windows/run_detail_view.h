// The detail area for the run selected in the run table: tabs (Overview,
// Recompilations) filled from a RunDetailLoader, one background read per
// selection; a newer selection drops the result of an older one.
#pragma once

#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <vector>

#include "lazyscope/history.pb.h"

class QLabel;
class QTabWidget;

namespace lazyscope::gui {

class GraphTab;
class KernelsView;
class OverviewTab;
class RecompilationsTab;
class RunDetailLoader;
struct RunDetail;
// Timeline, Charts, Fallbacks, Metrics and Output (gui2).
class ChartsView;
class FallbacksView;
class MetricsView;
class OutputView;
class RunProfileLoader;
class TimelineView;
struct RunProfile;

class RunDetailView : public QWidget {
  Q_OBJECT

 public:
  explicit RunDetailView(QWidget* parent = nullptr);
  ~RunDetailView() override;

  // Reads run `runId` of the history `path` in the background.
  void showRun(const QString& path, int64_t runId);
  // No run selected.
  void clear();

  bool isLoading() const;
  // The run shown, or 0.
  int64_t runId() const;
  // The run last asked for by showRun(), shown or not (its read may have been
  // cancelled), or 0 after clear(): the run a reload shows again.
  int64_t wantedRunId() const { return wantedRunId_; }
  QTabWidget* tabs() const { return tabs_; }
  OverviewTab* overview() const { return overview_; }
  RecompilationsTab* recompilations() const { return recompilations_; }
  GraphTab* graphs() const { return graphs_; }
  KernelsView* kernels() const { return kernels_; }

  // Timeline, Charts, Fallbacks, Metrics and Output: filled by a second
  // background read (RunProfileLoader), so the overview never waits for it.
  TimelineView* timeline() const { return timeline_; }
  ChartsView* charts() const { return charts_; }
  FallbacksView* fallbacks() const { return fallbacks_; }
  MetricsView* metrics() const { return metrics_; }
  OutputView* output() const { return output_; }
  // Overlays runs `runIds` of `path` in the Charts tab when there are two or
  // more (several runs selected); else the Charts tab shows the run shown.
  void overlayRuns(const QString& path, const std::vector<int64_t>& runIds);
  bool isOverlaying() const { return overlayIds_.size() > 1; }
  bool isProfileLoading() const;
  // Shows the tab named `name` ("overview", "timeline", "charts", ...: the
  // tab's title without its shortcut marker, case-insensitive); false when
  // there is no such tab.
  bool showTab(const QString& name);
  // "overview", "recompilations", ...: the names showTab() and --tab take.
  QStringList tabNames() const;

 signals:
  // The detail of a run is on screen.
  void runShown(qint64 runId);

 private:
  void onLoaded(const RunDetail& detail);
  void onFailed(qint64 runId, const QString& message);
  void onCancelled(qint64 runId);

  RunDetailLoader* loader_;
  std::unique_ptr<RunDetail> detail_;
  int64_t wantedRunId_ = 0;
  QLabel* status_;
  QTabWidget* tabs_;
  OverviewTab* overview_;
  RecompilationsTab* recompilations_;

  // Timeline, Charts, Fallbacks, Metrics and Output (gui2).
  void addProfileTabs();
  void onProfileLoaded(const RunProfile& profile);
  void selectCompileOfStep(qint64 step);
  void showEvidence(const pb::Finding& finding);
  RunProfileLoader* profileLoader_ = nullptr;
  RunProfileLoader* overlayLoader_ = nullptr;
  std::unique_ptr<RunProfile> profile_;  // of the run shown, for the charts when an overlay ends
  std::vector<int64_t> overlayIds_;
  TimelineView* timeline_ = nullptr;
  ChartsView* charts_ = nullptr;
  FallbacksView* fallbacks_ = nullptr;
  MetricsView* metrics_ = nullptr;
  OutputView* output_ = nullptr;

  GraphTab* graphs_ = nullptr;
  KernelsView* kernels_ = nullptr;
};

}  // namespace lazyscope::gui
