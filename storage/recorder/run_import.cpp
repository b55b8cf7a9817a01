#include "recorder/run_import.h"

#include <algorithm>
#include <set>
#include <vector>

#include "db/history_file.h"
#include "db/json_text.h"
#include "db/statement.h"
#include "db/transaction.h"
#include "recorder/batch_writer.h"
#include "recorder/run_row.h"

namespace lazyscope::storage {
namespace {

bool name_taken(const HistoryFile& file, const std::string& name) {
  Statement query(file, "SELECT 1 FROM runs WHERE name = ?1 LIMIT 1");
  query.bind_text(1, name);
  const bool taken = query.next_row();
  query.reset();
  return taken;
}

std::string free_name(const HistoryFile& file, const std::string& name) {
  if (!name_taken(file, name)) return name;
  for (int n = 1;; ++n) {
    std::string candidate = name + (n == 1 ? std::string(" (imported)") : " (imported " + std::to_string(n) + ")");
    if (!name_taken(file, candidate)) return candidate;
  }
}

int64_t insert_finished_run(const HistoryFile& file, const pb::RunInfo& info, const std::string& name,
                            int64_t heartbeat_unix_ms) {
  Statement insert(file, std::string("INSERT INTO runs (name, ") + kRunScriptColumns + R"sql(,
                      host, pid, started_unix_ms, ended_unix_ms, heartbeat_unix_ms, status,
                      exit_code, error, traceback, tags_json)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
    RETURNING id)sql");
  insert.bind_text(1, name);
  bind_run_script_columns(insert, 2, info)
      .bind_text(9, info.host())
      .bind_int64(10, info.pid())
      .bind_int64(11, info.started_unix_ms())
      .bind_int64(12, info.ended_unix_ms())
      .bind_int64(13, heartbeat_unix_ms)
      .bind_int64(14, info.status())
      .bind_int64(15, info.exit_code())
      .bind_text(16, info.error())
      .bind_text(17, info.traceback())
      .bind_text(18, json_array(info.tags()));
  return insert_returning_id(file, insert, "the imported run");
}

}  // namespace

ImportedRun import_run_bundle(const std::string& history_path, const pb::RunBundle& bundle) {
  const pb::RunInfo& info = bundle.run();
  // A run still recording when exported would read as running forever here.
  if (info.status() == pb::RUN_STATUS_RUNNING || info.status() == pb::RUN_STATUS_UNSPECIFIED) {
    throw HistoryError(history_path + ": cannot import run '" + info.name() +
                       "': the bundle holds a run that had not ended");
  }
  HistoryFile file(history_path, OpenMode::kReadWrite);
  Transaction transaction(file, Transaction::Kind::kWrite);
  ImportedRun imported;
  imported.name = free_name(file, info.name());
  imported.renamed = imported.name != info.name();
  const int64_t heartbeat = bundle.heartbeat_unix_ms() != 0 ? bundle.heartbeat_unix_ms() : info.ended_unix_ms();
  imported.run_id = insert_finished_run(file, info, imported.name, heartbeat);

  Statement insert_graph(file, R"sql(
    INSERT OR IGNORE INTO graphs (run_id, hash, node_count, ir, program_text)
    VALUES (?1, ?2, ?3, ?4, ?5))sql");
  for (const pb::StoredGraph& graph : bundle.graphs()) {
    insert_graph.bind_int64(1, imported.run_id)
        .bind_hash(2, graph.hash())
        .bind_int64(3, graph.node_count())
        .bind_blob(4, graph.ir())
        .bind_text(5, graph.program_text())
        .execute();
  }
  // The events and output go through the recorder's own writer, so an
  // imported row is stored exactly as a recorded one.
  std::vector<PendingRecord> records;
  records.reserve(static_cast<size_t>(bundle.events_size() + bundle.output_size()));
  for (const pb::Event& event : bundle.events()) {
    // Compiles in a bundle carry no IR (it is in graphs), so the writer
    // stores no graph row of its own for them.
    records.emplace_back(event);
  }
  for (const pb::OutputChunk& chunk : bundle.output()) {
    records.emplace_back(OutputChunk{chunk.seq(), chunk.stream(), chunk.text()});
  }
  BatchWriter(file, imported.run_id).write_records(records);
  transaction.commit();
  return imported;
}

