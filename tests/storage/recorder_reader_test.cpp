// What a Recorder writes, a HistoryReader reads back: exact values.
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <string>

#include "db/history_file.h"
#include "db/run_liveness.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using google::protobuf::util::MessageDifferencer;
using test_support::ScratchFolder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr uint64_t kGraphA = 0xfedcba9876543210ULL;  // above INT64_MAX: stored negative
constexpr uint64_t kGraphB = 0x0000000000001234ULL;

// A short training run: 2 compiling steps, 4 warm ones, on replica 0, plus
// one step of replica 1 that must not count.
int64_t record_sample_run(const std::string& path, pb::Event* first_compile = nullptr) {
  Recorder recorder(path, test_support::sample_run_info("mnist"));
  // Step durations (ms): compiling 50 and 40; warm 10, 14, 12, 20 -> median 13.
  const int64_t ms = 1'000'000;
  recorder.record(test_support::step_event(0, 0, 50 * ms, 30 * ms));
  recorder.record(test_support::step_event(1, 100 * ms, 140 * ms, 25 * ms));
  recorder.record(test_support::step_event(2, 200 * ms, 210 * ms, 0));
  recorder.record(test_support::step_event(3, 300 * ms, 314 * ms, 0));
  recorder.record(test_support::step_event(4, 400 * ms, 412 * ms, 0));
  recorder.record(test_support::step_event(5, 500 * ms, 520 * ms, 0));
  recorder.record(test_support::step_event(6, 500 * ms, 999 * ms, 0, /*replica=*/1));

  pb::Event compile_a = test_support::compile_event(0, kGraphA, 30 * ms, 5);
  if (first_compile != nullptr) *first_compile = compile_a;
  recorder.record(compile_a);
  recorder.record(test_support::compile_event(1, kGraphB, 25 * ms, 3));
  // Graph A evicted and compiled again: one more compile, the graph stored once.
  recorder.record(test_support::compile_event(4, kGraphA, 5 * ms, 5));

  recorder.record(test_support::execute_event(0, kGraphA, 2 * ms, false));
  recorder.record(test_support::execute_event(1, kGraphB, 3 * ms, false));
  for (int step = 2; step <= 5; ++step) recorder.record(test_support::execute_event(step, kGraphA, 1 * ms, true));

  recorder.record(test_support::fallback_event(3, "aten::nonzero"));
  recorder.record(test_support::fallback_event(4, "aten::nonzero"));
  recorder.record(test_support::transfer_event(0, true, 1024));
  for (int step = 0; step <= 5; ++step) recorder.record(test_support::scalar_event(step, "loss", 2.5 - step * 0.25));
  recorder.record(test_support::scalar_event(5, "accuracy", 0.875));

  recorder.record_output("stdout", "epoch 1\n");
  recorder.record_output("stderr", "warning: slow\n");
  recorder.record_output("stdout", "epoch 2\n");

  recorder.finish(pb::RUN_STATUS_FAILED, 3, "ValueError: bad shape", "Traceback (most recent call last):\n  ...");
  EXPECT_EQ(recorder.first_write_error(), "");
  return recorder.run_id();
}

