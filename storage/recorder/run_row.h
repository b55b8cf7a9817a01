// The runs row a Recorder starts with.
#pragma once

#include <cstdint>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class HistoryFile;
class Statement;

// The runs columns that describe the script and its settings, shared by the
// recorder's insert and an import's, so both store them the same way (args
// and tags as JSON arrays, settings as a sorted JSON object).
inline constexpr const char* kRunScriptColumns =
    "script_path, script_sha256, script_text, args_json, settings_json, backend, device_count";
// Binds kRunScriptColumns' values from `info`, to parameters first .. first + 6.
Statement& bind_run_script_columns(Statement& insert, int first, const pb::RunInfo& info);

// Runs an INSERT ... RETURNING id and returns the id; `what` names the row
// for the error. Throws HistoryError.
int64_t insert_returning_id(const HistoryFile& file, Statement& insert, const char* what);

// Inserts `info` as a RUNNING run written by this process on this host (the
// pid and host in `info` are replaced: they identify the writer, which crash
// detection checks), and returns its id. started_unix_ms defaults to now.
// Throws HistoryError.
int64_t insert_running_run(const HistoryFile& file, const pb::RunInfo& info);

}  // namespace lazyscope::storage
