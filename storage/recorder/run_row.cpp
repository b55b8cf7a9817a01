#include "recorder/run_row.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "db/history_file.h"
#include "db/json_text.h"
#include "db/run_liveness.h"
#include "db/statement.h"

namespace lazyscope::storage {
namespace {

std::string settings_json(const pb::RunInfo& info) {
  // A protobuf map has no stable order; sort so equal settings store equal text.
  std::vector<std::pair<std::string, std::string>> entries(info.settings().begin(), info.settings().end());
  std::sort(entries.begin(), entries.end());
  return json_object(entries);
}

}  // namespace

Statement& bind_run_script_columns(Statement& insert, int first, const pb::RunInfo& info) {
  return insert.bind_text(first, info.script_path())
      .bind_text(first + 1, info.script_sha256())
      .bind_text(first + 2, info.script_text())
      .bind_text(first + 3, json_array(info.args()))
      .bind_text(first + 4, settings_json(info))
      .bind_text(first + 5, info.backend())
      .bind_int64(first + 6, info.device_count());
}

int64_t insert_returning_id(const HistoryFile& file, Statement& insert, const char* what) {
  if (!insert.next_row()) throw HistoryError(file.path() + ": inserting " + what + " returned no id");
  const int64_t id = insert.int64_at(0);
  insert.execute();  // step past RETURNING's row so the insert completes
  return id;
}

int64_t insert_running_run(const HistoryFile& file, const pb::RunInfo& info) {
  const int64_t now = unix_now_ms();
  const int64_t started = info.started_unix_ms() != 0 ? info.started_unix_ms() : now;
  Statement insert(file, std::string("INSERT INTO runs (name, ") + kRunScriptColumns + R"sql(,
                      host, pid, started_unix_ms, heartbeat_unix_ms, status, tags_json)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
    RETURNING id)sql");
  insert.bind_text(1, info.name());
  bind_run_script_columns(insert, 2, info)
      .bind_text(9, this_host_name())
      .bind_int64(10, getpid())
      .bind_int64(11, started)
      .bind_int64(12, now)
      .bind_int64(13, pb::RUN_STATUS_RUNNING)
      .bind_text(14, json_array(info.tags()));
  return insert_returning_id(file, insert, "the run");
}

}  // namespace lazyscope::storage
