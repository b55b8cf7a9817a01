// The runs row a Recorder starts with.
#pragma once

#include <cstdint>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class HistoryFile;

// Inserts `info` as a RUNNING run written by this process on this host (the
// pid and host in `info` are replaced: they identify the writer, which crash
// detection checks), and returns its id. started_unix_ms defaults to now.
// Throws HistoryError.
int64_t insert_running_run(const HistoryFile& file, const pb::RunInfo& info);

}  // namespace lazyscope::storage
