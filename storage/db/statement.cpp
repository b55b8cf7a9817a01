#include "db/statement.h"

#include <sqlite3.h>

#include <utility>

#include "db/history_file.h"
#include "db/sqlite_error.h"

namespace lazyscope::storage {

Statement::Statement(const HistoryFile& file, std::string_view sql) : file_(&file) {
  const int rc = sqlite3_prepare_v2(file.db(), sql.data(), static_cast<int>(sql.size()), &statement_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(statement_);
    statement_ = nullptr;
    throw sqlite_error(file.path(), file.db(), rc, "cannot prepare query");
  }
}

Statement::~Statement() { sqlite3_finalize(statement_); }

Statement::Statement(Statement&& other) noexcept
    : file_(other.file_), statement_(std::exchange(other.statement_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(statement_);
    file_ = other.file_;
    statement_ = std::exchange(other.statement_, nullptr);
  }
  return *this;
}

namespace {

// Names the failing statement by its first words: enough to find it in the
// source, short enough for a message box.
std::string describe(sqlite3_stmt* statement) {
  constexpr size_t kShownChars = 60;
  std::string sql = sqlite3_sql(statement);
  for (char& c : sql) {
    if (c == '\n') c = ' ';
  }
  if (sql.size() > kShownChars) sql = sql.substr(0, kShownChars) + "...";
  return "cannot run \"" + sql + "\"";
}

void check_bind(const HistoryFile& file, int rc) {
  if (rc != SQLITE_OK) throw sqlite_error(file.path(), file.db(), rc, "cannot bind a value");
}

}  // namespace

Statement& Statement::bind_int64(int index, int64_t value) {
  check_bind(*file_, sqlite3_bind_int64(statement_, index, value));
  return *this;
}

Statement& Statement::bind_double(int index, double value) {
  check_bind(*file_, sqlite3_bind_double(statement_, index, value));
  return *this;
}

Statement& Statement::bind_text(int index, std::string_view value) {
  check_bind(*file_, sqlite3_bind_text64(statement_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind_text_unowned(int index, std::string_view value) {
  check_bind(*file_, sqlite3_bind_text64(statement_, index, value.data(), value.size(), SQLITE_STATIC, SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
  check_bind(*file_, sqlite3_bind_blob64(statement_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT));
  return *this;
}

Statement& Statement::bind_hash(int index, uint64_t hash) { return bind_int64(index, static_cast<int64_t>(hash)); }

bool Statement::next_row() {
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) {
    sqlite3_reset(statement_);
    return false;
  }
  // Read the message before the reset, which may replace the connection's
  // error text.
  HistoryError error = sqlite_error(file_->path(), file_->db(), rc, describe(statement_));
  sqlite3_reset(statement_);
  throw error;
}

void Statement::execute() {
  while (next_row()) {
  }
}

void Statement::reset() { sqlite3_reset(statement_); }

int64_t Statement::int64_at(int column) const { return sqlite3_column_int64(statement_, column); }

double Statement::double_at(int column) const { return sqlite3_column_double(statement_, column); }

std::string Statement::text_at(int column) const {
  const auto* text = sqlite3_column_text(statement_, column);
  // The byte count must be asked after the text, per the SQLite docs.
  const int size = sqlite3_column_bytes(statement_, column);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}

std::string Statement::blob_at(int column) const {
  const void* bytes = sqlite3_column_blob(statement_, column);
  const int size = sqlite3_column_bytes(statement_, column);
  if (bytes == nullptr) return {};
  return std::string(static_cast<const char*>(bytes), static_cast<size_t>(size));
}

uint64_t Statement::hash_at(int column) const { return static_cast<uint64_t>(int64_at(column)); }

bool Statement::is_null_at(int column) const { return sqlite3_column_type(statement_, column) == SQLITE_NULL; }

void execute_script(const HistoryFile& file, const char* sql, std::string_view doing) {
  const int rc = sqlite3_exec(file.db(), sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) throw sqlite_error(file.path(), file.db(), rc, doing);
}

}  // namespace lazyscope::storage
