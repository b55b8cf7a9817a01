#include "query/run_summaries.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "db/history_file.h"
#include "db/run_liveness.h"
#include "query/hot_queries.h"
#include "query/step_median.h"
#include "query/stored_enum.h"

namespace lazyscope::storage {
namespace {

// Column order shared by the SELECT below and summary_from_row().
enum Column {
  kId,
  kName,
  kScriptPath,
  kScriptSha256,
  kScriptText,
  kArgsJson,
  kSettingsJson,
  kBackend,
  kDeviceCount,
  kHost,
  kPid,
  kStartedUnixMs,
  kEndedUnixMs,
  kHeartbeatUnixMs,
  kStatus,
  kExitCode,
  kError,
  kTraceback,
  kTagsJson,
  kSteps,
  kCompiles,
  kCompileNs,
  kExecutions,
  kCacheHits,
  kExecuteNs,
  kFallbacks,
  kLastLoss,
};

constexpr double kNsPerMs = 1e6;

}  // namespace

RunSummaryQuery::RunSummaryQuery(const HistoryFile& file)
    : file_(file),
      json_entries_(file, "SELECT key, value FROM json_each(?1)"),
      step_durations_(file, kSelectStepDurations) {}

std::vector<pb::RunSummary> RunSummaryQuery::all(const RunFilter& filter) {
  // Empty text, empty tag and a zero time each match every run. The status is
  // checked after reading: a stored RUNNING may be observed as CRASHED.
  Statement rows(file_, std::string(kSelectSummaries) + R"sql(
    WHERE (?1 = '' OR instr(r.name, ?1) > 0 OR instr(r.script_path, ?1) > 0)
      AND (?2 = '' OR EXISTS (SELECT 1 FROM json_each(r.tags_json) WHERE value = ?2))
      AND r.started_unix_ms >= ?3
    ORDER BY r.started_unix_ms DESC, r.id DESC)sql");
  rows.bind_text(1, filter.text).bind_text(2, filter.tag).bind_int64(3, filter.since_unix_ms);
  const int64_t now = unix_now_ms();
  std::vector<pb::RunSummary> summaries;
  while (rows.next_row()) {
    pb::RunSummary summary = summary_from_row(rows, now);
    if (filter.status && summary.run().status() != *filter.status) continue;
    summaries.push_back(std::move(summary));
  }
  return summaries;
}

std::optional<pb::RunSummary> RunSummaryQuery::one(int64_t run_id) {
  Statement rows(file_, kSelectOneSummary);
  rows.bind_int64(1, run_id);
  if (!rows.next_row()) return std::nullopt;
  pb::RunSummary summary = summary_from_row(rows, unix_now_ms());
  rows.reset();
  return summary;
}

pb::RunSummary RunSummaryQuery::summary_from_row(const Statement& row, int64_t now_unix_ms) {
  pb::RunSummary summary;
  pb::RunInfo& run = *summary.mutable_run();
  run.set_id(row.int64_at(kId));
  run.set_name(row.text_at(kName));
  run.set_script_path(row.text_at(kScriptPath));
  run.set_script_sha256(row.text_at(kScriptSha256));
  run.set_script_text(row.text_at(kScriptText));
  read_json_values(row.text_at(kArgsJson), [&](std::string, std::string value) { run.add_args(std::move(value)); });
  read_json_values(row.text_at(kSettingsJson), [&](std::string key, std::string value) {
    (*run.mutable_settings())[std::move(key)] = std::move(value);
  });
  run.set_backend(row.text_at(kBackend));
  run.set_device_count(static_cast<int32_t>(row.int64_at(kDeviceCount)));
  run.set_host(row.text_at(kHost));
  run.set_pid(row.int64_at(kPid));
  run.set_started_unix_ms(row.int64_at(kStartedUnixMs));
  run.set_ended_unix_ms(row.int64_at(kEndedUnixMs));
  const int64_t heartbeat = row.int64_at(kHeartbeatUnixMs);
  run.set_status(observed_status(enum_or_unspecified<pb::RunStatus>(row.int64_at(kStatus), pb::RunStatus_IsValid),
                                 run.host(), run.pid(), heartbeat, now_unix_ms));
  // Only the runner's end of the run writes an exit code; before it, or when
  // its process died without one, the column's 0 is not a code.
  if (run.status() != pb::RUN_STATUS_RUNNING && run.status() != pb::RUN_STATUS_CRASHED) {
    run.set_exit_code(static_cast<int32_t>(row.int64_at(kExitCode)));
  }
  run.set_error(row.text_at(kError));
  run.set_traceback(row.text_at(kTraceback));
  read_json_values(row.text_at(kTagsJson), [&](std::string, std::string value) { run.add_tags(std::move(value)); });

  summary.set_steps(row.int64_at(kSteps));
  summary.set_compiles(row.int64_at(kCompiles));
  summary.set_compile_ms(row.double_at(kCompileNs) / kNsPerMs);
  summary.set_executions(row.int64_at(kExecutions));
  summary.set_cache_hits(row.int64_at(kCacheHits));
  summary.set_execute_ms(row.double_at(kExecuteNs) / kNsPerMs);
  summary.set_fallbacks(row.int64_at(kFallbacks));
  if (!row.is_null_at(kLastLoss)) {  // NULL: no loss logged; SQLite stores a NaN as NULL, read back as 'NaN'
    summary.set_last_loss(row.text_at(kLastLoss) == "NaN" ? std::numeric_limits<double>::quiet_NaN()
                                                          : row.double_at(kLastLoss));
  }
  summary.set_median_step_ms(median_step_ms(run.id()));

  // A crashed run never wrote its end: its last heartbeat is the best guess.
  int64_t last_alive = run.ended_unix_ms();
  if (last_alive == 0) {
    last_alive = run.status() == pb::RUN_STATUS_RUNNING ? now_unix_ms : heartbeat;
  }
  summary.set_wall_ms(static_cast<double>(std::max<int64_t>(last_alive - run.started_unix_ms(), 0)));
  return summary;
}

double RunSummaryQuery::median_step_ms(int64_t run_id) {
  std::vector<int64_t> warm;
  std::vector<int64_t> all;
  step_durations_.bind_int64(1, run_id);
  while (step_durations_.next_row()) {
    const int64_t duration = step_durations_.int64_at(0);
    all.push_back(duration);
    if (step_durations_.int64_at(1) != 0) warm.push_back(duration);
  }
  // A run where every step compiled has no warm steps; all of them beat none.
  return median_ms(warm.empty() ? std::move(all) : std::move(warm));
}

template <typename AddValue> void RunSummaryQuery::read_json_values(const std::string& json, AddValue add_value) {
  json_entries_.bind_text(1, json);
  while (json_entries_.next_row()) {
    add_value(json_entries_.text_at(0), json_entries_.text_at(1));
  }
}

}  // namespace lazyscope::storage
