// A prepared SQLite statement that finalizes itself. All SQL in storage is
// constant text; values only ever travel through the bind_* calls, never
// through string building.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3_stmt;

namespace lazyscope::storage {

class HistoryFile;

class Statement {
 public:
  // `file` must outlive the statement. Throws HistoryError.
  Statement(const HistoryFile& file, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, as in the SQL text (?1, ?2, ...).
  Statement& bind_int64(int index, int64_t value);
  Statement& bind_double(int index, double value);
  Statement& bind_text(int index, std::string_view value);
  // Binds the text without SQLite copying it: `value` must stay alive and
  // unchanged until this statement has run (the recorder's multi-row inserts
  // bind text of the batch they are writing, and rebind every parameter
  // before each run).
  Statement& bind_text_unowned(int index, std::string_view value);
  Statement& bind_blob(int index, std::string_view bytes);
  // SQLite integers are signed 64-bit: a graph hash is stored as the int64
  // with the same bits and read back with hash_at().
  Statement& bind_hash(int index, uint64_t hash);

  // Steps once: true when a row is available. On DONE or error the statement
  // is reset so it can be bound and run again. Throws HistoryError.
  bool next_row();
  // Runs to completion, ignoring any rows, and resets.
  void execute();
  // Abandons the current rows so the statement can run again.
  void reset();

  // Columns of the current row, numbered from 0.
  int64_t int64_at(int column) const;
  double double_at(int column) const;
  std::string text_at(int column) const;
  std::string blob_at(int column) const;
  uint64_t hash_at(int column) const;
  bool is_null_at(int column) const;

 private:
  const HistoryFile* file_;
  sqlite3_stmt* statement_ = nullptr;
};

// Runs constant SQL that may hold several statements (schema migrations,
// BEGIN/COMMIT). It takes no values, so it needs no bindings.
void execute_script(const HistoryFile& file, const char* sql, std::string_view doing);

}  // namespace lazyscope::storage
