// Changes a person makes to recorded runs (the GUI's run list, the command
// line's tag/rename/delete). Opens the history read-write; each call is one
// transaction, safe while a Recorder writes other runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lazyscope::storage {

class HistoryFile;

class HistoryEditor {
 public:
  // Throws HistoryError (corrupt, newer schema, unwritable).
  explicit HistoryEditor(const std::string& path);
  ~HistoryEditor();
  HistoryEditor(const HistoryEditor&) = delete;
  HistoryEditor& operator=(const HistoryEditor&) = delete;

  // Each throws HistoryError naming the run when there is no run `run_id`,
  // and for an empty (or all-blank) name or tag.
  void rename_run(int64_t run_id, const std::string& name);
  // Replaces the run's tags; duplicates are dropped, the first order is kept.
  void set_tags(int64_t run_id, const std::vector<std::string>& tags);
  // Deletes the run and everything recorded for it. Refuses a run whose
  // writer is still alive: the recorder would lose every later batch.
  void delete_run(int64_t run_id);

 private:
  void require_run(int64_t run_id);

  std::unique_ptr<HistoryFile> file_;
};

}  // namespace lazyscope::storage
