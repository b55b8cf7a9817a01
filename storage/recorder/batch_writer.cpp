#include "recorder/batch_writer.h"

#include <cmath>
#include <string>

#include "db/json_text.h"
#include "db/transaction.h"

namespace lazyscope::storage {

BatchWriter::BatchWriter(const HistoryFile& file, int64_t run_id)
    : file_(file),
      run_id_(run_id),
      insert_step_(file, R"sql(
        INSERT INTO steps (run_id, replica, step, start_ns, end_ns, trace_ns, compile_ns,
                           execute_ns, transfer_ns, host_wait_ns, collective_ns, collective_bytes))sql",
                   12),
      // A graph recompiled after eviction is already stored: keep the first copy.
      insert_graph_(file, R"sql(
        INSERT OR IGNORE INTO graphs (run_id, hash, node_count, ir, program_text)
        VALUES (?1, ?2, ?3, ?4, ?5))sql"),
      insert_compilation_(file, R"sql(
        INSERT INTO compilations (run_id, replica, step, graph_hash, start_ns, duration_ns,
                                  reason_kind, reason, compared_with, source_file, source_line,
                                  source_function)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12))sql"),
      insert_execution_(file, R"sql(
        INSERT INTO executions (run_id, replica, step, graph_hash, start_ns, duration_ns, cause,
                                cache_hit, node_count, source_file, source_line, source_function))sql",
                        12),
      insert_fallback_(file, R"sql(
        INSERT INTO fallbacks (run_id, replica, step, op, start_ns, duration_ns, bytes,
                               source_file, source_line, source_function, reason,
                               graph_cut_nodes, dtype)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13))sql"),
      insert_transfer_(file, R"sql(
        INSERT INTO transfers (run_id, replica, step, to_device, start_ns, duration_ns, bytes))sql",
                       7),
      insert_scalar_(file, "INSERT INTO scalars (run_id, replica, step, name, value)", 5),
      insert_output_(file, R"sql(
        INSERT INTO output (run_id, seq, stream, text) VALUES (?1, ?2, ?3, ?4))sql"),
      insert_metric_(file, R"sql(
        INSERT INTO metric_snapshots (run_id, replica, step, time_ns, name, is_counter, value,
                                      count, total_ms, p50_ms, p90_ms, p99_ms))sql",
                     12),
      // Profiles are cumulative: the latest event of a (replica, graph) holds
      // the totals, so it replaces the row rather than adding one.
      upsert_kernel_profile_(file, R"sql(
        INSERT INTO kernel_profiles (run_id, replica, graph_hash, step, executions, peak_bytes)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6)
        ON CONFLICT (run_id, replica, graph_hash) DO UPDATE
          SET step = excluded.step, executions = excluded.executions, peak_bytes = excluded.peak_bytes)sql"),
      upsert_kernel_(file, R"sql(
        INSERT INTO kernel_profile_kernels (run_id, replica, graph_hash, kernel_index, name, nodes_json,
                                            flops, bytes, samples, total_ns, code)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
        ON CONFLICT (run_id, replica, graph_hash, kernel_index) DO UPDATE
          SET name = excluded.name, nodes_json = excluded.nodes_json, flops = excluded.flops,
              bytes = excluded.bytes, samples = excluded.samples, total_ns = excluded.total_ns,
              code = excluded.code)sql"),
      upsert_machine_peak_(file, R"sql(
        INSERT INTO machine_peaks (run_id, replica, gemm_gflops, stream_gbps, threads, isa, cache_gbps, cache_bytes)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
        ON CONFLICT (run_id, replica) DO UPDATE
          SET gemm_gflops = excluded.gemm_gflops, stream_gbps = excluded.stream_gbps,
              threads = excluded.threads, isa = excluded.isa, cache_gbps = excluded.cache_gbps,
              cache_bytes = excluded.cache_bytes)sql"),
      update_heartbeat_(file, "UPDATE runs SET heartbeat_unix_ms = ?2 WHERE id = ?1"),
      update_end_(file, R"sql(
        UPDATE runs SET status = ?2, exit_code = ?3, error = ?4, traceback = ?5,
                        ended_unix_ms = ?6, heartbeat_unix_ms = ?6
        WHERE id = ?1)sql") {}

void BatchWriter::write(std::span<const PendingRecord> batch, std::optional<int64_t> heartbeat_unix_ms) {
  Transaction transaction(file_, Transaction::Kind::kWrite);
  write_records(batch);
  if (heartbeat_unix_ms) {
    update_heartbeat_.bind_int64(1, run_id_).bind_int64(2, *heartbeat_unix_ms).execute();
  }
  transaction.commit();
}

