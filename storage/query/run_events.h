// Per-run event reads: step and scalar series, executions, fallbacks,
// transfers. Free functions over an open file; HistoryReader serializes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class HistoryFile;

// Replica 0 only: the per-step views show one device's timeline.
pb::StepSeries read_step_series(const HistoryFile& file, int64_t run_id);
std::vector<std::string> read_scalar_names(const HistoryFile& file, int64_t run_id);
pb::ScalarSeries read_scalar_series(const HistoryFile& file, int64_t run_id, const std::string& name);

// Every replica, in start order (then arrival order).
std::vector<pb::ExecuteEvent> read_executions(const HistoryFile& file, int64_t run_id);
std::vector<pb::FallbackEvent> read_fallbacks(const HistoryFile& file, int64_t run_id);
std::vector<pb::TransferEvent> read_transfers(const HistoryFile& file, int64_t run_id);

// The script's output, in arrival order.
pb::RunOutput read_output(const HistoryFile& file, int64_t run_id);

// Fallbacks grouped by op and source line, the most expensive group first.
std::vector<pb::FallbackGroup> read_fallback_groups(const HistoryFile& file, int64_t run_id);

// Metric snapshots as events (kind metrics), in arrival order.
std::vector<pb::Event> read_metric_snapshots(const HistoryFile& file, int64_t run_id);
// The last value of each metric, sorted by name.
pb::MetricsReport read_final_metrics(const HistoryFile& file, int64_t run_id);

}  // namespace lazyscope::storage
