#include "query/run_bundle_query.h"

#include "db/history_file.h"
#include "db/statement.h"
#include "query/run_events.h"
#include "query/run_kernels.h"
#include "query/run_summaries.h"
#include "query/run_timeline.h"

namespace lazyscope::storage {

std::optional<pb::RunBundle> read_run_bundle(const HistoryFile& file, int64_t run_id) {
  std::optional<pb::RunSummary> summary = RunSummaryQuery(file).one(run_id);
  if (!summary) return std::nullopt;
  std::optional<pb::RunTimeline> timeline = read_run_timeline(file, run_id);
  if (!timeline) return std::nullopt;

  pb::RunBundle bundle;
  *bundle.mutable_run() = std::move(*summary->mutable_run());
  Statement heartbeat(file, "SELECT heartbeat_unix_ms FROM runs WHERE id = ?1");
  heartbeat.bind_int64(1, run_id);
  if (heartbeat.next_row()) bundle.set_heartbeat_unix_ms(heartbeat.int64_at(0));
  heartbeat.reset();

  // The timeline holds every event table, metric snapshots included.
  bundle.mutable_events()->Swap(timeline->mutable_events());
  // Kernel profiles and machine peaks are kept as latest totals, not in the
  // timeline: carried as the events that store them again on import.
  for (pb::Event& event : read_kernel_events(file, run_id)) *bundle.add_events() = std::move(event);

  // The IR as stored, not parsed: a bundle copies the run, it does not judge it.
  Statement graphs(file, "SELECT hash, node_count, ir, program_text FROM graphs WHERE run_id = ?1 ORDER BY rowid");
  graphs.bind_int64(1, run_id);
  while (graphs.next_row()) {
    pb::StoredGraph& graph = *bundle.add_graphs();
    graph.set_hash(graphs.hash_at(0));
    graph.set_node_count(static_cast<int32_t>(graphs.int64_at(1)));
    graph.set_ir(graphs.blob_at(2));
    graph.set_program_text(graphs.text_at(3));
  }
  bundle.mutable_output()->Swap(read_output(file, run_id).mutable_chunks());
  return bundle;
}

}  // namespace lazyscope::storage
