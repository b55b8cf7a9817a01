// Records one run into a history file. The training thread only enqueues
// protobuf events; a writer thread stores them in batched transactions, so
// recording costs the training loop a lock and a move per event.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class Recorder {
 public:
  // Opens (creating if needed) the history at `path` and inserts the run
  // described by `info` with status RUNNING. Its pid and host are always this
  // process's (crash detection checks them), its start time is now unless
  // `info` gives one, and `info.id` is ignored. Throws HistoryError.
  Recorder(const std::string& path, const pb::RunInfo& info);
  // Flushes; a run never finish()ed is left RUNNING (and later seen as
  // crashed once its writer process is gone).
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  int64_t run_id() const;

  // Thread-safe, does not block on the database. Events are stored within
  // ~50 ms; flush() to wait for them.
  void record(pb::Event event);

  // Script output, in arrival order; stream is "stdout" or "stderr".
  void record_output(const std::string& stream, std::string text);

  // Blocks until everything enqueued so far is committed.
  void flush();

  // Flushes and stores the final status; later record() calls are ignored.
  void finish(pb::RunStatus status, int exit_code, const std::string& error, const std::string& traceback);

  // The first database error the writer thread met, empty while every batch
  // was stored. Recording never throws into the training process: a failed
  // batch is dropped, reported once on stderr and kept here.
  std::string first_write_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lazyscope::storage