void BatchWriter::write_records(std::span<const PendingRecord> batch) {
  RowInserter* const inserters[] = {&insert_step_, &insert_execution_, &insert_transfer_, &insert_scalar_,
                                    &insert_metric_};
  try {
    write_records_unflushed(batch);
    for (RowInserter* inserter : inserters) inserter->flush();
  } catch (...) {
    // The caller's transaction rolls back; rows still waiting belong to it.
    for (RowInserter* inserter : inserters) inserter->discard();
    throw;
  }
}

void BatchWriter::write_records_unflushed(std::span<const PendingRecord> batch) {
  for (const PendingRecord& record : batch) {
    if (const auto* event = std::get_if<pb::Event>(&record)) {
      write_event(*event);
    } else if (const auto* chunk = std::get_if<OutputChunk>(&record)) {
      write_output(*chunk);
    } else {
      write_end(std::get<RunEnd>(record));
    }
  }
}

void BatchWriter::write_event(const pb::Event& event) {
  const int replica = event.replica();
  switch (event.kind_case()) {
    case pb::Event::kStep: write_step(replica, event.step()); break;
    case pb::Event::kCompile: write_compile(replica, event.compile()); break;
    case pb::Event::kExecute: write_execute(replica, event.execute()); break;
    case pb::Event::kFallback: write_fallback(replica, event.fallback()); break;
    case pb::Event::kTransfer: write_transfer(replica, event.transfer()); break;
    case pb::Event::kScalar: write_scalar(replica, event.scalar()); break;
    case pb::Event::kMetrics: write_metrics(replica, event.metrics()); break;
    case pb::Event::kKernelProfile: write_kernel_profile(replica, event.kernel_profile()); break;
    case pb::Event::kMachinePeak: write_machine_peak(replica, event.machine_peak()); break;
    case pb::Event::KIND_NOT_SET: break;  // nothing to store
  }
}

void BatchWriter::write_step(int replica, const pb::StepEvent& step) {
  insert_step_.bind_int64(1, run_id_)
      .bind_int64(2, replica)
      .bind_int64(3, step.step())
      .bind_int64(4, step.start_ns())
      .bind_int64(5, step.end_ns())
      .bind_int64(6, step.trace_ns())
      .bind_int64(7, step.compile_ns())
      .bind_int64(8, step.execute_ns())
      .bind_int64(9, step.transfer_ns())
      .bind_int64(10, step.host_wait_ns())
      .bind_int64(11, step.collective_ns())
      .bind_int64(12, step.collective_bytes())
      .add_row();
}

void BatchWriter::write_compile(int replica, const pb::CompileEvent& compile) {
  // The compile row always names its graph; the IR is stored when the engine
  // sent it (it may leave it out, e.g. for a graph too large to keep).
  if (compile.has_graph() || !compile.program_text().empty()) {
    insert_graph_.bind_int64(1, run_id_)
        .bind_hash(2, compile.graph_hash())
        .bind_int64(3, compile.graph().nodes_size())
        .bind_blob(4, compile.graph().SerializeAsString())
        .bind_text(5, compile.program_text())
        .execute();
  }
  insert_compilation_.bind_int64(1, run_id_)
      .bind_int64(2, replica)
      .bind_int64(3, compile.step())
      .bind_hash(4, compile.graph_hash())
      .bind_int64(5, compile.start_ns())
      .bind_int64(6, compile.duration_ns())
      .bind_int64(7, compile.reason_kind())
      .bind_text(8, compile.reason())
      .bind_hash(9, compile.compared_with())
      .bind_text(10, compile.source().file())
      .bind_int64(11, compile.source().line())
      .bind_text(12, compile.source().function())
      .execute();
}

void BatchWriter::write_execute(int replica, const pb::ExecuteEvent& execute) {
  insert_execution_.bind_int64(1, run_id_)
      .bind_int64(2, replica)
      .bind_int64(3, execute.step())
      .bind_hash(4, execute.graph_hash())
      .bind_int64(5, execute.start_ns())
      .bind_int64(6, execute.duration_ns())
      .bind_int64(7, execute.cause())
      .bind_int64(8, execute.cache_hit() ? 1 : 0)
      .bind_int64(9, execute.node_count())
      .bind_text(10, execute.source().file())
      .bind_int64(11, execute.source().line())
      .bind_text(12, execute.source().function())
      .add_row();
}

