#include "query/run_timeline.h"

#include <limits>

#include "db/history_file.h"
#include "db/statement.h"
#include "query/stored_enum.h"

namespace lazyscope::storage {
namespace {

void read_source(const Statement& row, int first_column, pb::SourceLocation* source) {
  source->set_file(row.text_at(first_column));
  source->set_line(static_cast<int32_t>(row.int64_at(first_column + 1)));
  source->set_function(row.text_at(first_column + 2));
}

pb::Event& add_event(pb::RunTimeline& timeline, const Statement& row) {
  pb::Event& event = *timeline.add_events();
  event.set_replica(static_cast<int32_t>(row.int64_at(0)));
  return event;
}

void read_steps(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, R"sql(
    SELECT replica, step, start_ns, end_ns, trace_ns, compile_ns, execute_ns, transfer_ns, host_wait_ns
    FROM steps WHERE run_id = ?1
    ORDER BY replica, start_ns, step, rowid)sql");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) {
    pb::StepEvent& step = *add_event(timeline, rows).mutable_step();
    step.set_step(rows.int64_at(1));
    step.set_start_ns(rows.int64_at(2));
    step.set_end_ns(rows.int64_at(3));
    step.set_trace_ns(rows.int64_at(4));
    step.set_compile_ns(rows.int64_at(5));
    step.set_execute_ns(rows.int64_at(6));
    step.set_transfer_ns(rows.int64_at(7));
    step.set_host_wait_ns(rows.int64_at(8));
  }
}

void read_compiles(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, R"sql(
    SELECT replica, step, graph_hash, start_ns, duration_ns, reason_kind, reason, compared_with,
           source_file, source_line, source_function
    FROM compilations WHERE run_id = ?1
    ORDER BY replica, start_ns, id)sql");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) {
    pb::CompileEvent& compile = *add_event(timeline, rows).mutable_compile();
    compile.set_step(rows.int64_at(1));
    compile.set_graph_hash(rows.hash_at(2));
    compile.set_start_ns(rows.int64_at(3));
    compile.set_duration_ns(rows.int64_at(4));
    compile.set_reason_kind(
        enum_or_unspecified<pb::CompileReasonKind>(rows.int64_at(5), pb::CompileReasonKind_IsValid));
    compile.set_reason(rows.text_at(6));
    compile.set_compared_with(rows.hash_at(7));
    read_source(rows, 8, compile.mutable_source());
  }
}

void read_executions(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, R"sql(
    SELECT replica, step, graph_hash, start_ns, duration_ns, cause, cache_hit, node_count,
           source_file, source_line, source_function
    FROM executions WHERE run_id = ?1
    ORDER BY replica, start_ns, id)sql");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) {
    pb::ExecuteEvent& execution = *add_event(timeline, rows).mutable_execute();
    execution.set_step(rows.int64_at(1));
    execution.set_graph_hash(rows.hash_at(2));
    execution.set_start_ns(rows.int64_at(3));
    execution.set_duration_ns(rows.int64_at(4));
    execution.set_cause(enum_or_unspecified<pb::SyncCause>(rows.int64_at(5), pb::SyncCause_IsValid));
    execution.set_cache_hit(rows.int64_at(6) != 0);
    execution.set_node_count(static_cast<int32_t>(rows.int64_at(7)));
    read_source(rows, 8, execution.mutable_source());
  }
}

void read_fallbacks(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, R"sql(
    SELECT replica, step, op, start_ns, duration_ns, bytes, source_file, source_line, source_function
    FROM fallbacks WHERE run_id = ?1
    ORDER BY replica, start_ns, id)sql");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) {
    pb::FallbackEvent& fallback = *add_event(timeline, rows).mutable_fallback();
    fallback.set_step(rows.int64_at(1));
    fallback.set_op(rows.text_at(2));
    fallback.set_start_ns(rows.int64_at(3));
    fallback.set_duration_ns(rows.int64_at(4));
    fallback.set_bytes(rows.int64_at(5));
    read_source(rows, 6, fallback.mutable_source());
  }
}

void read_transfers(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, R"sql(
    SELECT replica, step, to_device, start_ns, duration_ns, bytes
    FROM transfers WHERE run_id = ?1
    ORDER BY replica, start_ns, id)sql");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) {
    pb::TransferEvent& transfer = *add_event(timeline, rows).mutable_transfer();
    transfer.set_step(rows.int64_at(1));
    transfer.set_to_device(rows.int64_at(2) != 0);
    transfer.set_start_ns(rows.int64_at(3));
    transfer.set_duration_ns(rows.int64_at(4));
    transfer.set_bytes(rows.int64_at(5));
  }
}

void read_scalars(const HistoryFile& file, int64_t run_id, pb::RunTimeline& timeline) {
  Statement rows(file, R"sql(
    SELECT replica, step, name, value FROM scalars WHERE run_id = ?1
    ORDER BY replica, step, id)sql");
  rows.bind_int64(1, run_id);
  while (rows.next_row()) {
    pb::ScalarEvent& scalar = *add_event(timeline, rows).mutable_scalar();
    scalar.set_step(rows.int64_at(1));
    scalar.set_name(rows.text_at(2));
    // NULL stands for NaN (see the schema).
    scalar.set_value(rows.is_null_at(3) ? std::numeric_limits<double>::quiet_NaN() : rows.double_at(3));
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
  read_steps(file, run_id, timeline);
  read_compiles(file, run_id, timeline);
  read_executions(file, run_id, timeline);
  read_fallbacks(file, run_id, timeline);
  read_transfers(file, run_id, timeline);
  read_scalars(file, run_id, timeline);
  return timeline;
}

}  // namespace lazyscope::storage
