// Two recorders write one file at once while a reader polls it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "db/history_file.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::ScratchFolder;

constexpr int kSteps = 2000;

void record_run(const std::string& path, const std::string& name, std::atomic<int>* finished,
                std::vector<std::string>* errors, size_t slot) {
  try {
    Recorder recorder(path, test_support::sample_run_info(name));
    for (int step = 0; step < kSteps; ++step) {
      recorder.record(test_support::step_event(step, step * 10, step * 10 + (step == 0 ? 9 : 5), step == 0 ? 4 : 0));
      recorder.record(test_support::execute_event(step, 0x77, 2, step != 0));
      recorder.record(test_support::scalar_event(step, "loss", 1.0));
      if (step == 0) recorder.record(test_support::compile_event(0, 0x77, 4, 4));
      if (step % 500 == 0) recorder.record_output("stdout", name + " step " + std::to_string(step) + "\n");
    }
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    (*errors)[slot] = recorder.first_write_error();
  } catch (const std::exception& error) {
    (*errors)[slot] = error.what();
  }
  ++*finished;
}

TEST(Concurrency, TwoRecordersAndAPollingReaderLoseNothing) {
  ScratchFolder scratch;
  const std::string path = scratch.file("shared/history.sqlite");
  std::atomic<int> finished{0};
  std::vector<std::string> errors(2);
  // Both create the (missing) file at the same moment, racing the migration.
  std::thread first(record_run, path, "first", &finished, &errors, 0);
  std::thread second(record_run, path, "second", &finished, &errors, 1);

  int polls = 0;
  std::string reader_error;
  while (finished < 2) {
    try {
      HistoryReader reader(path);
      while (finished < 2) {
        for (const pb::RunSummary& run : reader.list_runs()) {
          EXPECT_LE(run.steps(), kSteps);
          EXPECT_LE(run.cache_hits(), run.executions());
        }
        ++polls;
      }
    } catch (const HistoryError& error) {
      // Only acceptable before the first recorder created the schema.
      reader_error = error.what();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  first.join();
  second.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_GT(polls, 0) << reader_error;

  HistoryReader reader(path);
  const auto runs = reader.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  for (const pb::RunSummary& run : runs) {
    SCOPED_TRACE(run.run().name());
    EXPECT_EQ(run.run().status(), pb::RUN_STATUS_SUCCEEDED);
    EXPECT_EQ(run.steps(), kSteps);
    EXPECT_EQ(run.executions(), kSteps);
    EXPECT_EQ(run.cache_hits(), kSteps - 1);
    EXPECT_EQ(run.compiles(), 1);
    EXPECT_DOUBLE_EQ(run.median_step_ms(), 5e-6);
    EXPECT_EQ(reader.steps(run.run().id()).size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(reader.compilations(run.run().id()).at(0).graph().nodes_size(), 4);
    EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM scalars WHERE run_id = " +
                                           std::to_string(run.run().id())),
              kSteps);
    EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM output WHERE run_id = " +
                                           std::to_string(run.run().id())),
              kSteps / 500);
  }
}

// SQLite locks differently between processes (POSIX locks) than between
// connections of one process; the runner records in another process than the GUI.
TEST(Concurrency, RecorderInAnotherProcessWhileReaderPolls) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  { HistoryFile create(path, OpenMode::kReadWrite); }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int exit_code = 0;
    try {
      Recorder recorder(path, test_support::sample_run_info("child"));
      for (int step = 0; step < kSteps; ++step) {
        recorder.record(test_support::step_event(step, 0, 5, 0));
        recorder.record(test_support::execute_event(step, 0x77, 2, true));
      }
      recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
      exit_code = recorder.first_write_error().empty() ? 0 : 1;
    } catch (...) {
      exit_code = 2;
    }
    _exit(exit_code);
  }

  HistoryReader reader(path);
  int polls = 0;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    for (const pb::RunSummary& run : reader.list_runs()) EXPECT_LE(run.steps(), kSteps);
    ++polls;
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_GT(polls, 0);
  const auto runs = reader.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run().status(), pb::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(runs[0].run().pid(), child);
  EXPECT_EQ(runs[0].steps(), kSteps);
  EXPECT_EQ(runs[0].executions(), kSteps);
}

// Several writers finding the same file missing race to create and migrate it;
// the migration's write lock must make all but one find the work done.
TEST(Concurrency, WritersCreatingOneFileAtOnceAllSucceed) {
  for (int round = 0; round < 10; ++round) {
    ScratchFolder scratch;
    const std::string path = scratch.file("history.sqlite");
    constexpr int kWriters = 6;
    std::latch start(kWriters);
    std::vector<std::string> errors(kWriters);
    std::vector<std::thread> writers;
    for (int i = 0; i < kWriters; ++i) {
      writers.emplace_back([&, i] {
        start.arrive_and_wait();
        try {
          HistoryFile file(path, OpenMode::kReadWrite);
        } catch (const HistoryError& error) {
          errors[static_cast<size_t>(i)] = error.what();
        }
      });
    }
    for (std::thread& writer : writers) writer.join();
    for (const std::string& error : errors) EXPECT_EQ(error, "") << "round " << round;
    EXPECT_EQ(test_support::raw_int64(path, "PRAGMA user_version"), kSchemaVersion);
  }
}

TEST(Concurrency, ManyThreadsRecordIntoOneRecorder) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  constexpr int kThreads = 4;
  constexpr int kEach = 1000;
  std::vector<std::thread> replicas;
  for (int replica = 0; replica < kThreads; ++replica) {
    replicas.emplace_back([&recorder, replica] {
      for (int step = 0; step < kEach; ++step) {
        recorder.record(test_support::step_event(step, 0, 1, 0, replica));
      }
    });
  }
  for (std::thread& replica : replicas) replica.join();
  recorder.flush();
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM steps"), kThreads * kEach);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(DISTINCT replica) FROM steps"), kThreads);
  EXPECT_EQ(recorder.first_write_error(), "");
}

}  // namespace
}  // namespace lazyscope::storage