TEST(RecorderReader, RoundTripsRunSummary) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  const int64_t before = unix_now_ms();
  const int64_t run_id = record_sample_run(path);
  const int64_t after = unix_now_ms();

  HistoryReader reader(path);
  const std::vector<pb::RunSummary> runs = reader.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  const pb::RunSummary& summary = runs[0];
  const pb::RunInfo& run = summary.run();
  EXPECT_EQ(run.id(), run_id);
  EXPECT_EQ(run.name(), "mnist");
  EXPECT_EQ(run.script_path(), "/home/ada/train.py");
  EXPECT_EQ(run.script_sha256(), "5f2b9c0e");
  EXPECT_EQ(run.script_text(), "import lazyscope\nprint(\"hi\")\n");
  EXPECT_THAT(run.args(), ElementsAre("--lr", "0.1 \"quoted\"\n"));
  EXPECT_EQ(run.settings().size(), 2);
  EXPECT_EQ(run.settings().at("graph_limit"), "10000");
  EXPECT_EQ(run.settings().at("backend"), "cpu");
  EXPECT_EQ(run.backend(), "cpu");
  EXPECT_EQ(run.device_count(), 2);
  EXPECT_EQ(run.host(), this_host_name());
  EXPECT_EQ(run.pid(), getpid());
  EXPECT_GE(run.started_unix_ms(), before);
  EXPECT_LE(run.started_unix_ms(), run.ended_unix_ms());
  EXPECT_LE(run.ended_unix_ms(), after);
  EXPECT_EQ(run.status(), pb::RUN_STATUS_FAILED);
  EXPECT_EQ(run.exit_code(), 3);
  EXPECT_EQ(run.error(), "ValueError: bad shape");
  EXPECT_EQ(run.traceback(), "Traceback (most recent call last):\n  ...");
  EXPECT_THAT(run.tags(), ElementsAre("baseline", "größe"));

  EXPECT_EQ(summary.steps(), 6);  // replica 0 only
  EXPECT_EQ(summary.compiles(), 3);
  EXPECT_DOUBLE_EQ(summary.compile_ms(), 60.0);
  EXPECT_EQ(summary.executions(), 6);
  EXPECT_EQ(summary.cache_hits(), 4);
  EXPECT_DOUBLE_EQ(summary.execute_ms(), 9.0);
  EXPECT_DOUBLE_EQ(summary.median_step_ms(), 13.0);
  EXPECT_EQ(summary.fallbacks(), 2);
  EXPECT_DOUBLE_EQ(summary.wall_ms(), static_cast<double>(run.ended_unix_ms() - run.started_unix_ms()));

  const std::optional<pb::RunSummary> by_id = reader.run_summary(run_id);
  ASSERT_TRUE(by_id.has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(*by_id, summary));
}

TEST(RecorderReader, RoundTripsCompilationsWithTheirGraphs) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  pb::Event sent;
  const int64_t run_id = record_sample_run(path, &sent);

  HistoryReader reader(path);
  const std::vector<pb::CompileEvent> compiles = reader.compilations(run_id);
  ASSERT_EQ(compiles.size(), 3u);
  // Everything the engine sent comes back, the IR graph included.
  EXPECT_TRUE(MessageDifferencer::Equals(compiles[0], sent.compile())) << compiles[0].DebugString() << "\nvs\n"
                                                                       << sent.compile().DebugString();
  EXPECT_EQ(compiles[0].graph_hash(), kGraphA);
  EXPECT_EQ(compiles[0].compared_with(), kGraphA ^ 0xff);
  EXPECT_EQ(compiles[0].graph().nodes_size(), 5);
  EXPECT_EQ(compiles[1].graph_hash(), kGraphB);
  EXPECT_EQ(compiles[1].graph().nodes_size(), 3);
  EXPECT_EQ(compiles[2].graph_hash(), kGraphA);
  EXPECT_EQ(compiles[2].step(), 4);
  EXPECT_EQ(compiles[2].reason_kind(), pb::COMPILE_REASON_SHAPE);

  // Stored once per run and hash, and the hash keeps all 64 bits.
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM graphs"), 2);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM graphs WHERE hash < 0"), 1);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT node_count FROM graphs WHERE hash = 4660"), 3);
}

TEST(RecorderReader, StepsOfReplicaZeroInStepOrder) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  const int64_t run_id = record_sample_run(path);
  const std::vector<pb::StepEvent> steps = HistoryReader(path).steps(run_id);
  ASSERT_EQ(steps.size(), 6u);
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].step(), static_cast<int64_t>(i));
  EXPECT_EQ(steps[3].start_ns(), 300'000'000);
  EXPECT_EQ(steps[3].end_ns(), 314'000'000);
  EXPECT_EQ(steps[0].compile_ns(), 30'000'000);
  EXPECT_EQ(steps[5].trace_ns(), 11);
  EXPECT_EQ(steps[5].execute_ns(), 22);
  EXPECT_EQ(steps[5].transfer_ns(), 33);
  EXPECT_EQ(steps[5].host_wait_ns(), 44);
}

