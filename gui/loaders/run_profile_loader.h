// Reads what the Timeline, Charts, Fallbacks, Metrics and Output views show
// about one run (per-step series, step markers, scalars, fallback groups,
// output, metrics) off the GUI thread. Kept apart from RunDetailLoader so the
// overview appears as soon as its small read is done, and so that a slow
// read of a 100k-step run never holds it back.
//
// Like RunDetailLoader, a newer load supersedes an older one (generation
// counter): only the run selected last is delivered.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <string>
#include <vector>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {
class HistoryReader;
}

namespace lazyscope::gui {

class BackgroundJob;

// Something that happened in a step, drawn above the step's bar
// (storage::timeline_markers, for the widget).
struct StepMarker {
  enum class Kind { Compile, Fallback, Sync };
  int64_t step = 0;
  Kind kind = Kind::Compile;
  QString text;  // one line for the tooltip: what, why, where
  int32_t replica = 0;
};

struct RunProfile {
  int64_t runId = 0;
  pb::RunInfo run;                  // with the script text and traceback
  pb::StepSeries steps;             // replica 0, in step order
  std::vector<StepMarker> markers;  // replica 0, in step order
  // Every replica's steps and markers (replicaSteps[r].replica() == r), for
  // the Timeline's replica choice; steps/markers are replica 0's.
  std::vector<pb::StepSeries> replicaSteps;
  std::vector<std::vector<StepMarker>> replicaMarkers;
  std::vector<pb::ScalarSeries> scalars;          // by name
  std::vector<pb::FallbackGroup> fallbackGroups;  // most expensive first
  pb::RunOutput output;
  // The run's metrics report: the engine's last snapshot of each metric
  // (metric_snapshots), or, for a run recorded without snapshots, the report
  // derived from its events (metricsDerived).
  std::vector<pb::MetricValue> metrics;
  bool metricsDerived = true;
  int64_t metricsStep = 0;  // the step of the newest snapshot (not derived)
};

class RunProfileLoader : public QObject {
  Q_OBJECT

 public:
  explicit RunProfileLoader(QObject* parent = nullptr);
  ~RunProfileLoader() override;

  // Starts reading run `runId` of `path`; supersedes any load under way.
  void load(const QString& path, int64_t runId);
  // Same for several runs at once (chart overlays); delivered by loadedMany.
  void loadMany(const QString& path, const std::vector<int64_t>& runIds);
  void cancel();
  bool isLoading() const;

  // Reads one run synchronously (the pool thread's work). Throws
  // storage::HistoryError; nullopt-like: runId 0 when there is no such run.
  static RunProfile read(const storage::HistoryReader& reader, int64_t runId);

 signals:
  void loaded(const lazyscope::gui::RunProfile& profile);
  void loadedMany(const std::vector<lazyscope::gui::RunProfile>& profiles);
  void failed(qint64 runId, const QString& message);
  // The user pressed Cancel in the status bar: nothing is delivered.
  void cancelled(qint64 runId);

 private:
  struct LoadResult;

  static LoadResult readAll(const std::string& path, std::vector<int64_t> runIds);
  void start(const QString& path, std::vector<int64_t> runIds, bool many);
  void deliver(bool many, const LoadResult& result);

  BackgroundJob* job_;
  int64_t runId_ = 0;  // the first run of the load under way or last made
};

}  // namespace lazyscope::gui
