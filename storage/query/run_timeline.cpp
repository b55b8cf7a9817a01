#include "query/run_timeline.h"

#include "db/history_file.h"
#include "db/statement.h"
#include "query/event_rows.h"
#include "query/run_events.h"

namespace lazyscope::storage {
namespace {

pb::Event& add_event(pb::RunTimeline& timeline, const Statement& row) {
  pb::Event& event = *timeline.add_events();
  event.set_replica(static_cast<int32_t>(row.int64_at(0)));
  return event;
}

void read_steps(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, "SELECT replica, " + kStepColumns + " FROM steps WHERE run_id = ?1 ORDER BY replica, start_ns, step, rowid");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) read_step_row(rows, 1, add_event(timeline, rows).mutable_step());
}

void read_compiles(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, "SELECT replica, " + kCompileColumns + " FROM compilations WHERE run_id = ?1 ORDER BY replica, start_ns, id");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) read_compile_row(rows, 1, add_event(timeline, rows).mutable_compile());
}

void read_executions(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, "SELECT replica, " + kExecutionColumns + " FROM executions WHERE run_id = ?1 ORDER BY replica, start_ns, id");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) read_execution_row(rows, 1, add_event(timeline, rows).mutable_execute());
}

void read_fallbacks(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, "SELECT replica, " + kFallbackColumns + " FROM fallbacks WHERE run_id = ?1 ORDER BY replica, start_ns, id");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) read_fallback_row(rows, 1, add_event(timeline, rows).mutable_fallback());
}

void read_transfers(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, "SELECT replica, " + kTransferColumns + " FROM transfers WHERE run_id = ?1 ORDER BY replica, start_ns, id");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) read_transfer_row(rows, 1, add_event(timeline, rows).mutable_transfer());
}

void read_scalars(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, "SELECT replica, " + kScalarColumns + " FROM scalars WHERE run_id = ?1 ORDER BY replica, step, id");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) read_scalar_row(rows, 1, add_event(timeline, rows).mutable_scalar());
}

}  // namespace

std::optional<pb::RunTimeline> read_run_timeline(const HistoryFile& file, int64_t run_id) {
  Statement run(file, "SELECT name, started_unix_ms, device_count FROM runs WHERE id = ?1");
  run.bind_int64(1, run_id);
  if (!run.next_row()) return std::nullopt;
  pb::RunTimeline timeline;
  timeline.mutable_run()->set_id(run_id);
  timeline.mutable_run()->set_name(run.text_at(0));
  timeline.mutable_run()->set_started_unix_ms(run.int64_at(1));
  timeline.mutable_run()->set_device_count(static_cast<int32_t>(run.int64_at(2)));
  run.reset();
  read_steps(file, run_id, timeline);
  read_compiles(file, run_id, timeline);
  read_executions(file, run_id, timeline);
  read_fallbacks(file, run_id, timeline);
  read_transfers(file, run_id, timeline);
  read_scalars(file, run_id, timeline);
  for (pb::Event& snapshot : read_metric_snapshots(file, run_id)) *timeline.add_events() = std::move(snapshot);
  return timeline;
}

}  // namespace lazyscope::storage
