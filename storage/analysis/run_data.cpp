#include "analysis/run_data.h"

#include <unordered_set>

#include "query/history_reader.h"

namespace lazyscope::storage {

namespace {

// The IR of the compiles the diagnosis reads: shape recompiles and the graphs
// they were compared with (diagnosis.cpp, describe_recompiles).
void attach_diagnosis_ir(const HistoryReader& reader, int64_t run_id, std::vector<pb::CompileEvent>& compiles) {
  std::unordered_set<uint64_t> wanted;
  for (const pb::CompileEvent& compile : compiles) {
    if (compile.reason_kind() != pb::COMPILE_REASON_SHAPE) continue;
    wanted.insert(compile.graph_hash());
    wanted.insert(compile.compared_with());
  }
  for (pb::CompileEvent& compile : compiles) {
    if (!wanted.contains(compile.graph_hash()) || compile.has_graph()) continue;
    if (auto ir = reader.graph_ir(run_id, compile.graph_hash())) *compile.mutable_graph() = std::move(*ir);
  }
}

}  // namespace

std::optional<RunData> load_run_data(const HistoryReader& reader, int64_t run_id, CompileIr ir) {
  std::optional<pb::RunSummary> summary = reader.run_summary(run_id);
  if (!summary) return std::nullopt;
  RunData data;
  data.summary = std::move(*summary);
  data.steps = reader.steps(run_id);
  data.compiles = reader.compilations(run_id, ir == CompileIr::kAll);
  if (ir == CompileIr::kForDiagnosis) attach_diagnosis_ir(reader, run_id, data.compiles);
  data.executions = reader.executions(run_id);
  data.fallbacks = reader.fallbacks(run_id);
  data.transfers = reader.transfers(run_id);
  data.graphs = reader.graphs(run_id);
  if (std::optional<pb::RunTimeline> timeline = reader.timeline(run_id)) data.timeline = std::move(*timeline);
  data.step_times = step_times(data.timeline);
  return data;
}

}  // namespace lazyscope::storage
