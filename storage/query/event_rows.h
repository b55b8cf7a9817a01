// One decoder per event table. Each table's columns are listed once, here,
// in the order its decoder reads them; queries select the list (after any
// leading columns of their own, e.g. replica) and hand the decoder the index
// of its first column. The history reader, the per-run event queries and the
// timeline all read rows through these, so a column added to a table is
// decoded the same way everywhere.
#pragma once

#include <string>

#include "lazyscope/events.pb.h"

namespace lazyscope::storage {

class Statement;

inline const std::string kStepColumns =
    "step, start_ns, end_ns, trace_ns, compile_ns, execute_ns, transfer_ns, host_wait_ns, collective_ns, "
    "collective_bytes";
inline const std::string kCompileColumns =
    "step, graph_hash, start_ns, duration_ns, reason_kind, reason, compared_with, "
    "source_file, source_line, source_function";
inline const std::string kExecutionColumns =
    "step, graph_hash, start_ns, duration_ns, cause, cache_hit, node_count, "
    "source_file, source_line, source_function";
inline const std::string kFallbackColumns =
    "step, op, start_ns, duration_ns, bytes, source_file, source_line, source_function, "
    "reason, graph_cut_nodes, dtype";
inline const std::string kTransferColumns = "step, to_device, start_ns, duration_ns, bytes";
inline const std::string kScalarColumns = "step, name, value";
// One metric of one snapshot (a row of metric_snapshots).
inline const std::string kMetricColumns = "name, is_counter, value, count, total_ms, p50_ms, p90_ms, p99_ms";

// Columns source_file, source_line, source_function from `first`.
void read_source(const Statement& row, int first, pb::SourceLocation* source);

// Each reads its table's columns starting at `first`; returns the next index.
int read_step_row(const Statement& row, int first, pb::StepEvent* step);
int read_compile_row(const Statement& row, int first, pb::CompileEvent* compile);
int read_execution_row(const Statement& row, int first, pb::ExecuteEvent* execution);
int read_fallback_row(const Statement& row, int first, pb::FallbackEvent* fallback);
int read_transfer_row(const Statement& row, int first, pb::TransferEvent* transfer);
int read_scalar_row(const Statement& row, int first, pb::ScalarEvent* scalar);
int read_metric_row(const Statement& row, int first, pb::MetricValue* metric);

}  // namespace lazyscope::storage
