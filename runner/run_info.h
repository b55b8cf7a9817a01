// The run record that `run` and the multi-process launcher both open a run
// with: one place, so the two cannot drift apart.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "lazyscope/history.pb.h"
#include "run_options.h"

namespace lazyscope::runner {

int64_t unix_ms();
std::string read_file(const std::string& path);

// Name, script (path, text, SHA-256), arguments, tags, engine settings,
// backend, device count, host, pid and start time. The SHA-256 comes from
// Python's hashlib (the one at hand), so an interpreter must be running.
pb::RunInfo new_run_info(const RunOptions& options, const std::string& script_text,
                         const std::map<std::string, std::string>& settings, int device_count);

}  // namespace lazyscope::runner
