#include "edit/history_editor.h"

#include <algorithm>

#include "db/history_file.h"
#include "db/json_text.h"
#include "db/run_liveness.h"
#include "db/statement.h"
#include "db/transaction.h"
#include "query/stored_enum.h"

namespace lazyscope::storage {

HistoryEditor::HistoryEditor(const std::string& path)
    : file_(std::make_unique<HistoryFile>(path, OpenMode::kReadWrite)) {}

HistoryEditor::~HistoryEditor() = default;

void HistoryEditor::require_run(int64_t run_id) {
  Statement exists(*file_, "SELECT 1 FROM runs WHERE id = ?1");
  exists.bind_int64(1, run_id);
  const bool found = exists.next_row();
  exists.reset();
  if (!found) throw HistoryError(file_->path() + ": no run " + std::to_string(run_id));
}

namespace {

// An empty or all-blank name or tag cannot be typed back to find the run
// (`show ''`), nor seen in a list: refused, as the runner's --name and --tag are.
bool is_blank(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

void HistoryEditor::rename_run(int64_t run_id, const std::string& name) {
  if (is_blank(name)) {
    throw HistoryError(file_->path() + ": cannot rename run " + std::to_string(run_id) +
                       ": the new name is empty; give a name with a visible character");
  }
  Transaction transaction(*file_, Transaction::Kind::kWrite);
  require_run(run_id);
  Statement(*file_, "UPDATE runs SET name = ?2 WHERE id = ?1").bind_int64(1, run_id).bind_text(2, name).execute();
  transaction.commit();
}

void HistoryEditor::set_tags(int64_t run_id, const std::vector<std::string>& tags) {
  std::vector<std::string> unique;
  for (const std::string& tag : tags) {
    if (is_blank(tag)) {
      throw HistoryError(file_->path() + ": cannot tag run " + std::to_string(run_id) +
                         ": a tag is empty; give tags with a visible character");
    }
    if (std::find(unique.begin(), unique.end(), tag) == unique.end()) unique.push_back(tag);
  }
  Transaction transaction(*file_, Transaction::Kind::kWrite);
  require_run(run_id);
  Statement(*file_, "UPDATE runs SET tags_json = ?2 WHERE id = ?1")
      .bind_int64(1, run_id)
      .bind_text(2, json_array(unique))
      .execute();
  transaction.commit();
}

void HistoryEditor::delete_run(int64_t run_id) {
  Transaction transaction(*file_, Transaction::Kind::kWrite);
  Statement run(*file_, "SELECT status, host, pid, heartbeat_unix_ms FROM runs WHERE id = ?1");
  run.bind_int64(1, run_id);
  if (!run.next_row()) throw HistoryError(file_->path() + ": no run " + std::to_string(run_id));
  const pb::RunStatus status = observed_status(
      enum_or_unspecified<pb::RunStatus>(run.int64_at(0), pb::RunStatus_IsValid), run.text_at(1), run.int64_at(2),
      run.int64_at(3), unix_now_ms());
  const int64_t pid = run.int64_at(2);
  run.reset();
  if (status == pb::RUN_STATUS_RUNNING) {
    throw HistoryError(file_->path() + ": run " + std::to_string(run_id) + " is still running (pid " +
                       std::to_string(pid) + "); stop it before deleting it");
  }
  // Foreign keys are on (HistoryFile): the run's events go with it.
  Statement(*file_, "DELETE FROM runs WHERE id = ?1").bind_int64(1, run_id).execute();
  transaction.commit();
}

}  // namespace lazyscope::storage