void merge_run_bundle(const std::string& history_path, int64_t run_id, const pb::RunBundle& bundle) {
  const pb::RunInfo& info = bundle.run();
  if (info.status() == pb::RUN_STATUS_RUNNING || info.status() == pb::RUN_STATUS_UNSPECIFIED) {
    throw HistoryError(history_path + ": cannot merge run '" + info.name() +
                       "': the bundle holds a run that had not ended");
  }
  HistoryFile file(history_path, OpenMode::kReadWrite);
  Transaction transaction(file, Transaction::Kind::kWrite);
  Statement run(file, "SELECT status, ended_unix_ms, device_count FROM runs WHERE id = ?1");
  run.bind_int64(1, run_id);
  if (!run.next_row())
    throw HistoryError(history_path + ": there is no run " + std::to_string(run_id) + " to merge into");
  const int64_t status = run.int64_at(0);
  const int64_t ended = run.int64_at(1);
  const int64_t device_count = run.int64_at(2);
  run.reset();

  std::set<int32_t> replicas;
  for (const pb::Event& event : bundle.events()) replicas.insert(event.replica());
  Statement present(file, "SELECT 1 FROM steps WHERE run_id = ?1 AND replica = ?2 LIMIT 1");
  for (int32_t replica : replicas) {
    present.bind_int64(1, run_id).bind_int64(2, replica);
    const bool taken = present.next_row();
    present.reset();
    if (taken) {
      throw HistoryError(history_path + ": run " + std::to_string(run_id) + " already has steps of replica " +
                         std::to_string(replica) + "; a bundle merges the ranks of another node, once");
    }
  }

  Statement insert_graph(file, R"sql(
    INSERT OR IGNORE INTO graphs (run_id, hash, node_count, ir, program_text)
    VALUES (?1, ?2, ?3, ?4, ?5))sql");
  for (const pb::StoredGraph& graph : bundle.graphs()) {
    insert_graph.bind_int64(1, run_id)
        .bind_hash(2, graph.hash())
        .bind_int64(3, graph.node_count())
        .bind_blob(4, graph.ir())
        .bind_text(5, graph.program_text())
        .execute();
  }
  // Output goes after the run's own, in the bundle's order.
  Statement last_seq(file, "SELECT COALESCE(MAX(seq) + 1, 0) FROM output WHERE run_id = ?1");
  last_seq.bind_int64(1, run_id);
  last_seq.next_row();
  const int64_t first_seq = last_seq.int64_at(0);
  last_seq.reset();
  std::vector<PendingRecord> records;
  records.reserve(static_cast<size_t>(bundle.events_size() + bundle.output_size()));
  for (const pb::Event& event : bundle.events()) records.emplace_back(event);
  for (const pb::OutputChunk& chunk : bundle.output()) {
    records.emplace_back(OutputChunk{first_seq + chunk.seq(), chunk.stream(), chunk.text()});
  }
  BatchWriter(file, run_id).write_records(records);

  const bool bundle_failed = info.status() != pb::RUN_STATUS_SUCCEEDED;
  const bool run_failed = status != pb::RUN_STATUS_SUCCEEDED;
  Statement update(file, R"sql(
    UPDATE runs SET ended_unix_ms = ?2, device_count = ?3,
      status = CASE WHEN ?4 THEN ?5 ELSE status END,
      exit_code = CASE WHEN ?4 THEN ?6 ELSE exit_code END,
      error = CASE WHEN ?4 THEN ?7 ELSE error END
    WHERE id = ?1)sql");
  int32_t max_replica = 0;
  for (int32_t replica : replicas) max_replica = std::max(max_replica, replica);
  update.bind_int64(1, run_id)
      .bind_int64(2, std::max<int64_t>(ended, info.ended_unix_ms()))
      .bind_int64(3, std::max<int64_t>(device_count, std::max<int64_t>(info.device_count(), max_replica + 1)))
      .bind_int64(4, bundle_failed && !run_failed ? 1 : 0)
      .bind_int64(5, info.status())
      .bind_int64(6, info.exit_code())
      .bind_text(7, info.error())
      .execute();
  transaction.commit();
}

}  // namespace lazyscope::storage
