#include "db/history_file.h"

#include <sqlite3.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <thread>

#include "db/schema.h"
#include "db/sqlite_error.h"
#include "db/statement.h"
#include "db/transaction.h"

namespace lazyscope::storage {
namespace {

// A writer holds the lock for one batch (milliseconds); five seconds covers a
// slow disk or a GUI export without failing a training run's recording.
constexpr int kBusyTimeoutMs = 5000;

// Switching to WAL needs a moment of exclusive access; a second process opening
// the same new file can be in the way. Retried this often, this far apart.
constexpr int kWalSwitchAttempts = 50;
constexpr auto kWalSwitchRetryDelay = std::chrono::milliseconds(100);

int read_user_version(const HistoryFile& file) {
  // The first read of the file: a file that is not SQLite fails here.
  Statement query(file, "PRAGMA user_version");
  const int version = query.next_row() ? static_cast<int>(query.int64_at(0)) : 0;
  query.reset();
  return version;
}

bool has_any_table(const HistoryFile& file) {
  Statement query(file, "SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1");
  const bool found = query.next_row();
  query.reset();
  return found;
}

HistoryError newer_schema_error(const std::string& path, int version) {
  return HistoryError(path + ": history was written by a newer LazyScope (schema " + std::to_string(version) +
                      ", this build reads up to " + std::to_string(kSchemaVersion) + ")");
}

HistoryError foreign_database_error(const std::string& path) {
  return HistoryError(path + ": not a LazyScope history (an SQLite database with other tables)");
}

void switch_to_wal(const HistoryFile& file) {
  // Raw calls rather than Statement: SQLITE_BUSY here is retried, not thrown.
  for (int attempt = 1;; ++attempt) {
    sqlite3_stmt* pragma = nullptr;
    int rc = sqlite3_prepare_v2(file.db(), "PRAGMA journal_mode = WAL", -1, &pragma, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(pragma);
    if (rc != SQLITE_ROW) {
      HistoryError error = sqlite_error(file.path(), file.db(), rc, "cannot switch to WAL journal");
      sqlite3_finalize(pragma);
      const int primary = rc & 0xff;
      if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || attempt == kWalSwitchAttempts) {
        throw error;
      }
      std::this_thread::sleep_for(kWalSwitchRetryDelay);
      continue;
    }
    const auto* mode_text = reinterpret_cast<const char*>(sqlite3_column_text(pragma, 0));
    const std::string mode = mode_text == nullptr ? "" : mode_text;
    sqlite3_finalize(pragma);
    // Readers must never block the recorder, nor it them: without WAL the
    // history would still work but a GUI refresh could stall training.
    if (mode != "wal") {
      throw HistoryError(file.path() + ": cannot use WAL journal mode here (SQLite chose '" + mode +
                         "'); is the file on a network filesystem?");
    }
    return;
  }
}

void migrate_forward(const HistoryFile& file) {
  // The write lock serializes two processes creating the same new file: the
  // second one finds the work done when it reads the version inside.
  Transaction migration(file, Transaction::Kind::kWrite);
  const int version = read_user_version(file);
  if (version > kSchemaVersion) throw newer_schema_error(file.path(), version);
  if (version == kSchemaVersion) return;
  if (version == 0 && has_any_table(file)) throw foreign_database_error(file.path());
  for (const Migration& step : schema_migrations()) {
    if (step.version <= version) continue;
    execute_script(file, step.sql, "cannot migrate to schema " + std::to_string(step.version));
  }
  // PRAGMA takes no bound parameters; the value is our own constant.
  const std::string set_version = "PRAGMA user_version = " + std::to_string(kSchemaVersion);
  execute_script(file, set_version.c_str(), "cannot record the schema version");
  migration.commit();
}

void check_tables_present(const HistoryFile& file) {
  std::set<std::string, std::less<>> present;
  Statement query(file, "SELECT name FROM sqlite_master WHERE type = 'table'");
  while (query.next_row()) present.insert(query.text_at(0));
  for (std::string_view table : schema_tables()) {
    if (!present.contains(table)) {
      throw HistoryError(file.path() + ": not a LazyScope history, or the file is corrupt (table '" +
                         std::string(table) + "' is missing)");
    }
  }
}

void check_readable(const HistoryFile& file) {
  // One snapshot for all checks: a recorder creating the file meanwhile must
  // not make it look half-made (version 0, yet with tables).
  Transaction snapshot(file, Transaction::Kind::kRead);
  const int version = read_user_version(file);
  if (version > kSchemaVersion) throw newer_schema_error(file.path(), version);
  if (version == 0) {
    if (has_any_table(file)) throw foreign_database_error(file.path());
    throw HistoryError(file.path() + ": not a LazyScope history (an empty database)");
  }
  if (version < kSchemaVersion) {
    throw OlderSchemaError(file.path() + ": history uses schema " + std::to_string(version) +
                           ", older than this build's " + std::to_string(kSchemaVersion) +
                           "; open it for writing once (record a run) to upgrade it");
  }
  check_tables_present(file);
  snapshot.commit();
}

void prepare_for_writing(const HistoryFile& file) {
  // Refuse a newer file, and another application's database, before changing
  // anything in it, even its journal mode. One snapshot: a recorder creating
  // the file meanwhile must not make it look foreign (version 0, yet tables).
  int version = 0;
  {
    Transaction snapshot(file, Transaction::Kind::kRead);
    version = read_user_version(file);
    if (version > kSchemaVersion) throw newer_schema_error(file.path(), version);
    if (version == 0 && has_any_table(file)) throw foreign_database_error(file.path());
    snapshot.commit();
  }
  switch_to_wal(file);
  // In WAL mode NORMAL is still safe against corruption; a power cut may lose
  // the last batches, which a profiler can afford for the speed.
  execute_script(file, "PRAGMA synchronous = NORMAL", "cannot set synchronous mode");
  if (version < kSchemaVersion) migrate_forward(file);
  check_tables_present(file);
}

// A URI that opens `path` as immutable: no locks, no -shm. SQLite's URI
// syntax needs %, ? and # escaped in the path.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (const char c : std::filesystem::absolute(path).string()) {
    if (c == '%' || c == '?' || c == '#') {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
      uri += escaped;
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

// Reading a WAL history takes its -shm file, which SQLite creates beside it.
// In a folder this process cannot write (a shared, read-only copy) and with
// no -shm there, a plain read-only open fails with "attempt to write a
// readonly database". With no -wal holding changes either, the file alone is
// the whole history and can be read as immutable; with one, say why it
// cannot be read. Returns whether to open as immutable.
bool needs_immutable_open(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path parent = fs::absolute(path, error).parent_path();
  if (error || ::access(parent.c_str(), W_OK) == 0) return false;
  if (fs::exists(path + "-shm", error)) return false;
  const auto wal_size = fs::file_size(path + "-wal", error);
  if (!error && wal_size > 0) {
    throw HistoryError(path + ": cannot be read here: its write-ahead log " + path +
                       "-wal holds changes not yet in the file, and reading them needs " + path +
                       "-shm, which cannot be created in the read-only folder " + parent.string() +
                       " (copy the history with its -wal file to a folder you can write)");
  }
  return true;
}

void create_parent_folder(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(parent, error);
  if (error) {
    throw HistoryError(path + ": cannot create folder " + parent.string() + ": " + error.message());
  }
}

}  // namespace

HistoryFile::HistoryFile(const std::string& path, OpenMode mode) : path_(path) {
  const bool read_only = mode == OpenMode::kReadOnly;
  {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      throw HistoryError(path + ": is a folder, not a history file (name a file, e.g. " +
                         (std::filesystem::path(path) / "history.sqlite").string() + ")");
    }
  }
  if (read_only) {
    // SQLite would say "unable to open database file"; say what the user can act on.
    std::error_code error;
    if (!std::filesystem::exists(path, error)) {
      throw HistoryError(path + ": no such history file");
    }
  } else {
    create_parent_folder(path);
  }

  // No SQLITE_OPEN_URI for a path the user gave: a path is a path, even one
  // that starts with "file:". Only our own immutable URI is one.
  const bool immutable = read_only && needs_immutable_open(path);
  const int flags = (read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) |
                    (mode == OpenMode::kRecord ? SQLITE_OPEN_NOMUTEX : 0);
  const int rc = immutable ? sqlite3_open_v2(immutable_uri(path).c_str(), &db_, flags | SQLITE_OPEN_URI, nullptr)
                           : sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    HistoryError error = sqlite_error(path, db_, rc, "cannot open");
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw error;
  }

  try {
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    // Per connection, and a no-op inside a transaction: set it first.
    execute_script(*this, "PRAGMA foreign_keys = ON", "cannot enable foreign keys");
    if (read_only) {
      check_readable(*this);
    } else {
      prepare_for_writing(*this);
    }
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

HistoryFile::~HistoryFile() { sqlite3_close_v2(db_); }

int HistoryFile::schema_version() const { return read_user_version(*this); }

}  // namespace lazyscope::storage
