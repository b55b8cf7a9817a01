#include "analysis/run_data.h"

#include "query/history_reader.h"

namespace lazyscope::storage {

std::optional<RunData> load_run_data(const HistoryReader& reader, int64_t run_id) {
  std::optional<pb::RunSummary> summary = reader.run_summary(run_id);
  if (!summary) return std::nullopt;
  RunData data;
  data.summary = std::move(*summary);
  data.steps = reader.steps(run_id);
  data.replica_steps = reader.replica_steps(run_id);
  data.compiles = reader.compilations(run_id);
  data.executions = reader.executions(run_id);
  data.fallbacks = reader.fallbacks(run_id);
  data.transfers = reader.transfers(run_id);
  data.graphs = reader.graphs(run_id);
  return data;
}

}  // namespace lazyscope::storage
