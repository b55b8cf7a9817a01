// Two recorders write one file at once while a reader polls it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <stdexcept>
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

// Blocks until the reader has completed `count` polls. The recorders wait for
// the reader rather than the reader racing them: under load (a busy machine,
// ctest -j) the reader thread could be descheduled for as long as both
// recorders took, which made "polls > 0" fail without anything being wrong
// with the storage (the test's own race, seen under load 15). Throws if the
// reader has not polled after a minute, which is a failure, not a delay.
void wait_for_polls(const std::atomic<int>& polls, int count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (polls.load() < count) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the reader never polled");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void record_run(const std::string& path, const std::string& name, std::atomic<int>* finished,
                std::vector<std::string>* errors, size_t slot, const std::atomic<int>* polls) {
  try {
    Recorder recorder(path, test_support::sample_run_info(name));
    // The file and this run exist: the reader can open it. Record half the
    // run, then let the reader poll it half-written, then the rest.
    wait_for_polls(*polls, 1);
    for (int step = 0; step < kSteps; ++step) {
      if (step == kSteps / 2) {
        recorder.flush();
        wait_for_polls(*polls, polls->load() + 1);
      }
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
  std::atomic<int> polls{0};
  std::thread first(record_run, path, "first", &finished, &errors, 0, &polls);
  std::thread second(record_run, path, "second", &finished, &errors, 1, &polls);

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
  EXPECT_GE(polls.load(), 2) << reader_error;

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
    EXPECT_EQ(
        test_support::raw_int64(path, "SELECT COUNT(*) FROM scalars WHERE run_id = " + std::to_string(run.run().id())),
        kSteps);
    EXPECT_EQ(
        test_support::raw_int64(path, "SELECT COUNT(*) FROM output WHERE run_id = " + std::to_string(run.run().id())),
        kSteps / 500);
  }
}

// SQLite locks differently between processes (POSIX locks) than between
// connections of one process; the runner records in another process than the GUI.
TEST(Concurrency, RecorderInAnotherProcessWhileReaderPolls) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  { HistoryFile create(path, OpenMode::kReadWrite); }
  // The child records only once the reader has polled (a byte on this pipe):
  // otherwise, on a busy machine, it could finish before the first poll.
  int polled[2];
  ASSERT_EQ(pipe(polled), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int exit_code = 0;
    try {
      close(polled[1]);
      Recorder recorder(path, test_support::sample_run_info("child"));
      char go = 0;
      if (read(polled[0], &go, 1) != 1) _exit(3);
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

  close(polled[0]);
  HistoryReader reader(path);
  int polls = 0;
  int status = 0;
  do {
    for (const pb::RunSummary& run : reader.list_runs()) EXPECT_LE(run.steps(), kSteps);
    if (++polls == 1) {
      EXPECT_EQ(write(polled[1], "g", 1), 1);
      close(polled[1]);
    }
  } while (waitpid(child, &status, WNOHANG) == 0);
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