TEST(RecorderReader, StoresScalarsTransfersFallbacksAndOutputRows) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  record_sample_run(path);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM scalars WHERE name = 'loss'"), 6);
  EXPECT_EQ(test_support::raw_text(path, "SELECT value FROM scalars WHERE name = 'loss' AND step = 4"), "1.5");
  EXPECT_EQ(test_support::raw_text(path, "SELECT value FROM scalars WHERE name = 'accuracy'"), "0.875");
  EXPECT_EQ(test_support::raw_int64(path, "SELECT bytes FROM transfers WHERE to_device = 1"), 1024);
  EXPECT_EQ(test_support::raw_text(path, "SELECT group_concat(op || '@' || step) FROM fallbacks"),
            "aten::nonzero@3,aten::nonzero@4");
  EXPECT_EQ(test_support::raw_text(path,
                                   "SELECT group_concat(stream || ':' || text, '') FROM "
                                   "(SELECT * FROM output ORDER BY seq)"),
            "stdout:epoch 1\nstderr:warning: slow\nstdout:epoch 2\n");
  EXPECT_EQ(test_support::raw_int64(path,
                                    "SELECT COUNT(*) FROM executions WHERE cause = 1 AND "
                                    "source_line = 50"),
            6);
}

TEST(RecorderReader, OutputReadsBackInArrivalOrder) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  const int64_t run_id = record_sample_run(path);
  HistoryReader reader(path);
  const pb::RunOutput output = reader.output(run_id);
  ASSERT_EQ(output.chunks_size(), 3);
  EXPECT_EQ(output.chunks(0).seq(), 0);
  EXPECT_EQ(output.chunks(0).stream(), "stdout");
  EXPECT_EQ(output.chunks(0).text(), "epoch 1\n");
  EXPECT_EQ(output.chunks(1).seq(), 1);
  EXPECT_EQ(output.chunks(1).stream(), "stderr");
  EXPECT_EQ(output.chunks(1).text(), "warning: slow\n");
  EXPECT_EQ(output.chunks(2).seq(), 2);
  EXPECT_EQ(output.chunks(2).text(), "epoch 2\n");
  EXPECT_EQ(reader.output(run_id + 1).chunks_size(), 0);
}

TEST(RecorderReader, NanScalarIsStoredNotDropped) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  recorder.record(test_support::scalar_event(0, "loss", std::numeric_limits<double>::quiet_NaN()));
  recorder.record(test_support::scalar_event(1, "loss", std::numeric_limits<double>::infinity()));
  recorder.record(test_support::step_event(0, 0, 10, 0));
  recorder.flush();
  EXPECT_EQ(recorder.first_write_error(), "");
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM scalars WHERE value IS NULL"), 1);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM scalars WHERE value > 1e308"), 1);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM steps"), 1);
}

TEST(RecorderReader, MedianFallsBackToAllStepsWhenEveryStepCompiled) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  recorder.record(test_support::step_event(0, 0, 3'000'000, 1));
  recorder.record(test_support::step_event(1, 0, 5'000'000, 1));
  recorder.record(test_support::step_event(2, 0, 4'000'000, 1));
  recorder.record(test_support::step_event(3, 0, 8'000'000, 1));
  // A step is a barrier that ran a graph.
  for (int step = 0; step < 4; ++step) recorder.record(test_support::execute_event(step, 0xa, 1000, step > 0));
  recorder.flush();
  const auto summary = HistoryReader(path).run_summary(recorder.run_id());
  ASSERT_TRUE(summary.has_value());
  EXPECT_DOUBLE_EQ(summary->median_step_ms(), 4.5);  // (4 + 5) / 2
  EXPECT_EQ(summary->steps(), 4);
}

TEST(RecorderReader, EmptyRunHasZeroAggregates) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  const auto summary = HistoryReader(path).run_summary(recorder.run_id());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->steps(), 0);
  EXPECT_EQ(summary->compiles(), 0);
  EXPECT_EQ(summary->executions(), 0);
  EXPECT_DOUBLE_EQ(summary->median_step_ms(), 0.0);
  EXPECT_EQ(summary->run().status(), pb::RUN_STATUS_SUCCEEDED);
  EXPECT_EQ(summary->run().args_size(), 0);
  EXPECT_EQ(summary->run().settings_size(), 0);
}

