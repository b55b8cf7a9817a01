#include "db/transaction.h"

#include <sqlite3.h>

#include "db/history_file.h"
#include "db/statement.h"

namespace lazyscope::storage {

Transaction::Transaction(const HistoryFile& file, Kind kind) : file_(file) {
  execute_script(file, kind == Kind::kWrite ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED", "cannot begin a transaction");
}

Transaction::~Transaction() {
  // Some errors (disk full, I/O) make SQLite roll back by itself; a second
  // ROLLBACK would only fail, so ask first.
  if (!committed_ && sqlite3_get_autocommit(file_.db()) == 0) {
    sqlite3_exec(file_.db(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void Transaction::commit() {
  execute_script(file_, "COMMIT", "cannot commit");
  committed_ = true;
}

}  // namespace lazyscope::storage
