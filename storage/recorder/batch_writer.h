// Stores batches of pending records for one run. Owns a prepared statement per
// row kind, reused across batches; lives on the recorder's writer thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "db/statement.h"
#include "recorder/pending_record.h"
#include "recorder/row_inserter.h"

namespace lazyscope::storage {

class HistoryFile;

class BatchWriter {
 public:
  BatchWriter(const HistoryFile& file, int64_t run_id);

  // Writes `batch` in one transaction, and the heartbeat when given: all of it
  // or none (HistoryError).
  void write(std::span<const PendingRecord> batch, std::optional<int64_t> heartbeat_unix_ms);

  // The same inside a write transaction the caller holds (an import stores
  // the run row and all its records in one).
  void write_records(std::span<const PendingRecord> batch);

 private:
  void write_event(const pb::Event& event);
  void write_metrics(int replica, const pb::MetricSnapshotEvent& snapshot);
  void write_kernel_profile(int replica, const pb::KernelProfileEvent& profile);
  void write_machine_peak(int replica, const pb::MachinePeakEvent& peak);
  void write_step(int replica, const pb::StepEvent& step);
  void write_compile(int replica, const pb::CompileEvent& compile);
  void write_execute(int replica, const pb::ExecuteEvent& execute);
  void write_fallback(int replica, const pb::FallbackEvent& fallback);
  void write_transfer(int replica, const pb::TransferEvent& transfer);
  void write_scalar(int replica, const pb::ScalarEvent& scalar);
  void write_output(const OutputChunk& chunk);
  void write_end(const RunEnd& end);
  void write_records_unflushed(std::span<const PendingRecord> batch);

  const HistoryFile& file_;
  const int64_t run_id_;
  // The rows every step adds go through multi-row inserts (row_inserter.h);
  // the rare ones, and the upserts whose order across rows matters, one by one.
  RowInserter insert_step_;
  Statement insert_graph_;
  Statement insert_compilation_;
  RowInserter insert_execution_;
  Statement insert_fallback_;
  RowInserter insert_transfer_;
  RowInserter insert_scalar_;
  Statement insert_output_;
  RowInserter insert_metric_;
  Statement upsert_kernel_profile_;
  Statement upsert_kernel_;
  Statement upsert_machine_peak_;
  Statement update_heartbeat_;
  Statement update_end_;
};

}  // namespace lazyscope::storage
