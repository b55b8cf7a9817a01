#include "query/run_events.h"

#include <limits>

#include "db/history_file.h"
#include "db/statement.h"
#include "query/event_rows.h"

namespace lazyscope::storage {
namespace {

constexpr double kNsPerMs = 1e6;

double ms(int64_t ns) { return static_cast<double>(ns) / kNsPerMs; }

}  // namespace

pb::StepSeries read_step_series(const HistoryFile& file, int64_t run_id) {
  Statement rows(file, R"sql(
    SELECT step, end_ns - start_ns, trace_ns, compile_ns, execute_ns, transfer_ns, host_wait_ns
    FROM steps
    WHERE run_id = ?1 AND replica = 0
    ORDER BY step, start_ns)sql");
  rows.bind_int64(1, run_id);
  pb::StepSeries series;
  while (rows.next_row()) {
    series.add_steps(rows.int64_at(0));
    series.add_step_ms(ms(rows.int64_at(1)));
    series.add_trace_ms(ms(rows.int64_at(2)));
    series.add_compile_ms(ms(rows.int64_at(3)));
    series.add_execute_ms(ms(rows.int64_at(4)));
    series.add_transfer_ms(ms(rows.int64_at(5)));
    series.add_host_wait_ms(ms(rows.int64_at(6)));
  }
  return series;
}

std::vector<std::string> read_scalar_names(const HistoryFile& file, int64_t run_id) {
  Statement rows(file, R"sql(
    SELECT DISTINCT name FROM scalars WHERE run_id = ?1 AND replica = 0 ORDER BY name)sql");
  rows.bind_int64(1, run_id);
  std::vector<std::string> names;
  while (rows.next_row()) names.push_back(rows.text_at(0));
  return names;
}

pb::ScalarSeries read_scalar_series(const HistoryFile& file, int64_t run_id, const std::string& name) {
  Statement rows(file, R"sql(
    SELECT step, value FROM scalars
    WHERE run_id = ?1 AND name = ?2 AND replica = 0
    ORDER BY step, id)sql");
  rows.bind_int64(1, run_id).bind_text(2, name);
  pb::ScalarSeries series;
  series.set_name(name);
  while (rows.next_row()) {
    series.add_steps(rows.int64_at(0));
    // NULL stands for NaN (see the schema).
    series.add_values(rows.is_null_at(1) ? std::numeric_limits<double>::quiet_NaN() : rows.double_at(1));
  }
  return series;
}

std::vector<pb::ExecuteEvent> read_executions(const HistoryFile& file, int64_t run_id) {
  Statement rows(file, "SELECT " + kExecutionColumns + " FROM executions WHERE run_id = ?1 ORDER BY start_ns, id");
  rows.bind_int64(1, run_id);
  std::vector<pb::ExecuteEvent> events;
  while (rows.next_row()) read_execution_row(rows, 0, &events.emplace_back());
  return events;
}

std::vector<pb::FallbackEvent> read_fallbacks(const HistoryFile& file, int64_t run_id) {
  Statement rows(file, "SELECT " + kFallbackColumns + " FROM fallbacks WHERE run_id = ?1 ORDER BY start_ns, id");
  rows.bind_int64(1, run_id);
  std::vector<pb::FallbackEvent> events;
  while (rows.next_row()) read_fallback_row(rows, 0, &events.emplace_back());
  return events;
}

std::vector<pb::TransferEvent> read_transfers(const HistoryFile& file, int64_t run_id) {
  Statement rows(file, "SELECT " + kTransferColumns + " FROM transfers WHERE run_id = ?1 ORDER BY start_ns, id");
  rows.bind_int64(1, run_id);
  std::vector<pb::TransferEvent> events;
  while (rows.next_row()) read_transfer_row(rows, 0, &events.emplace_back());
  return events;
}

pb::RunOutput read_output(const HistoryFile& file, int64_t run_id) {
  Statement rows(file, "SELECT seq, stream, text FROM output WHERE run_id = ?1 ORDER BY seq");
  rows.bind_int64(1, run_id);
  pb::RunOutput output;
  while (rows.next_row()) {
    pb::OutputChunk& chunk = *output.add_chunks();
    chunk.set_seq(rows.int64_at(0));
    chunk.set_stream(rows.text_at(1));
    chunk.set_text(rows.text_at(2));
  }
  return output;
}

std::vector<pb::FallbackGroup> read_fallback_groups(const HistoryFile& file, int64_t run_id) {
  Statement rows(file, R"sql(
    SELECT op, source_file, source_line, source_function, COUNT(*), TOTAL(duration_ns),
           SUM(bytes), MIN(step), MAX(step), COUNT(DISTINCT step)
    FROM fallbacks WHERE run_id = ?1
    GROUP BY op, source_file, source_line, source_function
    ORDER BY TOTAL(duration_ns) DESC, COUNT(*) DESC, op, source_file, source_line)sql");
  rows.bind_int64(1, run_id);
  std::vector<pb::FallbackGroup> groups;
  while (rows.next_row()) {
    pb::FallbackGroup& group = groups.emplace_back();
    group.set_op(rows.text_at(0));
    read_source(rows, 1, group.mutable_source());
    group.set_count(rows.int64_at(4));
    group.set_total_ms(rows.double_at(5) / kNsPerMs);
    group.set_bytes(rows.int64_at(6));
    group.set_first_step(rows.int64_at(7));
    group.set_last_step(rows.int64_at(8));
    group.set_steps_with_fallback(rows.int64_at(9));
  }
  return groups;
}

}  // namespace lazyscope::storage
