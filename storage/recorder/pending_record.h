// What the training thread hands the recorder's writer thread: an engine
// event, a piece of script output, or the run's end. Kept in one queue so the
// writer stores them in the order they arrived.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

struct OutputChunk {
  int64_t seq;         // arrival order within the run, assigned under the queue lock
  std::string stream;  // "stdout" or "stderr"
  std::string text;
};

struct RunEnd {
  pb::RunStatus status;
  int exit_code;
  std::string error;
  std::string traceback;
  int64_t ended_unix_ms;  // when finish() was called, not when the row was written
};

using PendingRecord = std::variant<pb::Event, OutputChunk, RunEnd>;

}  // namespace lazyscope::storage