TEST(RecorderReader, FlushMakesEverythingEnqueuedVisibleToAnotherConnection) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  HistoryReader reader(path);
  for (int step = 0; step < 10; ++step) recorder.record(test_support::step_event(step, 0, 1, 0));
  recorder.flush();
  EXPECT_EQ(reader.steps(recorder.run_id()).size(), 10u);
  recorder.record(test_support::step_event(10, 0, 1, 0));
  recorder.flush();
  EXPECT_EQ(reader.steps(recorder.run_id()).size(), 11u);
  // Not finished: still running, and so listed.
  EXPECT_EQ(reader.list_runs().at(0).run().status(), pb::RUN_STATUS_RUNNING);
}

TEST(RecorderReader, RecordsAfterFinishAreIgnored) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  recorder.record(test_support::step_event(0, 0, 1, 0));
  recorder.finish(pb::RUN_STATUS_INTERRUPTED, 130, "KeyboardInterrupt", "");
  recorder.record(test_support::step_event(1, 0, 1, 0));
  recorder.record_output("stdout", "late\n");
  recorder.flush();
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");  // a second finish changes nothing
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM steps"), 1);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM output"), 0);
  const auto summary = HistoryReader(path).run_summary(recorder.run_id());
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->run().status(), pb::RUN_STATUS_INTERRUPTED);
  EXPECT_EQ(summary->run().exit_code(), 130);
}

TEST(RecorderReader, DestructorWithoutFinishStoresEventsAndLeavesRunRunning) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  int64_t run_id = 0;
  {
    Recorder recorder(path, pb::RunInfo());
    run_id = recorder.run_id();
    for (int step = 0; step < 100; ++step) recorder.record(test_support::step_event(step, 0, 1, 0));
  }
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM steps"), 100);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT status FROM runs WHERE id = " + std::to_string(run_id)),
            pb::RUN_STATUS_RUNNING);
}

TEST(RecorderReader, LastRunIdIsTheNewestAndUnknownIdsAreEmpty) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  { HistoryFile create(path, OpenMode::kReadWrite); }
  {
    HistoryReader empty(path);
    EXPECT_FALSE(empty.last_run_id().has_value());
    EXPECT_TRUE(empty.list_runs().empty());
  }
  pb::RunInfo older = test_support::sample_run_info("older");
  older.set_started_unix_ms(1'000);
  pb::RunInfo newer = test_support::sample_run_info("newer");
  newer.set_started_unix_ms(2'000);
  Recorder newer_recorder(path, newer);  // inserted first, started later
  Recorder older_recorder(path, older);
  newer_recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  older_recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");

  HistoryReader reader(path);
  EXPECT_EQ(reader.last_run_id(), newer_recorder.run_id());
  const auto runs = reader.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].run().name(), "newer");
  EXPECT_EQ(runs[1].run().name(), "older");
  EXPECT_FALSE(reader.run_summary(12345).has_value());
  EXPECT_TRUE(reader.compilations(12345).empty());
  EXPECT_TRUE(reader.steps(12345).empty());
}

TEST(RecorderReader, WriteErrorIsKeptAndReportedWithoutThrowing) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  recorder.record(test_support::step_event(0, 0, 1, 0));
  recorder.flush();
  EXPECT_EQ(recorder.first_write_error(), "");
  // Someone breaks the file under the recorder's feet.
  test_support::raw_execute(path, "DROP TABLE scalars");
  ::testing::internal::CaptureStderr();
  recorder.record(test_support::scalar_event(1, "loss", 1.0));
  recorder.flush();
  recorder.record(test_support::scalar_event(2, "loss", 1.0));
  recorder.flush();
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(recorder.first_write_error(), HasSubstr(path));
  EXPECT_THAT(recorder.first_write_error(), HasSubstr("scalars"));
  // Reported once, not once per batch.
  EXPECT_EQ(printed.find("lazyscope:"), printed.rfind("lazyscope:"));
  EXPECT_THAT(printed, HasSubstr("scalars"));
  // Later batches that can be stored still are.
  recorder.record(test_support::step_event(3, 0, 1, 0));
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM steps"), 2);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT status FROM runs"), pb::RUN_STATUS_SUCCEEDED);
}

