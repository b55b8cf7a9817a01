// Inserts rows of one table several at a time: `INSERT INTO t (...) VALUES
// (...), (...), ...` with kRowsPerStatement rows per statement. SQLite's cost
// of a single-row INSERT is mostly per statement (opening and closing the
// table, index and foreign-key cursors, halting the program), so a tiny
// training step's three rows (step, execution, scalar) cost the recorder's
// writer thread about half as much this way (issue 15). Rows keep their order
// within the table; rows of different inserters are independent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "db/statement.h"

namespace lazyscope::storage {

class HistoryFile;

class RowInserter {
 public:
  // `insert_into` is "INSERT [OR ...] INTO table (col1, ..., colN)", constant
  // text; the placeholders are generated for `columns` values per row.
  RowInserter(const HistoryFile& file, std::string_view insert_into, int columns);

  // The current row's values, columns numbered from 1 as in Statement. Text is
  // not copied: it must stay alive until flush() (the batch being written).
  RowInserter& bind_int64(int column, int64_t value);
  RowInserter& bind_double(int column, double value);
  RowInserter& bind_text(int column, std::string_view value);
  RowInserter& bind_hash(int column, uint64_t hash) { return bind_int64(column, static_cast<int64_t>(hash)); }
  // Ends the current row; a full group of rows is inserted at once.
  void add_row();
  // Inserts the rows still waiting (one statement each). Throws HistoryError.
  void flush();
  // Forgets the rows waiting: their batch failed (its transaction rolls back)
  // and their text may be gone.
  void discard() { rows_ = 0; }

  static constexpr int kRowsPerStatement = 64;

 private:
  struct Value {
    enum class Kind : uint8_t { kInt, kDouble, kText } kind = Kind::kInt;
    int64_t i = 0;
    double d = 0;
    std::string_view text;
  };
  Value& at(int column);
  void bind_rows(Statement& statement, int first_row, int rows);

  const int columns_;
  Statement one_row_;
  Statement full_group_;
  std::vector<Value> values_;  // kRowsPerStatement rows of columns_ values
  int rows_ = 0;               // complete rows waiting
};

}  // namespace lazyscope::storage
