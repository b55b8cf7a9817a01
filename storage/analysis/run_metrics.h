// What the command line and the GUI derive from a run's events, computed
// here once: the metrics report a run's events imply (under the engine's own
// metric names, for runs recorded without metric snapshots) and the markers
// a timeline draws above the steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

// Counters and timed metrics with percentiles (stats::percentile: linear
// interpolation, as NumPy and the engine's report), named as the
// engine names them (ExecuteCount, UncachedCompile, SyncCause.item,
// CompileTime, ...). Counters of causes that never occurred are not listed.
// StepTime covers the steps (barriers that ran a graph) of replica 0.
std::vector<pb::MetricValue> derive_metrics(const pb::RunTimeline& timeline);

// A per-cause sync counter that never counted ("SyncCause.save" = 0): the
// engine reports every cause, but a zero row only pads a report.
bool is_unused_cause_counter(const pb::MetricValue& metric);

// Something that happened in a step, drawn above the step's bar: every
// uncached compile, every fallback, and every sync the script forced by
// reading a value or that cut the graph (anything but a barrier).
struct TimelineMarker {
  enum class Kind { Compile, Fallback, Sync };
  int32_t replica = 0;
  int64_t step = 0;
  Kind kind = Kind::Compile;
  std::string text;  // one line: what, why, where ("compile (shape, 1.250 ms) at train.py:12")
};

// In (replica, step) order.
std::vector<TimelineMarker> timeline_markers(const pb::RunTimeline& timeline);

// "train.py:12": the file's name (not its path) and line; "" when unknown.
std::string source_text(const pb::SourceLocation& source);

}  // namespace lazyscope::storage