// The writer inserts the rows of every step several at a time (issue 15):
// batches of every size around a group of 64 rows still store each event
// once, in order, with its values.
TEST(RecorderReader, EveryEventIsStoredOnceInOrderWhateverTheBatchSize) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  int64_t step = 0;
  for (const int batch : {1, 63, 64, 65, 127, 128, 129, 500}) {
    for (int i = 0; i < batch; ++i, ++step) {
      recorder.record(test_support::execute_event(step, kGraphA, 100 + step, true));
      recorder.record(test_support::scalar_event(step, "loss", 0.5 * static_cast<double>(step)));
      recorder.record(test_support::transfer_event(step, step % 2 == 0, 8 * step));
      recorder.record(test_support::step_event(step, 10 * step, 10 * step + 7, 0));
    }
    recorder.flush();  // usually one batch of this many steps
  }
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  EXPECT_EQ(recorder.first_write_error(), "");
  const int64_t n = step;
  for (const char* table : {"steps", "executions", "scalars", "transfers"}) {
    SCOPED_TRACE(table);
    EXPECT_EQ(test_support::raw_int64(path, std::string("SELECT COUNT(*) FROM ") + table), n);
    EXPECT_EQ(test_support::raw_int64(path, std::string("SELECT COUNT(DISTINCT step) FROM ") + table), n);
  }
  // Values travel with their row, and rows keep their arrival order (ids).
  EXPECT_EQ(test_support::raw_int64(path,
                                    "SELECT COUNT(*) FROM steps WHERE start_ns = 10 * step AND "
                                    "end_ns = 10 * step + 7"),
            n);
  EXPECT_EQ(test_support::raw_int64(path,
                                    "SELECT COUNT(*) FROM scalars WHERE value = 0.5 * step AND "
                                    "name = 'loss' AND id = step + 1"),
            n);
  EXPECT_EQ(test_support::raw_int64(path,
                                    "SELECT COUNT(*) FROM executions WHERE duration_ns = 100 + step AND "
                                    "graph_hash = " +
                                        std::to_string(static_cast<int64_t>(kGraphA)) + " AND id = step + 1"),
            n);
  EXPECT_EQ(test_support::raw_int64(path,
                                    "SELECT COUNT(*) FROM transfers WHERE bytes = 8 * step AND "
                                    "to_device = (step % 2 = 0)"),
            n);
}

// A batch that fails part-way is lost whole (its transaction rolls back), and
// none of its rows waiting for a multi-row insert leak into the next batch.
TEST(RecorderReader, AFailedBatchLeavesNoRowsBehindForTheNext) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  Recorder recorder(path, pb::RunInfo());
  recorder.record(test_support::step_event(0, 0, 1, 0));
  recorder.flush();
  test_support::raw_execute(path, "DROP TABLE transfers");
  ::testing::internal::CaptureStderr();
  // Transfers are inserted before scalars: the scalar is still waiting when
  // the transfer fails.
  recorder.record(test_support::scalar_event(1, "lost", 1.0));
  recorder.record(test_support::transfer_event(1, true, 4));
  recorder.flush();
  ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(recorder.first_write_error(), HasSubstr("transfers"));
  recorder.record(test_support::scalar_event(2, "kept", 2.0));
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  EXPECT_EQ(test_support::raw_text(path, "SELECT group_concat(name || '@' || step) FROM scalars"), "kept@2");
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM steps"), 1);
}

TEST(RecorderReader, ConstructorThrowsHistoryErrorForAnUnwritablePlace) {
  ScratchFolder scratch;
  test_support::write_bytes(scratch.file("a-file"), "x");
  // The parent "folder" is a regular file.
  EXPECT_THROW(Recorder(scratch.file("a-file/history.sqlite"), pb::RunInfo()), HistoryError);
}

}  // namespace
}  // namespace lazyscope::storage
