#include "analysis/run_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "analysis/step_times.h"
#include "lazyscope/event_text.h"
#include "lazyscope/percentile.h"

namespace lazyscope::storage {
namespace {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

pb::MetricValue counter(const std::string& name, int64_t value) {
  pb::MetricValue metric;
  metric.set_name(name);
  metric.set_is_counter(true);
  metric.set_value(value);
  return metric;
}

pb::MetricValue timed(const std::string& name, std::vector<double> values) {
  std::sort(values.begin(), values.end());
  pb::MetricValue metric;
  metric.set_name(name);
  metric.set_count(static_cast<int64_t>(values.size()));
  double total = 0.0;
  for (double v : values) total += v;
  metric.set_total_ms(total);
  metric.set_p50_ms(stats::percentile(values, 0.50));
  metric.set_p90_ms(stats::percentile(values, 0.90));
  metric.set_p99_ms(stats::percentile(values, 0.99));
  return metric;
}

std::string fallback_reason_text(pb::FallbackReason reason) {
  switch (reason) {
    case pb::FALLBACK_REASON_NOT_LOWERED: return "not lowered";
    case pb::FALLBACK_REASON_DATA_DEPENDENT: return "data-dependent shape";
    case pb::FALLBACK_REASON_FORCED: return "forced";
    default: return {};
  }
}

std::string at(const pb::SourceLocation& source) {
  const std::string text = source_text(source);
  return text.empty() ? text : " at " + text;
}

}  // namespace

std::string source_text(const pb::SourceLocation& source) {
  if (source.file().empty()) return {};
  return std::filesystem::path(source.file()).filename().string() + ":" + std::to_string(source.line());
}

bool is_unused_cause_counter(const pb::MetricValue& metric) {
  return metric.is_counter() && metric.value() == 0 && metric.name().starts_with("SyncCause.");
}

std::vector<pb::MetricValue> derive_metrics(const pb::RunTimeline& timeline) {
  int64_t markSteps = 0, uncached = 0, cached = 0, executions = 0, toBytes = 0, fromBytes = 0;
  std::map<std::string, int64_t> syncs;
  std::vector<double> stepMs, compileMs, executeMs, toMs, fromMs, fallbackMs;
  for (const StepTimes& step : step_times(timeline)) {
    if (step.replica == 0 && step.ran_graph) stepMs.push_back(ms(step.duration_ns()));
  }
  for (const pb::Event& event : timeline.events()) {
    switch (event.kind_case()) {
      case pb::Event::kCompile:
        ++uncached;
        compileMs.push_back(ms(event.compile().duration_ns()));
        break;
      case pb::Event::kExecute: {
        const pb::ExecuteEvent& execute = event.execute();
        ++executions;
        if (execute.cache_hit()) ++cached;
        if (execute.cause() == pb::SYNC_CAUSE_MARK_STEP) ++markSteps;
        ++syncs[event_text::sync_cause_counter(execute.cause())];
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

std::vector<TimelineMarker> timeline_markers(const pb::RunTimeline& timeline) {
  std::vector<TimelineMarker> markers;
  char number[32];
  for (const pb::Event& event : timeline.events()) {
    if (event.has_compile()) {
      const pb::CompileEvent& compile = event.compile();
      std::snprintf(number, sizeof number, "%.3f", ms(compile.duration_ns()));
      markers.push_back({event.replica(), compile.step(), TimelineMarker::Kind::Compile,
                         "compile (" + event_text::compile_reason_label(compile.reason_kind()) + ", " + number +
                             " ms)" + at(compile.source())});
    } else if (event.has_fallback()) {
      const pb::FallbackEvent& fallback = event.fallback();
      const std::string reason = fallback_reason_text(fallback.reason());
      markers.push_back(
          {event.replica(), fallback.step(), TimelineMarker::Kind::Fallback,
           "fallback " + fallback.op() + (reason.empty() ? "" : " (" + reason + ")") + at(fallback.source())});
    } else if (event.has_execute() && event.execute().cause() != pb::SYNC_CAUSE_MARK_STEP &&
               event.execute().cause() != pb::SYNC_CAUSE_UNSPECIFIED) {
      const pb::ExecuteEvent& execute = event.execute();
      markers.push_back({event.replica(), execute.step(), TimelineMarker::Kind::Sync,
                         "sync: " + event_text::sync_cause_label(execute.cause()) + at(execute.source())});
    }
  }
  std::stable_sort(markers.begin(), markers.end(), [](const TimelineMarker& a, const TimelineMarker& b) {
    return std::tie(a.replica, a.step) < std::tie(b.replica, b.step);
  });
  return markers;
}

}  // namespace lazyscope::storage
