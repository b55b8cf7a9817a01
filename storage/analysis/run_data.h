// Everything the analyses (diagnosis, comparison, export) read about one run,
// loaded at once through the query library so that they are pure functions
// of it, testable without a file.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/step_times.h"
#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class HistoryReader;

struct RunData {
  pb::RunSummary summary;
  std::vector<pb::StepEvent> steps;        // replica 0, in step order
  std::vector<pb::CompileEvent> compiles;  // with their IR, in start order
  std::vector<pb::ExecuteEvent> executions;
  std::vector<pb::FallbackEvent> fallbacks;
  std::vector<pb::TransferEvent> transfers;
  std::vector<pb::GraphInfo> graphs;
  // Every event of every replica (compiles without IR): what the per-replica
  // step breakdown and each sync's cost are computed from.
  pb::RunTimeline timeline;
  std::vector<StepTimes> step_times;  // every replica's barriers, see step_times.h
};

// Which compiles come with their IR: all of them (the views that draw
// graphs), or only those the diagnosis reads (a shape recompile and the graph
// it was compared with), so that a summary of a run with huge graphs stays
// small and quick (`show`, the end of `run`).
enum class CompileIr { kAll, kForDiagnosis };

// nullopt when there is no run `run_id`. Throws HistoryError.
std::optional<RunData> load_run_data(const HistoryReader& reader, int64_t run_id, CompileIr ir = CompileIr::kAll);

}  // namespace lazyscope::storage
