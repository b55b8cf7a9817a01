#include "query/run_timeline.h"

#include <string>

#include "db/history_file.h"
#include "db/statement.h"
#include "query/event_rows.h"
#include "query/run_events.h"

namespace lazyscope::storage {
namespace {

// One event table's rows of the run, in `order`, decoded by `read_row` into
// the event field `mutable_field` returns: every table reads the same way.
template <typename Message>
void read_events(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline, const std::string& table,
                 const std::string& columns, const char* order, int (*read_row)(const Statement&, int, Message*),
                 Message* (pb::Event::*mutable_field)()) {
  Statement rows(file, "SELECT replica, " + columns + " FROM " + table + " WHERE run_id = ?1 ORDER BY " + order);
  rows.bind_int64(1, run_id);
  while (rows.next_row()) {
    pb::Event& event = *timeline.add_events();
    event.set_replica(static_cast<int32_t>(rows.int64_at(0)));
    read_row(rows, 1, (event.*mutable_field)());
  }
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
  read_events(file, run_id, timeline, "steps", kStepColumns, "replica, start_ns, step, rowid", read_step_row,
              &pb::Event::mutable_step);
  read_events(file, run_id, timeline, "compilations", kCompileColumns, "replica, start_ns, id", read_compile_row,
              &pb::Event::mutable_compile);
  read_events(file, run_id, timeline, "executions", kExecutionColumns, "replica, start_ns, id", read_execution_row,
              &pb::Event::mutable_execute);
  read_events(file, run_id, timeline, "fallbacks", kFallbackColumns, "replica, start_ns, id", read_fallback_row,
              &pb::Event::mutable_fallback);
  read_events(file, run_id, timeline, "transfers", kTransferColumns, "replica, start_ns, id", read_transfer_row,
              &pb::Event::mutable_transfer);
  read_events(file, run_id, timeline, "scalars", kScalarColumns, "replica, step, id", read_scalar_row,
              &pb::Event::mutable_scalar);
  for (pb::Event& snapshot : read_metric_snapshots(file, run_id)) *timeline.add_events() = std::move(snapshot);
  return timeline;
}

}  // namespace lazyscope::storage
