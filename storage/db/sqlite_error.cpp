#include "db/sqlite_error.h"

#include <sqlite3.h>

#include <string>

namespace lazyscope::storage {

bool is_corruption(int sqlite_result_code) {
  // Extended codes (SQLITE_CORRUPT_INDEX, ...) keep the primary code in the low byte.
  const int primary = sqlite_result_code & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

HistoryError sqlite_error(std::string_view path, sqlite3* db, int sqlite_result_code, std::string_view doing) {
  // The connection's message is more specific ("no such table: steps") but only
  // describes this failure if the connection's last error is this one.
  const bool connection_knows = db != nullptr && sqlite3_extended_errcode(db) == sqlite_result_code;
  const std::string detail = connection_knows ? sqlite3_errmsg(db) : sqlite3_errstr(sqlite_result_code);
  std::string message(path);
  if (is_corruption(sqlite_result_code)) {
    message += ": not a LazyScope history, or the file is corrupt (" + detail + ")";
  } else {
    message += ": ";
    message += doing;
    message += ": " + detail;
  }
  return HistoryError(message);
}

}  // namespace lazyscope::storage
