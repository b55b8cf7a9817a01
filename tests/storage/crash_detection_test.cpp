// A run left RUNNING by a writer that is gone is listed as CRASHED, without
// the reader writing anything.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "db/history_file.h"
#include "db/run_liveness.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::ScratchFolder;

// The pid of a child that has exited and been reaped: nobody has it now.
pid_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

// A run whose recorder went away without finish(): RUNNING in the file.
int64_t unfinished_run(const std::string& path) {
  Recorder recorder(path, test_support::sample_run_info("unfinished"));
  recorder.record(test_support::step_event(0, 0, 1'000'000, 0));
  return recorder.run_id();
}

pb::RunStatus listed_status(const std::string& path, int64_t run_id) {
  const auto summary = HistoryReader(path).run_summary(run_id);
  EXPECT_TRUE(summary.has_value());
  return summary ? summary->run().status() : pb::RUN_STATUS_UNSPECIFIED;
}

TEST(CrashDetection, RunningRunOfADeadProcessOnThisHostIsCrashed) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  const int64_t run_id = unfinished_run(path);
  const std::string where = " WHERE id = " + std::to_string(run_id);
  // Our own pid is alive, and the heartbeat fresh: still running.
  EXPECT_EQ(listed_status(path, run_id), pb::RUN_STATUS_RUNNING);

  test_support::raw_execute(path, "UPDATE runs SET pid = " + std::to_string(dead_pid()) + where);
  EXPECT_EQ(listed_status(path, run_id), pb::RUN_STATUS_CRASHED);
  const auto runs = HistoryReader(path).list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run().status(), pb::RUN_STATUS_CRASHED);
  // Wall time of a crashed run ends at its last heartbeat, not now.
  const int64_t heartbeat = test_support::raw_int64(path, "SELECT heartbeat_unix_ms FROM runs" + where);
  EXPECT_DOUBLE_EQ(runs[0].wall_ms(), static_cast<double>(heartbeat - runs[0].run().started_unix_ms()));
  // Judged, not written: the file still says RUNNING.
  EXPECT_EQ(test_support::raw_int64(path, "SELECT status FROM runs" + where), pb::RUN_STATUS_RUNNING);
}

TEST(CrashDetection, DeadPidOnAnotherHostIsJudgedByHeartbeatOnly) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  const int64_t run_id = unfinished_run(path);
  test_support::raw_execute(path, "UPDATE runs SET host = 'elsewhere', pid = " + std::to_string(dead_pid()));
  EXPECT_EQ(listed_status(path, run_id), pb::RUN_STATUS_RUNNING);
}

TEST(CrashDetection, RunningRunWithStaleHeartbeatIsCrashedEvenIfThePidLives) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  const int64_t run_id = unfinished_run(path);
  const int64_t stale = unix_now_ms() - kHeartbeatStaleAfter.count() - 5'000;
  test_support::raw_execute(path, "UPDATE runs SET host = 'elsewhere', heartbeat_unix_ms = " + std::to_string(stale));
  EXPECT_EQ(listed_status(path, run_id), pb::RUN_STATUS_CRASHED);
}

TEST(CrashDetection, FinishedRunsAreNeverCrashed) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  int64_t run_id = 0;
  {
    Recorder recorder(path, pb::RunInfo());
    run_id = recorder.run_id();
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  test_support::raw_execute(path, "UPDATE runs SET heartbeat_unix_ms = 0, pid = " + std::to_string(dead_pid()));
  EXPECT_EQ(listed_status(path, run_id), pb::RUN_STATUS_SUCCEEDED);
}

TEST(CrashDetection, LiveRecorderIsRunningWithGrowingWallTime) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  pb::RunInfo info;
  info.set_started_unix_ms(unix_now_ms() - 2'000);
  Recorder recorder(path, info);
  const auto summary = HistoryReader(path).run_summary(recorder.run_id());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->run().status(), pb::RUN_STATUS_RUNNING);
  EXPECT_EQ(summary->run().ended_unix_ms(), 0);
  EXPECT_GE(summary->wall_ms(), 2'000.0);
  EXPECT_LT(summary->wall_ms(), 60'000.0);
}

TEST(CrashDetection, RecordingRefreshesTheHeartbeat) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  const std::string query = "SELECT heartbeat_unix_ms FROM runs";
  const int64_t at_start = test_support::raw_int64(path, query);
  // The writer refreshes it at most once a second; wait that out.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  recorder.record(test_support::step_event(0, 0, 1, 0));
  recorder.flush();
  EXPECT_GE(test_support::raw_int64(path, query), at_start + 1000);
}

TEST(CrashDetection, ObservedStatusRules) {
  const std::string here = this_host_name();
  const int64_t now = 1'000'000;
  const int64_t fresh = now - 1'000;
  const int64_t stale = now - kHeartbeatStaleAfter.count() - 1;
  const int64_t alive = getpid();
  const int64_t dead = dead_pid();
  EXPECT_EQ(observed_status(pb::RUN_STATUS_RUNNING, here, alive, fresh, now), pb::RUN_STATUS_RUNNING);
  EXPECT_EQ(observed_status(pb::RUN_STATUS_RUNNING, here, dead, fresh, now), pb::RUN_STATUS_CRASHED);
  EXPECT_EQ(observed_status(pb::RUN_STATUS_RUNNING, "other", dead, fresh, now), pb::RUN_STATUS_RUNNING);
  EXPECT_EQ(observed_status(pb::RUN_STATUS_RUNNING, "other", dead, stale, now), pb::RUN_STATUS_CRASHED);
  EXPECT_EQ(observed_status(pb::RUN_STATUS_RUNNING, here, alive, stale, now), pb::RUN_STATUS_CRASHED);
  EXPECT_EQ(observed_status(pb::RUN_STATUS_FAILED, here, dead, stale, now), pb::RUN_STATUS_FAILED);
  // pid 1 exists but is not ours to signal (EPERM): alive, unless we are root.
  EXPECT_TRUE(process_is_alive(1));
}

}  // namespace
}  // namespace lazyscope::storage
