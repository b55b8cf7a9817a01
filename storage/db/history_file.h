// Opening an SQLite history file: schema creation, forward migrations, and the
// guarantees every user of the file relies on (WAL, busy timeout, refusal of
// files written by a newer LazyScope). Knows nothing of the engine.
#pragma once

#include <stdexcept>
#include <string>

struct sqlite3;

namespace lazyscope::storage {

// Every storage failure: names the file and what is wrong with it.
class HistoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// $LAZYSCOPE_HISTORY if set, else $XDG_DATA_HOME/lazyscope/history.sqlite,
// else ~/.local/share/lazyscope/history.sqlite.
std::string default_history_path();

// The newest schema version this build reads and writes.
inline constexpr int kSchemaVersion = 6;

// A read-only open of a file at an older schema: it must be migrated first,
// which takes a read-write open (HistoryReader does that for its callers).
class OlderSchemaError : public HistoryError {
 public:
  using HistoryError::HistoryError;
};

// kRecord is kReadWrite for a connection that one thread at a time uses (a
// recorder's writer thread): it is opened without SQLite's per-call mutex
// (SQLITE_OPEN_NOMUTEX), which was an eighth of the writer's work per row.
enum class OpenMode { kReadOnly, kReadWrite, kRecord };

// An open connection to one history file. kReadWrite creates the file and its
// folder if missing and migrates an older schema forward; kReadOnly refuses a
// missing file. Both refuse a file whose schema is newer than kSchemaVersion,
// a file that is not an SQLite database (or is corrupt), and another
// application's SQLite database, with a HistoryError naming the file.
class HistoryFile {
 public:
  HistoryFile(const std::string& path, OpenMode mode);
  ~HistoryFile();
  HistoryFile(const HistoryFile&) = delete;
  HistoryFile& operator=(const HistoryFile&) = delete;

  sqlite3* db() const { return db_; }
  const std::string& path() const { return path_; }
  int schema_version() const;

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace lazyscope::storage
