// A transaction that rolls back unless committed, so an exception half-way
// through a batch leaves the history as it was before the batch.
#pragma once

namespace lazyscope::storage {

class HistoryFile;

class Transaction {
 public:
  // kRead gives a consistent snapshot across several queries; kWrite takes the
  // write lock up front (BEGIN IMMEDIATE) because upgrading a read transaction
  // to a write one fails with SQLITE_BUSY without waiting for the busy timeout.
  enum class Kind { kRead, kWrite };

  Transaction(const HistoryFile& file, Kind kind);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // Throws HistoryError; the destructor then rolls back.
  void commit();

 private:
  const HistoryFile& file_;
  bool committed_ = false;
};

}  // namespace lazyscope::storage
