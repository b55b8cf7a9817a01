// The query library: everything the command line and the GUI read from a
// history goes through here (the GUI has no SQL of its own). Never writes to
// the file, and reads while a Recorder (here or in another process) writes.
// Thread-safe: calls are serialized on the one connection.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class HistoryFile;

class HistoryReader {
 public:
  // Opens read-only. Throws HistoryError (missing, corrupt, newer schema).
  explicit HistoryReader(const std::string& path);
  ~HistoryReader();
  HistoryReader(const HistoryReader&) = delete;
  HistoryReader& operator=(const HistoryReader&) = delete;

  // Newest first. A run still marked RUNNING whose writer process is gone is
  // reported as CRASHED.
  std::vector<pb::RunSummary> list_runs() const;
  std::optional<pb::RunSummary> run_summary(int64_t run_id) const;
  // Id of the newest run, if any.
  std::optional<int64_t> last_run_id() const;
  // Uncached compiles of a run, in order.
  std::vector<pb::CompileEvent> compilations(int64_t run_id) const;
  // Per-step timings of a run (replica 0), in step order.
  std::vector<pb::StepEvent> steps(int64_t run_id) const;

 private:
  std::unique_ptr<HistoryFile> file_;
  // list_runs() and run_summary() read in one transaction on the shared
  // connection, for one snapshot; two threads' transactions cannot nest.
  mutable std::mutex mutex_;
};

}  // namespace lazyscope::storage
