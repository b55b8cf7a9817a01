#include "loaders/run_profile_loader.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <memory>

#include "db/history_file.h"
#include "loaders/background_job.h"
#include "models/recompilation_model.h"
#include "query/history_reader.h"

namespace lazyscope::gui {

namespace {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

pb::MetricValue counter(const std::string& name, int64_t value) {
  pb::MetricValue metric;
  metric.set_name(name);
  metric.set_is_counter(true);
  metric.set_value(value);
  return metric;
}

// Nearest-rank percentile of sorted `values`, as the engine's report does.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

pb::MetricValue timed(const std::string& name, std::vector<double> values) {
  std::sort(values.begin(), values.end());
  pb::MetricValue metric;
  metric.set_name(name);
  metric.set_count(static_cast<int64_t>(values.size()));
  double total = 0.0;
  for (double v : values) total += v;
  metric.set_total_ms(total);
  metric.set_p50_ms(percentile(values, 0.50));
  metric.set_p90_ms(percentile(values, 0.90));
  metric.set_p99_ms(percentile(values, 0.99));
  return metric;
}

QString fallbackReasonText(pb::FallbackReason reason) {
  switch (reason) {
    case pb::FALLBACK_REASON_NOT_LOWERED: return RunProfileLoader::tr("not lowered");
    case pb::FALLBACK_REASON_DATA_DEPENDENT: return RunProfileLoader::tr("data-dependent shape");
    case pb::FALLBACK_REASON_FORCED: return RunProfileLoader::tr("forced");
    default: return {};
  }
}

QString where(const pb::SourceLocation& source) {
  const QString text = sourceText(source);
  return text.isEmpty() ? QString() : RunProfileLoader::tr(" at %1").arg(text);
}

// One marker per event that is worth seeing on the timeline: every uncached
// compile, every fallback, and every execution forced by something other
// than mark_step (a sync the script did not ask for as a step boundary).
std::vector<StepMarker> markersOf(const pb::RunTimeline& timeline) {
  std::vector<StepMarker> markers;
  for (const pb::Event& event : timeline.events()) {
    if (event.replica() != 0) continue;  // the timeline shows replica 0's steps
    if (event.has_compile()) {
      const pb::CompileEvent& compile = event.compile();
      markers.push_back({compile.step(), StepMarker::Kind::Compile,
                         RunProfileLoader::tr("compile (%1, %2)%3")
                             .arg(reasonKindText(compile.reason_kind()))
                             .arg(ms(compile.duration_ns()), 0, 'f', 3)
                             .arg(where(compile.source()))});
    } else if (event.has_fallback()) {
      const pb::FallbackEvent& fallback = event.fallback();
      const QString reason = fallbackReasonText(fallback.reason());
      markers.push_back({fallback.step(), StepMarker::Kind::Fallback,
                         RunProfileLoader::tr("fallback %1%2%3")
                             .arg(QString::fromStdString(fallback.op()),
                                  reason.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(reason),
                                  where(fallback.source()))});
    } else if (event.has_execute() && event.execute().cause() != pb::SYNC_CAUSE_MARK_STEP &&
               event.execute().cause() != pb::SYNC_CAUSE_UNSPECIFIED) {
      const pb::ExecuteEvent& execute = event.execute();
      markers.push_back({execute.step(), StepMarker::Kind::Sync,
                         RunProfileLoader::tr("sync: %1%2")
                             .arg(syncCauseText(execute.cause()), where(execute.source()))});
    }
  }
  std::stable_sort(markers.begin(), markers.end(),
                   [](const StepMarker& a, const StepMarker& b) { return a.step < b.step; });
  return markers;
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

QString syncCauseText(pb::SyncCause cause) {
  switch (cause) {
    case pb::SYNC_CAUSE_MARK_STEP: return RunProfileLoader::tr("mark_step");
    case pb::SYNC_CAUSE_ITEM: return RunProfileLoader::tr("item()");
    case pb::SYNC_CAUSE_TO_HOST: return RunProfileLoader::tr("copy to host");
    case pb::SYNC_CAUSE_CONTROL_FLOW: return RunProfileLoader::tr("control flow");
    case pb::SYNC_CAUSE_SAVE: return RunProfileLoader::tr("save");
    case pb::SYNC_CAUSE_FALLBACK: return RunProfileLoader::tr("fallback operands");
    case pb::SYNC_CAUSE_GRAPH_LIMIT: return RunProfileLoader::tr("graph node limit");
    default: return RunProfileLoader::tr("unknown");
  }
}

std::vector<pb::MetricValue> deriveMetrics(const pb::RunTimeline& timeline) {
  int64_t markSteps = 0, uncached = 0, cached = 0, executions = 0, toBytes = 0, fromBytes = 0;
  std::map<std::string, int64_t> syncs;
  std::vector<double> stepMs, compileMs, executeMs, toMs, fromMs, fallbackMs;
  for (const pb::Event& event : timeline.events()) {
    switch (event.kind_case()) {
      case pb::Event::kStep:
        if (event.replica() == 0) stepMs.push_back(ms(event.step().end_ns() - event.step().start_ns()));
        break;
      case pb::Event::kCompile:
        ++uncached;
        compileMs.push_back(ms(event.compile().duration_ns()));
        break;
      case pb::Event::kExecute: {
        const pb::ExecuteEvent& execute = event.execute();
        ++executions;
        if (execute.cache_hit()) ++cached;
        if (execute.cause() == pb::SYNC_CAUSE_MARK_STEP) ++markSteps;
        ++syncs["SyncCause." + syncCauseText(execute.cause()).toStdString()];
        executeMs.push_back(ms(execute.duration_ns()));
        break;
      }
      case pb::Event::kTransfer:
        (event.transfer().to_device() ? toBytes : fromBytes) += event.transfer().bytes();
        (event.transfer().to_device() ? toMs : fromMs).push_back(ms(event.transfer().duration_ns()));
        break;
      case pb::Event::kFallback: fallbackMs.push_back(ms(event.fallback().duration_ns())); break;
      default: break;
    }
  }
  std::vector<pb::MetricValue> metrics = {
      counter("ExecuteCount", executions),
      counter("CachedCompile", cached),
      counter("UncachedCompile", uncached),
      counter("MarkStep", markSteps),
      counter("Fallbacks", static_cast<int64_t>(fallbackMs.size())),
      counter("TransferToDeviceBytes", toBytes),
      counter("TransferFromDeviceBytes", fromBytes),
  };
  for (const auto& [name, count] : syncs) metrics.push_back(counter(name, count));
  metrics.push_back(timed("StepTime", std::move(stepMs)));
  metrics.push_back(timed("CompileTime", std::move(compileMs)));
  metrics.push_back(timed("ExecuteTime", std::move(executeMs)));
  metrics.push_back(timed("TransferToDeviceTime", std::move(toMs)));
  metrics.push_back(timed("TransferFromDeviceTime", std::move(fromMs)));
  metrics.push_back(timed("FallbackTime", std::move(fallbackMs)));
  return metrics;
}

RunProfile RunProfileLoader::read(const storage::HistoryReader& reader, int64_t runId) {
  RunProfile profile;
  std::optional<pb::RunSummary> summary = reader.run_summary(runId);
  std::optional<pb::RunTimeline> timeline = reader.timeline(runId);
  if (!summary || !timeline) return profile;  // runId 0: no such run
  profile.runId = runId;
  profile.run = std::move(*summary->mutable_run());
  profile.steps = reader.step_series(runId);
  profile.markers = markersOf(*timeline);
  profile.scalars = scalarsOf(*timeline);
  profile.fallbackGroups = reader.fallback_groups(runId);
  profile.output = reader.output(runId);
  // The engine's own report, as the runner snapshotted it, is what a person
  // compares with `lazyscope show` and the engine's metrics_report(); runs
  // recorded before snapshots existed get the report their events imply.
  pb::MetricsReport report = reader.final_metrics(runId);
  profile.metricsDerived = report.metrics().empty();
  if (profile.metricsDerived) {
    profile.metrics = deriveMetrics(*timeline);
  } else {
    profile.metrics.assign(std::make_move_iterator(report.mutable_metrics()->begin()),
                           std::make_move_iterator(report.mutable_metrics()->end()));
    profile.metricsStep = report.step();
  }
  return profile;
}

struct RunProfileLoader::LoadResult {
  std::shared_ptr<std::vector<RunProfile>> profiles;  // shared: a QFuture result must be copyable
  int64_t runId = 0;  // the first run asked for, for the error message
  QString error;      // empty on success
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

void RunProfileLoader::loadMany(const QString& path, const std::vector<int64_t>& runIds) {
  start(path, runIds, true);
}

void RunProfileLoader::start(const QString& path, std::vector<int64_t> runIds, bool many) {
  runId_ = runIds.empty() ? 0 : runIds.front();
  const QString label = many ? tr("Reading the steps of %1 runs…").arg(runIds.size())
                             : tr("Reading the timeline of run %1…").arg(runId_);
  job_->run(label, [path = path.toStdString(), runIds = std::move(runIds)] { return readAll(path, runIds); },
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
