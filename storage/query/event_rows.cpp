#include "query/event_rows.h"

#include <limits>

#include "db/statement.h"
#include "query/stored_enum.h"

namespace lazyscope::storage {

void read_source(const Statement& row, int first, pb::SourceLocation* source) {
  source->set_file(row.text_at(first));
  source->set_line(static_cast<int32_t>(row.int64_at(first + 1)));
  source->set_function(row.text_at(first + 2));
}

int read_step_row(const Statement& row, int c, pb::StepEvent* step) {
  step->set_step(row.int64_at(c));
  step->set_start_ns(row.int64_at(c + 1));
  step->set_end_ns(row.int64_at(c + 2));
  step->set_trace_ns(row.int64_at(c + 3));
  step->set_compile_ns(row.int64_at(c + 4));
  step->set_execute_ns(row.int64_at(c + 5));
  step->set_transfer_ns(row.int64_at(c + 6));
  step->set_host_wait_ns(row.int64_at(c + 7));
  step->set_collective_ns(row.int64_at(c + 8));
  step->set_collective_bytes(row.int64_at(c + 9));
  return c + 10;
}

int read_compile_row(const Statement& row, int c, pb::CompileEvent* compile) {
  compile->set_step(row.int64_at(c));
  compile->set_graph_hash(row.hash_at(c + 1));
  compile->set_start_ns(row.int64_at(c + 2));
  compile->set_duration_ns(row.int64_at(c + 3));
  compile->set_reason_kind(
      enum_or_unspecified<pb::CompileReasonKind>(row.int64_at(c + 4), pb::CompileReasonKind_IsValid));
  compile->set_reason(row.text_at(c + 5));
  compile->set_compared_with(row.hash_at(c + 6));
  read_source(row, c + 7, compile->mutable_source());
  return c + 10;
}

int read_execution_row(const Statement& row, int c, pb::ExecuteEvent* execution) {
  execution->set_step(row.int64_at(c));
  execution->set_graph_hash(row.hash_at(c + 1));
  execution->set_start_ns(row.int64_at(c + 2));
  execution->set_duration_ns(row.int64_at(c + 3));
  execution->set_cause(enum_or_unspecified<pb::SyncCause>(row.int64_at(c + 4), pb::SyncCause_IsValid));
  execution->set_cache_hit(row.int64_at(c + 5) != 0);
  execution->set_node_count(static_cast<int32_t>(row.int64_at(c + 6)));
  read_source(row, c + 7, execution->mutable_source());
  return c + 10;
}

int read_fallback_row(const Statement& row, int c, pb::FallbackEvent* fallback) {
  fallback->set_step(row.int64_at(c));
  fallback->set_op(row.text_at(c + 1));
  fallback->set_start_ns(row.int64_at(c + 2));
  fallback->set_duration_ns(row.int64_at(c + 3));
  fallback->set_bytes(row.int64_at(c + 4));
  read_source(row, c + 5, fallback->mutable_source());
  fallback->set_reason(enum_or_unspecified<pb::FallbackReason>(row.int64_at(c + 8), pb::FallbackReason_IsValid));
  fallback->set_graph_cut_nodes(static_cast<int32_t>(row.int64_at(c + 9)));
  fallback->set_dtype(row.text_at(c + 10));
  return c + 11;
}

int read_transfer_row(const Statement& row, int c, pb::TransferEvent* transfer) {
  transfer->set_step(row.int64_at(c));
  transfer->set_to_device(row.int64_at(c + 1) != 0);
  transfer->set_start_ns(row.int64_at(c + 2));
  transfer->set_duration_ns(row.int64_at(c + 3));
  transfer->set_bytes(row.int64_at(c + 4));
  return c + 5;
}

int read_scalar_row(const Statement& row, int c, pb::ScalarEvent* scalar) {
  scalar->set_step(row.int64_at(c));
  scalar->set_name(row.text_at(c + 1));
  // NULL stands for NaN (see the schema).
  scalar->set_value(row.is_null_at(c + 2) ? std::numeric_limits<double>::quiet_NaN() : row.double_at(c + 2));
  return c + 3;
}

int read_metric_row(const Statement& row, int c, pb::MetricValue* metric) {
  metric->set_name(row.text_at(c));
  metric->set_is_counter(row.int64_at(c + 1) != 0);
  metric->set_value(row.int64_at(c + 2));
  metric->set_count(row.int64_at(c + 3));
  metric->set_total_ms(row.double_at(c + 4));
  metric->set_p50_ms(row.double_at(c + 5));
  metric->set_p90_ms(row.double_at(c + 6));
  metric->set_p99_ms(row.double_at(c + 7));
  return c + 8;
}

}  // namespace lazyscope::storage
