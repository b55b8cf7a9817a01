// Turns an SQLite failure into a HistoryError that names the file, so every
// message a user sees says which history is at fault and what went wrong.
#pragma once

#include <string_view>

#include "db/history_file.h"

struct sqlite3;

namespace lazyscope::storage {

// True for the result codes that mean the bytes on disk are not a (sound)
// SQLite database; those get the "not a LazyScope history" wording.
bool is_corruption(int sqlite_result_code);

// HistoryError("<path>: <doing>: <sqlite message>"), or the corruption
// wording when `sqlite_result_code` says the file is damaged. Returned, not
// thrown, so that callers can clean up after reading the connection's message.
HistoryError sqlite_error(std::string_view path, sqlite3* db, int sqlite_result_code, std::string_view doing);

}  // namespace lazyscope::storage
