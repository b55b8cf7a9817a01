// Opening history files: creation, migration, and refusing what we cannot read.
#include "db/history_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "db/statement.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::ScratchFolder;
using ::testing::HasSubstr;

// The message of the HistoryError `open` throws; fails the test if none.
template <typename Open> std::string history_error_of(Open open) {
  try {
    open();
  } catch (const HistoryError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a HistoryError";
  return {};
}

TEST(HistoryFile, CreatesFileAndParentFoldersAtCurrentSchemaInWalMode) {
  ScratchFolder scratch;
  const std::string path = scratch.file("deep/er/history.sqlite");
  {
    HistoryFile file(path, OpenMode::kReadWrite);
    EXPECT_EQ(file.schema_version(), kSchemaVersion);
    EXPECT_EQ(file.path(), path);
  }
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(test_support::raw_int64(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(test_support::raw_text(path, "PRAGMA journal_mode"), "wal");
  for (const char* table :
       {"runs", "steps", "graphs", "compilations", "executions", "fallbacks", "transfers", "scalars", "output"}) {
    EXPECT_EQ(test_support::raw_int64(path, std::string("SELECT COUNT(*) FROM sqlite_master WHERE "
                                                        "type = 'table' AND name = '") +
                                                table + "'"),
              1)
        << table;
  }
}

// Foreign keys are per connection: each open must turn them on, or deleting a
// run would leave its rows behind.
TEST(HistoryFile, DeletingARunCascadesToItsRows) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  {
    Recorder recorder(path, test_support::sample_run_info("doomed"));
    recorder.record(test_support::step_event(0, 0, 1, 0));
    recorder.record(test_support::compile_event(0, 7, 1, 2));
    recorder.record(test_support::scalar_event(0, "loss", 1.0));
    recorder.record_output("stdout", "x");
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  HistoryFile file(path, OpenMode::kReadWrite);
  Statement foreign_keys(file, "PRAGMA foreign_keys");
  ASSERT_TRUE(foreign_keys.next_row());
  EXPECT_EQ(foreign_keys.int64_at(0), 1);
  foreign_keys.reset();
  Statement(file, "DELETE FROM runs").execute();
  for (const char* table : {"steps", "graphs", "compilations", "scalars", "output"}) {
    EXPECT_EQ(test_support::raw_int64(path, std::string("SELECT COUNT(*) FROM ") + table), 0) << table;
  }
}

TEST(HistoryFile, ReopeningForWritingKeepsRunsAndVersion) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  {
    Recorder recorder(path, test_support::sample_run_info("first"));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  { HistoryFile again(path, OpenMode::kReadWrite); }
  EXPECT_EQ(test_support::raw_int64(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(test_support::raw_text(path, "SELECT name FROM runs"), "first");
}

TEST(HistoryFile, ReadOnlyRefusesMissingFileAndDoesNotCreateIt) {
  ScratchFolder scratch;
  const std::string path = scratch.file("nowhere/history.sqlite");
  const std::string message = history_error_of([&] { HistoryFile file(path, OpenMode::kReadOnly); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("no such history file"));
  EXPECT_THAT(history_error_of([&] { HistoryReader reader(path); }), HasSubstr(path));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(scratch.file("nowhere")));
}

TEST(HistoryFile, RefusesNewerSchemaInBothModes) {
  ScratchFolder scratch;
  const std::string path = scratch.file("future.sqlite");
  test_support::raw_execute(path, "CREATE TABLE runs (id INTEGER); PRAGMA user_version = 99;");
  const std::string expected = path + ": history was written by a newer LazyScope (schema 99, this build reads up to " +
                               std::to_string(kSchemaVersion) + ")";
  EXPECT_EQ(history_error_of([&] { HistoryFile file(path, OpenMode::kReadOnly); }), expected);
  EXPECT_EQ(history_error_of([&] { HistoryFile file(path, OpenMode::kReadWrite); }), expected);
  EXPECT_THAT(history_error_of([&] { Recorder recorder(path, pb::RunInfo()); }), HasSubstr("newer"));
  // Refusing must not touch the file: a newer LazyScope still reads it.
  EXPECT_EQ(test_support::raw_int64(path, "PRAGMA user_version"), 99);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM sqlite_master"), 1);
}

TEST(HistoryFile, RefusesGarbageBytesWithoutChangingThem) {
  ScratchFolder scratch;
  const std::string path = scratch.file("notes.sqlite");
  std::string garbage;
  for (int i = 0; i < 8192; ++i) garbage += static_cast<char>((i * 7919 + 13) % 251);
  test_support::write_bytes(path, garbage);
  for (const OpenMode mode : {OpenMode::kReadOnly, OpenMode::kReadWrite}) {
    const std::string message = history_error_of([&] { HistoryFile file(path, mode); });
    EXPECT_THAT(message, HasSubstr(path));
    EXPECT_THAT(message, HasSubstr("not a LazyScope history"));
  }
  EXPECT_EQ(test_support::read_bytes(path), garbage);
}

TEST(HistoryFile, RefusesShortTextFile) {
  ScratchFolder scratch;
  const std::string path = scratch.file("readme.txt");
  test_support::write_bytes(path, "hello, I am not a database\n");
  const std::string message = history_error_of([&] { HistoryReader reader(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("not a LazyScope history"));
}

TEST(HistoryFile, RefusesAnotherApplicationsDatabaseWithoutMigratingIt) {
  ScratchFolder scratch;
  const std::string path = scratch.file("contacts.sqlite");
  test_support::raw_execute(path, "CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('x');");
  for (const OpenMode mode : {OpenMode::kReadOnly, OpenMode::kReadWrite}) {
    const std::string message = history_error_of([&] { HistoryFile file(path, mode); });
    EXPECT_EQ(message, path + ": not a LazyScope history (an SQLite database with other tables)");
  }
  EXPECT_EQ(test_support::raw_int64(path, "PRAGMA user_version"), 0);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM sqlite_master"), 1);
}

TEST(HistoryFile, AnotherApplicationsDatabaseKeepsItsJournalMode) {
  // Refused before anything changes: not even switched to WAL (issue 15 item 4).
  ScratchFolder scratch;
  const std::string path = scratch.file("other_app.sqlite");
  test_support::raw_execute(path, "CREATE TABLE contacts (name TEXT);");
  const std::string before = test_support::read_bytes(path);
  history_error_of([&] { HistoryFile file(path, OpenMode::kReadWrite); });
  EXPECT_EQ(test_support::raw_text(path, "PRAGMA journal_mode"), "delete");
  EXPECT_EQ(test_support::read_bytes(path), before);
}

TEST(HistoryFile, AFolderIsNamedAsAFolderInBothModes) {
  ScratchFolder scratch;
  const std::string folder = scratch.file("histories");
  std::filesystem::create_directory(folder);
  for (const OpenMode mode : {OpenMode::kReadOnly, OpenMode::kReadWrite}) {
    EXPECT_EQ(history_error_of([&] { HistoryFile file(folder, mode); }),
              folder + ": is a folder, not a history file (name a file, e.g. " + folder + "/history.sqlite)");
  }
  EXPECT_TRUE(std::filesystem::is_empty(folder));
}

TEST(HistoryFile, ReadOnlyRefusesEmptyFile) {
  ScratchFolder scratch;
  const std::string path = scratch.file("empty.sqlite");
  test_support::write_bytes(path, "");
  EXPECT_EQ(history_error_of([&] { HistoryReader reader(path); }),
            path + ": not a LazyScope history (an empty database)");
}

TEST(HistoryFile, RefusesHistoryWithAMissingTable) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  { HistoryFile file(path, OpenMode::kReadWrite); }
  test_support::raw_execute(path, "DROP TABLE scalars");
  EXPECT_EQ(history_error_of([&] { HistoryReader reader(path); }),
            path + ": not a LazyScope history, or the file is corrupt (table 'scalars' is missing)");
}

// Truncation loses pages that the schema still points to. Whatever SQLite
// notices, we must answer with a HistoryError or with rows, never a crash.
TEST(HistoryFile, TruncatedHistoryGivesHistoryErrorOrCleanResult) {
  ScratchFolder scratch;
  const std::string original = scratch.file("history.sqlite");
  {
    Recorder recorder(original, test_support::sample_run_info("long run"));
    for (int step = 0; step < 3000; ++step) {
      recorder.record(test_support::step_event(step, step * 100, step * 100 + 90, 0));
      recorder.record(test_support::execute_event(step, 0xabc, 50, true));
      recorder.record(test_support::scalar_event(step, "loss", 1.0 / (step + 1)));
    }
    recorder.record(test_support::compile_event(0, 0xabc, 1000, 200));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  // The last connection's close checkpointed the WAL into the main file.
  ASSERT_FALSE(std::filesystem::exists(original + "-wal"));
  const auto full_size = std::filesystem::file_size(original);
  ASSERT_GT(full_size, 64u * 1024u);

  for (const double fraction : {0.5, 0.1, 0.01}) {
    SCOPED_TRACE(fraction);
    const std::string truncated = scratch.file("truncated-" + std::to_string(fraction) + ".sqlite");
    std::filesystem::copy_file(original, truncated);
    std::filesystem::resize_file(truncated, static_cast<uintmax_t>(full_size * fraction));
    bool any_error = false;
    try {
      HistoryReader reader(truncated);
      for (const pb::RunSummary& run : reader.list_runs()) {
        reader.run_summary(run.run().id());
        reader.steps(run.run().id());
        reader.compilations(run.run().id());
      }
      reader.last_run_id();
    } catch (const HistoryError& error) {
      any_error = true;
      EXPECT_THAT(error.what(), HasSubstr(truncated));
    }
    // At half size the runs' pages survive but most steps do not: SQLite
    // does notice. (At smaller sizes it may fail at open; either way an error.)
    EXPECT_TRUE(any_error);
  }
}

// Pages overwritten with garbage (a bad disk, a stray write): every read
// answers with a HistoryError naming the file, or with rows; never a crash.
TEST(HistoryFile, CorruptedPagesGiveHistoryErrorNotACrash) {
  ScratchFolder scratch;
  const std::string original = scratch.file("history.sqlite");
  {
    Recorder recorder(original, test_support::sample_run_info("run"));
    for (int step = 0; step < 3000; ++step) {
      recorder.record(test_support::step_event(step, step * 100, step * 100 + 90, 0));
      recorder.record(test_support::scalar_event(step, "loss", 1.0 / (step + 1)));
    }
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  const std::string bytes = test_support::read_bytes(original);
  int errors = 0;
  // The header, the schema page, and pages in the middle and at the end.
  for (const size_t offset : {size_t{0}, size_t{4096}, bytes.size() / 2, bytes.size() - 4096}) {
    SCOPED_TRACE(offset);
    std::string damaged = bytes;
    for (size_t i = offset; i < std::min(offset + 4096, damaged.size()); ++i) damaged[i] = static_cast<char>(i * 131);
    const std::string path = scratch.file("damaged-" + std::to_string(offset) + ".sqlite");
    test_support::write_bytes(path, damaged);
    try {
      HistoryReader reader(path);
      for (const pb::RunSummary& run : reader.list_runs()) {
        reader.step_series(run.run().id());
        reader.scalar_series(run.run().id(), "loss");
        reader.output(run.run().id());
      }
    } catch (const HistoryError& error) {
      ++errors;
      EXPECT_THAT(error.what(), HasSubstr(path));
    }
  }
  EXPECT_GE(errors, 3);  // the header, the schema and a data page are all noticed
}

}  // namespace
}  // namespace lazyscope::storage
