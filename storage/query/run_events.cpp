#include "query/run_events.h"

#include <limits>

#include "db/history_file.h"
#include "db/statement.h"
#include "query/event_rows.h"
#include "query/hot_queries.h"
#include "query/stored_enum.h"

namespace lazyscope::storage {
namespace {

constexpr double kNsPerMs = 1e6;

double ms(int64_t ns) { return static_cast<double>(ns) / kNsPerMs; }

}  // namespace

pb::StepSeries read_step_series(const HistoryFile& file, int64_t run_id) {
  Statement rows(file, kSelectStepSeries);
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
  Statement rows(file, kSelectScalarSeries);
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

namespace {

// One event table of a run, in start order, each row decoded by `read_row`
// (the shared decoders of event_rows.h).
template <typename Event>
std::vector<Event> read_event_table(const HistoryFile& file, int64_t run_id, const std::string& table,
                                    const std::string& columns, int (*read_row)(const Statement&, int, Event*)) {
  Statement rows(file, "SELECT " + columns + " FROM " + table + " WHERE run_id = ?1 ORDER BY start_ns, id");
  rows.bind_int64(1, run_id);
  std::vector<Event> events;
  while (rows.next_row()) read_row(rows, 0, &events.emplace_back());
  return events;
}

}  // namespace

std::vector<pb::ExecuteEvent> read_executions(const HistoryFile& file, int64_t run_id) {
  return read_event_table<pb::ExecuteEvent>(file, run_id, "executions", kExecutionColumns, read_execution_row);
}

std::vector<pb::FallbackEvent> read_fallbacks(const HistoryFile& file, int64_t run_id) {
  return read_event_table<pb::FallbackEvent>(file, run_id, "fallbacks", kFallbackColumns, read_fallback_row);
}

std::vector<pb::TransferEvent> read_transfers(const HistoryFile& file, int64_t run_id) {
  return read_event_table<pb::TransferEvent>(file, run_id, "transfers", kTransferColumns, read_transfer_row);
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
           SUM(bytes), MIN(step), MAX(step), COUNT(DISTINCT step), reason,
           COALESCE(GROUP_CONCAT(DISTINCT NULLIF(dtype, '')), ''), SUM(graph_cut_nodes)
    FROM fallbacks WHERE run_id = ?1
    GROUP BY op, source_file, source_line, source_function, reason
    ORDER BY TOTAL(duration_ns) DESC, COUNT(*) DESC, op, source_file, source_line, reason)sql");
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
    group.set_reason(enum_or_unspecified<pb::FallbackReason>(rows.int64_at(10), pb::FallbackReason_IsValid));
    group.set_dtypes(rows.text_at(11));
    group.set_graph_cut_nodes(rows.int64_at(12));
  }
  return groups;
}

std::vector<pb::Event> read_metric_snapshots(const HistoryFile& file, int64_t run_id) {
  Statement rows(file, "SELECT replica, step, time_ns, " + kMetricColumns +
                           " FROM metric_snapshots WHERE run_id = ?1 ORDER BY id");
  rows.bind_int64(1, run_id);
  std::vector<pb::Event> snapshots;
  while (rows.next_row()) {
    // A snapshot's metrics are consecutive rows with its replica, step and time.
    const int32_t replica = static_cast<int32_t>(rows.int64_at(0));
    const int64_t step = rows.int64_at(1);
    const int64_t time_ns = rows.int64_at(2);
    if (snapshots.empty() || snapshots.back().replica() != replica || snapshots.back().metrics().step() != step ||
        snapshots.back().metrics().time_ns() != time_ns) {
      pb::Event& event = snapshots.emplace_back();
      event.set_replica(replica);
      event.mutable_metrics()->set_step(step);
      event.mutable_metrics()->set_time_ns(time_ns);
    }
    read_metric_row(rows, 3, snapshots.back().mutable_metrics()->add_metrics());
  }
  return snapshots;
}

pb::MetricsReport read_final_metrics(const HistoryFile& file, int64_t run_id) {
  // The newest row of each name: a metric missing from a later snapshot
  // (published only when it changed) keeps its last value.
  Statement rows(file, "SELECT step, time_ns, " + kMetricColumns + R"sql( FROM metric_snapshots
    WHERE id IN (SELECT MAX(id) FROM metric_snapshots WHERE run_id = ?1 GROUP BY name)
    ORDER BY name)sql");
  rows.bind_int64(1, run_id);
  pb::MetricsReport report;
  while (rows.next_row()) {
    if (rows.int64_at(1) >= report.time_ns()) {
      report.set_step(rows.int64_at(0));
      report.set_time_ns(rows.int64_at(1));
    }
    read_metric_row(rows, 2, report.add_metrics());
  }
  return report;
}

}  // namespace lazyscope::storage