void BatchWriter::write_fallback(int replica, const pb::FallbackEvent& fallback) {
  insert_fallback_.bind_int64(1, run_id_)
      .bind_int64(2, replica)
      .bind_int64(3, fallback.step())
      .bind_text(4, fallback.op())
      .bind_int64(5, fallback.start_ns())
      .bind_int64(6, fallback.duration_ns())
      .bind_int64(7, fallback.bytes())
      .bind_text(8, fallback.source().file())
      .bind_int64(9, fallback.source().line())
      .bind_text(10, fallback.source().function())
      .bind_int64(11, fallback.reason())
      .bind_int64(12, fallback.graph_cut_nodes())
      .bind_text(13, fallback.dtype())
      .execute();
}

void BatchWriter::write_metrics(int replica, const pb::MetricSnapshotEvent& snapshot) {
  // SQLite stores NaN as NULL, which these NOT NULL columns refuse (failing
  // the whole batch): a percentile of no samples is stored as 0.
  const auto finite = [](double ms) { return std::isnan(ms) ? 0.0 : ms; };
  for (const pb::MetricValue& metric : snapshot.metrics()) {
    insert_metric_.bind_int64(1, run_id_)
        .bind_int64(2, replica)
        .bind_int64(3, snapshot.step())
        .bind_int64(4, snapshot.time_ns())
        .bind_text(5, metric.name())
        .bind_int64(6, metric.is_counter() ? 1 : 0)
        .bind_int64(7, metric.value())
        .bind_int64(8, metric.count())
        .bind_double(9, finite(metric.total_ms()))
        .bind_double(10, finite(metric.p50_ms()))
        .bind_double(11, finite(metric.p90_ms()))
        .bind_double(12, finite(metric.p99_ms()))
        .add_row();
  }
}

void BatchWriter::write_kernel_profile(int replica, const pb::KernelProfileEvent& profile) {
  upsert_kernel_profile_.bind_int64(1, run_id_)
      .bind_int64(2, replica)
      .bind_hash(3, profile.graph_hash())
      .bind_int64(4, profile.step())
      .bind_int64(5, profile.executions())
      .bind_int64(6, profile.peak_bytes())
      .execute();
  for (const pb::KernelProfile& kernel : profile.kernels()) {
    upsert_kernel_.bind_int64(1, run_id_)
        .bind_int64(2, replica)
        .bind_hash(3, profile.graph_hash())
        .bind_int64(4, kernel.index())
        .bind_text(5, kernel.name())
        .bind_text(6, json_number_array(kernel.nodes()))
        .bind_int64(7, kernel.flops())
        .bind_int64(8, kernel.bytes())
        .bind_int64(9, kernel.samples())
        .bind_int64(10, kernel.total_ns())
        .bind_text(11, kernel.code())
        .execute();
  }
}

void BatchWriter::write_machine_peak(int replica, const pb::MachinePeakEvent& peak) {
  // NaN would be NULL in these NOT NULL columns and fail the batch: unknown is 0.
  const auto finite = [](double v) { return std::isfinite(v) ? v : 0.0; };
  upsert_machine_peak_.bind_int64(1, run_id_)
      .bind_int64(2, replica)
      .bind_double(3, finite(peak.gemm_gflops()))
      .bind_double(4, finite(peak.stream_gbps()))
      .bind_int64(5, peak.threads())
      .bind_text(6, peak.isa())
      .bind_double(7, finite(peak.cache_gbps()))
      .bind_int64(8, std::max<int64_t>(peak.cache_bytes(), 0))
      .execute();
}

void BatchWriter::write_transfer(int replica, const pb::TransferEvent& transfer) {
  insert_transfer_.bind_int64(1, run_id_)
      .bind_int64(2, replica)
      .bind_int64(3, transfer.step())
      .bind_int64(4, transfer.to_device() ? 1 : 0)
      .bind_int64(5, transfer.start_ns())
      .bind_int64(6, transfer.duration_ns())
      .bind_int64(7, transfer.bytes())
      .add_row();
}

void BatchWriter::write_scalar(int replica, const pb::ScalarEvent& scalar) {
  insert_scalar_.bind_int64(1, run_id_)
      .bind_int64(2, replica)
      .bind_int64(3, scalar.step())
      .bind_text(4, scalar.name())
      .bind_double(5, scalar.value())
      .add_row();
}

void BatchWriter::write_output(const OutputChunk& chunk) {
  insert_output_.bind_int64(1, run_id_)
      .bind_int64(2, chunk.seq)
      .bind_text(3, chunk.stream)
      .bind_text(4, chunk.text)
      .execute();
}

void BatchWriter::write_end(const RunEnd& end) {
  update_end_.bind_int64(1, run_id_)
      .bind_int64(2, end.status)
      .bind_int64(3, end.exit_code)
      .bind_text(4, end.error)
      .bind_text(5, end.traceback)
      .bind_int64(6, end.ended_unix_ms)
      .execute();
}

}  // namespace lazyscope::storage
