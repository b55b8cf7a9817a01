#include "loaders/run_profile_loader.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <memory>

#include "analysis/run_metrics.h"
#include "analysis/step_times.h"
#include "db/history_file.h"
#include "loaders/background_job.h"
#include "query/history_reader.h"

namespace lazyscope::gui {

namespace {

StepMarker::Kind kindOf(storage::TimelineMarker::Kind kind) {
  switch (kind) {
    case storage::TimelineMarker::Kind::Fallback: return StepMarker::Kind::Fallback;
    case storage::TimelineMarker::Kind::Sync: return StepMarker::Kind::Sync;
    default: return StepMarker::Kind::Compile;
  }
}

std::vector<pb::ScalarSeries> scalarsOf(const pb::RunTimeline& timeline) {
  std::map<std::string, pb::ScalarSeries> byName;  // sorted by name
  for (const pb::Event& event : timeline.events()) {
    if (event.replica() != 0 || !event.has_scalar()) continue;
    pb::ScalarSeries& series = byName[event.scalar().name()];
    series.set_name(event.scalar().name());
    series.add_steps(event.scalar().step());
    series.add_values(event.scalar().value());
  }
  std::vector<pb::ScalarSeries> out;
  out.reserve(byName.size());
  for (auto& [name, series] : byName) out.push_back(std::move(series));
  return out;
}

}  // namespace

RunProfile RunProfileLoader::read(const storage::HistoryReader& reader, int64_t runId) {
  RunProfile profile;
  std::optional<pb::RunSummary> summary = reader.run_summary(runId);
  std::optional<pb::RunTimeline> timeline = reader.timeline(runId);
  if (!summary || !timeline) return profile;  // runId 0: no such run
  profile.runId = runId;
  profile.run = std::move(*summary->mutable_run());
  // The breakdown and markers storage/analysis computes for the CLI and the
  // diagnosis too: one definition of host wait, fallback and step.
  const std::vector<storage::StepTimes> times = storage::step_times(*timeline);
  for (const auto& [replica, count] : storage::steps_per_replica(times)) {
    if (replica < 0) continue;
    profile.replicaSteps.resize(std::max<size_t>(profile.replicaSteps.size(), static_cast<size_t>(replica) + 1));
    profile.replicaSteps[static_cast<size_t>(replica)] = storage::step_series(times, replica);
  }
  if (profile.replicaSteps.empty()) profile.replicaSteps.emplace_back();
  for (size_t r = 0; r < profile.replicaSteps.size(); ++r) profile.replicaSteps[r].set_replica(static_cast<int32_t>(r));
  profile.replicaMarkers.resize(profile.replicaSteps.size());
  for (const storage::TimelineMarker& marker : storage::timeline_markers(*timeline)) {
    if (marker.replica < 0 || static_cast<size_t>(marker.replica) >= profile.replicaMarkers.size()) continue;
    profile.replicaMarkers[static_cast<size_t>(marker.replica)].push_back(
        {marker.step, kindOf(marker.kind), QString::fromStdString(marker.text), marker.replica});
  }
  profile.steps = profile.replicaSteps.front();
  profile.markers = profile.replicaMarkers.front();
  profile.scalars = scalarsOf(*timeline);
  profile.fallbackGroups = reader.fallback_groups(runId);
  profile.output = reader.output(runId);
  // The engine's own report, as the runner snapshotted it, is what a person
  // compares with `lazyscope show` and the engine's metrics_report(); runs
  // recorded before snapshots existed get the report their events imply.
  pb::MetricsReport report = reader.final_metrics(runId);
  profile.metricsDerived = report.metrics().empty();
  if (profile.metricsDerived) {
    profile.metrics = storage::derive_metrics(*timeline);
  } else {
    for (pb::MetricValue& metric : *report.mutable_metrics()) {
      if (!storage::is_unused_cause_counter(metric)) profile.metrics.push_back(std::move(metric));
    }
    profile.metricsStep = report.step();
  }
  return profile;
}

struct RunProfileLoader::LoadResult {
  std::shared_ptr<std::vector<RunProfile>> profiles;  // shared: a QFuture result must be copyable
  int64_t runId = 0;                                  // the first run asked for, for the error message
  QString error;                                      // empty on success
};

RunProfileLoader::LoadResult RunProfileLoader::readAll(const std::string& path, std::vector<int64_t> runIds) {
  LoadResult result;
  result.runId = runIds.empty() ? 0 : runIds.front();
  try {
    const storage::HistoryReader reader(path);
    auto profiles = std::make_shared<std::vector<RunProfile>>();
    for (int64_t runId : runIds) {
      RunProfile profile = read(reader, runId);
      if (profile.runId == 0) {
        result.runId = runId;
        result.error = tr("Run %1 is no longer in the history.").arg(runId);
        return result;
      }
      profiles->push_back(std::move(profile));
    }
    result.profiles = std::move(profiles);
  } catch (const storage::HistoryError& e) {
    result.error = QString::fromUtf8(e.what());
  } catch (const std::exception& e) {
    result.error = tr("Could not read run %1: %2").arg(result.runId).arg(QString::fromUtf8(e.what()));
  }
  return result;
}

RunProfileLoader::RunProfileLoader(QObject* parent) : QObject(parent), job_(new BackgroundJob(this)) {
  connect(job_, &BackgroundJob::cancelled, this, [this] { emit cancelled(runId_); });
}

RunProfileLoader::~RunProfileLoader() = default;

bool RunProfileLoader::isLoading() const { return job_->isRunning(); }

void RunProfileLoader::load(const QString& path, int64_t runId) { start(path, {runId}, false); }

void RunProfileLoader::loadMany(const QString& path, const std::vector<int64_t>& runIds) { start(path, runIds, true); }

void RunProfileLoader::start(const QString& path, std::vector<int64_t> runIds, bool many) {
  runId_ = runIds.empty() ? 0 : runIds.front();
  const QString label = many ? tr("Reading the steps of %1 runs…").arg(runIds.size())
                             : tr("Reading the timeline of run %1…").arg(runId_);
  job_->run(
      label, [path = path.toStdString(), runIds = std::move(runIds)] { return readAll(path, runIds); },
      [this, many](const LoadResult& result) { deliver(many, result); });
}

void RunProfileLoader::deliver(bool many, const LoadResult& result) {
  if (!result.profiles) {
    emit failed(result.runId, result.error);
  } else if (many) {
    emit loadedMany(*result.profiles);
  } else if (!result.profiles->empty()) {
    emit loaded(result.profiles->front());
  }
}

void RunProfileLoader::cancel() { job_->cancel(); }

}  // namespace lazyscope::gui
