#include "query/history_reader.h"

#include <string>

#include "db/history_file.h"
#include "db/statement.h"
#include "db/transaction.h"
#include "query/event_rows.h"
#include "query/run_bundle_query.h"
#include "query/run_events.h"
#include "query/run_graphs.h"
#include "query/run_kernels.h"
#include "query/run_summaries.h"
#include "query/run_timeline.h"

namespace lazyscope::storage {

namespace {

// A history from an older LazyScope is migrated forward when first read, so
// that upgrading does not make every read command fail until the next
// recording. A file the user cannot write keeps OlderSchemaError's message.
std::unique_ptr<HistoryFile> open_for_reading(const std::string& path) {
  try {
    return std::make_unique<HistoryFile>(path, OpenMode::kReadOnly);
  } catch (const OlderSchemaError& older) {
    try {
      HistoryFile migrate(path, OpenMode::kReadWrite);
    } catch (const HistoryError&) {
      throw older;
    }
    return std::make_unique<HistoryFile>(path, OpenMode::kReadOnly);
  }
}

}  // namespace

HistoryReader::HistoryReader(const std::string& path) : file_(open_for_reading(path)) {}

HistoryReader::~HistoryReader() = default;

std::vector<pb::RunSummary> HistoryReader::list_runs(const RunFilter& filter) const {
  std::lock_guard lock(mutex_);
  Transaction snapshot(*file_, Transaction::Kind::kRead);
  std::vector<pb::RunSummary> runs = RunSummaryQuery(*file_).all(filter);
  snapshot.commit();
  return runs;
}

std::optional<pb::RunSummary> HistoryReader::run_summary(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  Transaction snapshot(*file_, Transaction::Kind::kRead);
  std::optional<pb::RunSummary> summary = RunSummaryQuery(*file_).one(run_id);
  snapshot.commit();
  return summary;
}

std::optional<int64_t> HistoryReader::last_run_id() const {
  std::lock_guard lock(mutex_);
  // Same order as list_runs(): the run started last.
  Statement newest(*file_, "SELECT id FROM runs ORDER BY started_unix_ms DESC, id DESC LIMIT 1");
  if (!newest.next_row()) return std::nullopt;
  const int64_t run_id = newest.int64_at(0);
  newest.reset();
  return run_id;
}

std::optional<int64_t> HistoryReader::find_run(const std::string& ref) const {
  if (ref == "last") return last_run_id();
  std::lock_guard lock(mutex_);
  const bool all_digits = !ref.empty() && ref.size() < 19 && ref.find_first_not_of("0123456789") == std::string::npos;
  if (all_digits) {
    Statement by_id(*file_, "SELECT id FROM runs WHERE id = ?1");
    by_id.bind_int64(1, std::stoll(ref));
    if (by_id.next_row()) {
      const int64_t run_id = by_id.int64_at(0);
      by_id.reset();
      return run_id;
    }
  }
  Statement by_name(*file_, R"sql(
    SELECT id FROM runs WHERE name = ?1 ORDER BY started_unix_ms DESC, id DESC LIMIT 1)sql");
  by_name.bind_text(1, ref);
  if (!by_name.next_row()) return std::nullopt;
  const int64_t run_id = by_name.int64_at(0);
  by_name.reset();
  return run_id;
}

std::vector<pb::CompileEvent> HistoryReader::compilations(int64_t run_id, bool with_ir) const {
  std::lock_guard lock(mutex_);
  // The graphs table has no column named like a compilations column, so the
  // shared column list needs no table prefix in this join.
  Statement rows(*file_, "SELECT " + kCompileColumns +
                             (with_ir ? R"sql(, g.ir, g.program_text
    FROM compilations AS c
    LEFT JOIN graphs AS g ON g.run_id = c.run_id AND g.hash = c.graph_hash)sql"
                                      : R"sql(, NULL, NULL
    FROM compilations AS c)sql") +
                             R"sql(
    WHERE c.run_id = ?1
    ORDER BY c.start_ns, c.id)sql");
  rows.bind_int64(1, run_id);
  std::vector<pb::CompileEvent> compiles;
  while (rows.next_row()) {
    pb::CompileEvent& compile = compiles.emplace_back();
    const int ir = read_compile_row(rows, 0, &compile);
    if (!rows.is_null_at(ir)) {
      if (!compile.mutable_graph()->ParseFromString(rows.blob_at(ir))) {
        throw HistoryError(file_->path() + ": the stored graph " + std::to_string(compile.graph_hash()) + " of run " +
                           std::to_string(run_id) + " is corrupt");
      }
      compile.set_program_text(rows.text_at(ir + 1));
    }
  }
  return compiles;
}

