#include "recorder/row_inserter.h"

#include <stdexcept>

namespace lazyscope::storage {
namespace {

// "<insert_into> VALUES (?, ?, ...), ..." for `rows` rows. Only placeholders
// are generated here; values travel through bindings as everywhere else.
std::string insert_sql(std::string_view insert_into, int columns, int rows) {
  std::string row = "(";
  for (int c = 0; c < columns; ++c) row += c ? ", ?" : "?";
  row += ")";
  std::string sql(insert_into);
  sql += " VALUES ";
  for (int r = 0; r < rows; ++r) {
    if (r) sql += ", ";
    sql += row;
  }
  return sql;
}

}  // namespace

RowInserter::RowInserter(const HistoryFile& file, std::string_view insert_into, int columns)
    : columns_(columns),
      one_row_(file, insert_sql(insert_into, columns, 1)),
      full_group_(file, insert_sql(insert_into, columns, kRowsPerStatement)),
      values_(static_cast<size_t>(columns) * kRowsPerStatement) {}

RowInserter::Value& RowInserter::at(int column) {
  if (column < 1 || column > columns_) throw std::logic_error("RowInserter: no such column");
  return values_[static_cast<size_t>(rows_ * columns_ + column - 1)];
}

RowInserter& RowInserter::bind_int64(int column, int64_t value) {
  Value& v = at(column);
  v.kind = Value::Kind::kInt;
  v.i = value;
  return *this;
}

RowInserter& RowInserter::bind_double(int column, double value) {
  Value& v = at(column);
  v.kind = Value::Kind::kDouble;
  v.d = value;
  return *this;
}

RowInserter& RowInserter::bind_text(int column, std::string_view value) {
  Value& v = at(column);
  v.kind = Value::Kind::kText;
  v.text = value;
  return *this;
}

void RowInserter::bind_rows(Statement& statement, int first_row, int rows) {
  int index = 1;
  for (int r = first_row; r < first_row + rows; ++r) {
    for (int c = 0; c < columns_; ++c, ++index) {
      const Value& v = values_[static_cast<size_t>(r * columns_ + c)];
      switch (v.kind) {
        case Value::Kind::kInt: statement.bind_int64(index, v.i); break;
        case Value::Kind::kDouble: statement.bind_double(index, v.d); break;
        // Not copied: the text lives in the batch being written (row_inserter.h).
        case Value::Kind::kText: statement.bind_text_unowned(index, v.text); break;
      }
    }
  }
}

void RowInserter::add_row() {
  if (++rows_ < kRowsPerStatement) return;
  rows_ = 0;  // before executing: a failed group is not retried with the next rows
  bind_rows(full_group_, 0, kRowsPerStatement);
  full_group_.execute();
}

void RowInserter::flush() {
  const int rows = rows_;
  rows_ = 0;
  for (int r = 0; r < rows; ++r) {
    bind_rows(one_row_, r, 1);
    one_row_.execute();
  }
}

}  // namespace lazyscope::storage
