// Sync causes and compile reasons as people and metric names read them: one
// table beside the messages, so that the engine's counters, the diagnosis,
// `lazyscope compare`, the metrics derived from events and the GUI all say
// the same thing. It lives in the protobuf library because storage, the
// runner and the GUI must not link the engine.
#pragma once

#include <string>

#include "lazyscope/events.pb.h"

namespace lazyscope::event_text {

// "item", "to_host", "mark_step": the enum name without its prefix, lower
// case. The engine counts each sync under "SyncCause." + this name.
std::string sync_cause_name(pb::SyncCause cause);
// The engine's counter of a cause: "SyncCause.item".
std::string sync_cause_counter(pb::SyncCause cause);
// "item()", "copy to host", "control flow", ...: what a person reads.
std::string sync_cause_label(pb::SyncCause cause);
// The same in a sentence's words, for findings: "reading a tensor on the
// host (.cpu(), .numpy(), .tolist(), print)".
std::string sync_cause_description(pb::SyncCause cause);
// Whether the script asked for the value (item(), .cpu(), bool(), save):
// the syncs that make the host wait inside a step. Barriers, graph limits
// and fallback operands are not value reads.
bool is_value_read(pb::SyncCause cause);

// "first sight", "shape", "dtype", "structure", "evicted", "unknown".
std::string compile_reason_label(pb::CompileReasonKind kind);
// A first compile of a graph (first sight, or a record with no reason) is
// not a recompilation.
bool is_recompile(pb::CompileReasonKind kind);

// What a metric of the engine's report is: "counter" (a count that only
// grows until reset), "gauge" (the current state, up and down: the Live*
// buffer counts and bytes, which reset leaves alone) or "timing" (samples
// with count, total and percentiles). The engine's reset and every view
// that labels a metric ask here, so the two cannot disagree.
bool is_gauge_metric(const std::string& name);
std::string metric_kind_label(const pb::MetricValue& metric);

}  // namespace lazyscope::event_text