std::vector<pb::StepEvent> HistoryReader::steps(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  Statement rows(*file_, "SELECT " + kStepColumns + R"sql( FROM steps
    WHERE run_id = ?1 AND replica = 0
    ORDER BY step, start_ns)sql");
  rows.bind_int64(1, run_id);
  std::vector<pb::StepEvent> steps;
  while (rows.next_row()) read_step_row(rows, 0, &steps.emplace_back());
  return steps;
}

std::vector<pb::Event> HistoryReader::replica_steps(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  Statement rows(*file_, "SELECT replica, " + kStepColumns + R"sql( FROM steps
    WHERE run_id = ?1
    ORDER BY replica, step, start_ns)sql");
  rows.bind_int64(1, run_id);
  std::vector<pb::Event> steps;
  while (rows.next_row()) {
    pb::Event& e = steps.emplace_back();
    e.set_replica(static_cast<int32_t>(rows.int64_at(0)));
    read_step_row(rows, 1, e.mutable_step());
  }
  return steps;
}

pb::StepSeries HistoryReader::step_series(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_step_series(*file_, run_id);
}

std::vector<std::string> HistoryReader::scalar_names(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_scalar_names(*file_, run_id);
}

pb::ScalarSeries HistoryReader::scalar_series(int64_t run_id, const std::string& name) const {
  std::lock_guard lock(mutex_);
  return read_scalar_series(*file_, run_id, name);
}

std::vector<pb::ExecuteEvent> HistoryReader::executions(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_executions(*file_, run_id);
}

std::vector<pb::FallbackEvent> HistoryReader::fallbacks(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_fallbacks(*file_, run_id);
}

std::vector<pb::TransferEvent> HistoryReader::transfers(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_transfers(*file_, run_id);
}

std::vector<pb::FallbackGroup> HistoryReader::fallback_groups(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_fallback_groups(*file_, run_id);
}

std::vector<pb::Event> HistoryReader::metric_snapshots(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_metric_snapshots(*file_, run_id);
}

pb::MetricsReport HistoryReader::final_metrics(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_final_metrics(*file_, run_id);
}

std::optional<pb::RunBundle> HistoryReader::run_bundle(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  Transaction snapshot(*file_, Transaction::Kind::kRead);
  std::optional<pb::RunBundle> bundle = read_run_bundle(*file_, run_id);
  snapshot.commit();
  return bundle;
}

pb::RunOutput HistoryReader::output(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_output(*file_, run_id);
}

std::optional<pb::RunTimeline> HistoryReader::timeline(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  Transaction snapshot(*file_, Transaction::Kind::kRead);  // one snapshot of a run still recording
  std::optional<pb::RunTimeline> timeline = read_run_timeline(*file_, run_id);
  snapshot.commit();
  return timeline;
}

std::vector<pb::GraphInfo> HistoryReader::graphs(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  return read_graphs(*file_, run_id);
}

std::optional<pb::IrGraph> HistoryReader::graph_ir(int64_t run_id, uint64_t hash) const {
  std::lock_guard lock(mutex_);
  return read_graph_ir(*file_, run_id, hash);
}

std::optional<std::string> HistoryReader::program_text(int64_t run_id, uint64_t hash) const {
  std::lock_guard lock(mutex_);
  return read_program_text(*file_, run_id, hash);
}

pb::KernelReport HistoryReader::kernel_report(int64_t run_id) const {
  std::lock_guard lock(mutex_);
  Transaction snapshot(*file_, Transaction::Kind::kRead);  // the profile and the IR of one moment
  pb::KernelReport report = read_kernel_report(*file_, run_id);
  snapshot.commit();
  return report;
}

}  // namespace lazyscope::storage
