// The query library on histories built event by event: exact values.
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "db/history_file.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using google::protobuf::util::MessageDifferencer;
using test_support::ScratchFolder;
using test_support::source_at;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kMs = 1'000'000;
constexpr uint64_t kGraphA = 0xfedcba9876543210ULL;  // above INT64_MAX: stored negative
constexpr uint64_t kGraphB = 0x00000000000abcdeULL;
constexpr uint64_t kGraphNoIr = 0x77ULL;

pb::RunInfo run_info(const std::string& name, const std::string& script, int64_t started_unix_ms,
                     std::vector<std::string> tags = {}) {
  pb::RunInfo info;
  info.set_name(name);
  info.set_script_path(script);
  info.set_started_unix_ms(started_unix_ms);
  for (auto& tag : tags) info.add_tags(tag);
  return info;
}

int64_t record_finished(const std::string& path, const pb::RunInfo& info, pb::RunStatus status) {
  Recorder recorder(path, info);
  recorder.finish(status, status == pb::RUN_STATUS_SUCCEEDED ? 0 : 1, "", "");
  return recorder.run_id();
}

RunFilter with_status(pb::RunStatus status) {
  RunFilter filter;
  filter.status = status;
  return filter;
}

RunFilter with_text(const std::string& text) {
  RunFilter filter;
  filter.text = text;
  return filter;
}

RunFilter with_tag(const std::string& tag) {
  RunFilter filter;
  filter.tag = tag;
  return filter;
}

RunFilter since(int64_t unix_ms) {
  RunFilter filter;
  filter.since_unix_ms = unix_ms;
  return filter;
}

std::string program_of(uint64_t hash) {
  std::string text = "program ";
  text += std::to_string(hash);
  return text;
}

std::vector<int64_t> ids(const std::vector<pb::RunSummary>& runs) {
  std::vector<int64_t> out;
  for (const auto& run : runs) out.push_back(run.run().id());
  return out;
}

TEST(Query, RunListFilters) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const int64_t a = record_finished(path, run_info("mnist-mlp", "/src/mnist.py", 1000, {"baseline"}),
                                    pb::RUN_STATUS_SUCCEEDED);
  const int64_t b = record_finished(path, run_info("cnn", "/src/mnist_cnn.py", 2000, {"bf16", "baseline"}),
                                    pb::RUN_STATUS_FAILED);
  const int64_t c = record_finished(path, run_info("regression", "/src/linear.py", 3000), pb::RUN_STATUS_SUCCEEDED);
  Recorder live(path, run_info("live", "/src/live.py", 4000));  // this process: still running
  const int64_t d = live.run_id();

  HistoryReader reader(path);
  EXPECT_THAT(ids(reader.list_runs()), ElementsAre(d, c, b, a));
  EXPECT_THAT(ids(reader.list_runs(with_status(pb::RUN_STATUS_SUCCEEDED))), ElementsAre(c, a));
  EXPECT_THAT(ids(reader.list_runs(with_status(pb::RUN_STATUS_FAILED))), ElementsAre(b));
  EXPECT_THAT(ids(reader.list_runs(with_status(pb::RUN_STATUS_RUNNING))), ElementsAre(d));
  EXPECT_THAT(ids(reader.list_runs(with_status(pb::RUN_STATUS_CRASHED))), IsEmpty());
  // By name, or by script path.
  EXPECT_THAT(ids(reader.list_runs(with_text("mnist"))), ElementsAre(b, a));
  EXPECT_THAT(ids(reader.list_runs(with_text("linear"))), ElementsAre(c));
  EXPECT_THAT(ids(reader.list_runs(with_text("MNIST"))), IsEmpty());
  EXPECT_THAT(ids(reader.list_runs(with_tag("baseline"))), ElementsAre(b, a));
  EXPECT_THAT(ids(reader.list_runs(with_tag("bf16"))), ElementsAre(b));
  EXPECT_THAT(ids(reader.list_runs(with_tag("base"))), IsEmpty());  // whole tags only
  EXPECT_THAT(ids(reader.list_runs(since(2000))), ElementsAre(d, c, b));
  RunFilter all_four = since(500);
  all_four.status = pb::RUN_STATUS_SUCCEEDED;
  all_four.text = "mnist";
  all_four.tag = "baseline";
  EXPECT_THAT(ids(reader.list_runs(all_four)), ElementsAre(a));
  live.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
}

TEST(Query, FindRunByIdNameOrLast) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const int64_t first = record_finished(path, run_info("exp", "/x.py", 1000), pb::RUN_STATUS_SUCCEEDED);
  const int64_t second = record_finished(path, run_info("exp", "/x.py", 2000), pb::RUN_STATUS_SUCCEEDED);
  const int64_t numeric = record_finished(path, run_info("12345", "/x.py", 1500), pb::RUN_STATUS_SUCCEEDED);
  HistoryReader reader(path);
  EXPECT_EQ(reader.find_run(std::to_string(first)), first);
  EXPECT_EQ(reader.find_run("exp"), second);  // the newest of that name
  EXPECT_EQ(reader.find_run("last"), second);
  EXPECT_EQ(reader.find_run("12345"), numeric);  // no run 12345: the name
  EXPECT_EQ(reader.find_run("nope"), std::nullopt);
  EXPECT_EQ(reader.find_run("999"), std::nullopt);
  EXPECT_EQ(reader.find_run(""), std::nullopt);
}

TEST(Query, StepAndScalarSeriesOfReplicaZero) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  int64_t run_id = 0;
  {
    Recorder recorder(path, run_info("r", "/r.py", 1000));
    run_id = recorder.run_id();
    recorder.record(test_support::step_event(1, 10 * kMs, 14 * kMs, 2 * kMs));
    recorder.record(test_support::step_event(0, 0, 8 * kMs, 5 * kMs));
    recorder.record(test_support::step_event(0, 0, 99 * kMs, 0, /*replica=*/1));
    recorder.record(test_support::scalar_event(1, "loss", 0.5));
    recorder.record(test_support::scalar_event(0, "loss", 1.5));
    recorder.record(test_support::scalar_event(2, "loss", std::numeric_limits<double>::quiet_NaN()));
    recorder.record(test_support::scalar_event(0, "acc", 0.25));
    pb::Event other_replica = test_support::scalar_event(3, "loss", 7.0);
    other_replica.set_replica(1);
    recorder.record(other_replica);
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  HistoryReader reader(path);
  const pb::StepSeries steps = reader.step_series(run_id);
  EXPECT_THAT(steps.steps(), ElementsAre(0, 1));
  EXPECT_THAT(steps.step_ms(), ElementsAre(8.0, 4.0));
  EXPECT_THAT(steps.compile_ms(), ElementsAre(5.0, 2.0));
  // step_event() fills the rest with 11, 22, 33, 44 ns.
  EXPECT_THAT(steps.trace_ms(), ElementsAre(11e-6, 11e-6));
  EXPECT_THAT(steps.execute_ms(), ElementsAre(22e-6, 22e-6));
  EXPECT_THAT(steps.transfer_ms(), ElementsAre(33e-6, 33e-6));
  EXPECT_THAT(steps.host_wait_ms(), ElementsAre(44e-6, 44e-6));

  EXPECT_THAT(reader.scalar_names(run_id), ElementsAre("acc", "loss"));
  const pb::ScalarSeries loss = reader.scalar_series(run_id, "loss");
  EXPECT_EQ(loss.name(), "loss");
  EXPECT_THAT(loss.steps(), ElementsAre(0, 1, 2));
  ASSERT_EQ(loss.values_size(), 3);
  EXPECT_EQ(loss.values(0), 1.5);
  EXPECT_EQ(loss.values(1), 0.5);
  EXPECT_TRUE(std::isnan(loss.values(2)));
  EXPECT_EQ(reader.scalar_series(run_id, "missing").steps_size(), 0);

  // The run's last loss (replica 0, highest step) is the NaN of step 2, not "none".
  const auto summary = reader.run_summary(run_id);
  ASSERT_TRUE(summary.has_value());
  ASSERT_TRUE(summary->has_last_loss());
  EXPECT_TRUE(std::isnan(summary->last_loss()));
}

TEST(Query, RunListCarriesTheLastLoggedLoss) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  int64_t with_loss = 0, without = 0;
  {
    Recorder recorder(path, run_info("logs", "/l.py", 1000));
    with_loss = recorder.run_id();
    recorder.record(test_support::scalar_event(1, "loss", 0.5));  // recorded before step 0's: order is by step
    recorder.record(test_support::scalar_event(0, "loss", 1.5));
    recorder.record(test_support::scalar_event(2, "acc", 0.9));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  {
    Recorder recorder(path, run_info("silent", "/s.py", 2000));
    without = recorder.run_id();
    recorder.record(test_support::scalar_event(0, "acc", 0.1));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  HistoryReader reader(path);
  for (const pb::RunSummary& run : reader.list_runs()) {
    if (run.run().id() == with_loss) {
      ASSERT_TRUE(run.has_last_loss());
      EXPECT_EQ(run.last_loss(), 0.5);
    } else {
      EXPECT_EQ(run.run().id(), without);
      EXPECT_FALSE(run.has_last_loss());
    }
  }
}

// A run with two graphs with IR, one without, executions, fallbacks, transfers.
int64_t record_event_run(const std::string& path) {
  Recorder recorder(path, run_info("events", "/e.py", 1000));
  const pb::SourceLocation train = source_at("train.py", 41, "step");
  recorder.record(test_support::compile_at(0, kGraphA, 1 * kMs, 30 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, train,
                                           test_support::chain_graph(kGraphA, {8, 3}, 4)));
  recorder.record(test_support::compile_at(1, kGraphB, 101 * kMs, 20 * kMs, pb::COMPILE_REASON_SHAPE, kGraphA, train,
                                           test_support::chain_graph(kGraphB, {4, 3}, 4)));
  // Graph A evicted and compiled again.
  recorder.record(test_support::compile_at(3, kGraphA, 301 * kMs, 10 * kMs, pb::COMPILE_REASON_EVICTED, 0, train,
                                           test_support::chain_graph(kGraphA, {8, 3}, 4)));
  recorder.record(test_support::execute_at(0, kGraphA, 31 * kMs, 2 * kMs, pb::SYNC_CAUSE_MARK_STEP, train, false, 5));
  recorder.record(test_support::execute_at(1, kGraphB, 121 * kMs, 3 * kMs, pb::SYNC_CAUSE_MARK_STEP, train, false, 5));
  recorder.record(test_support::execute_at(2, kGraphA, 201 * kMs, 1 * kMs, pb::SYNC_CAUSE_MARK_STEP, train, true, 5));
  recorder.record(test_support::execute_at(2, kGraphNoIr, 205 * kMs, 4 * kMs, pb::SYNC_CAUSE_ITEM,
                                           source_at("train.py", 57, "step"), false, 9));
  recorder.record(test_support::execute_at(3, kGraphA, 311 * kMs, 1 * kMs, pb::SYNC_CAUSE_MARK_STEP, train, true, 5));

  const pb::SourceLocation line60 = source_at("train.py", 60, "step");
  const pb::SourceLocation line61 = source_at("train.py", 61, "step");
  recorder.record(test_support::fallback_at(0, "nonzero", 40 * kMs, 1 * kMs, 100, line60));
  recorder.record(test_support::fallback_at(2, "nonzero", 240 * kMs, 3 * kMs, 200, line60));
  recorder.record(test_support::fallback_at(2, "nonzero", 241 * kMs, 2 * kMs, 300, line61));
  recorder.record(test_support::fallback_at(1, "unique", 140 * kMs, 9 * kMs, 50, line60));

  recorder.record(test_support::transfer_at(0, true, 5 * kMs, 2 * kMs, 4096));
  recorder.record(test_support::transfer_at(1, false, 150 * kMs, 1 * kMs, 12));
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  return recorder.run_id();
}

TEST(Query, ExecutionsFallbacksAndTransfersInStartOrder) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const int64_t run_id = record_event_run(path);
  HistoryReader reader(path);

  const auto executions = reader.executions(run_id);
  ASSERT_EQ(executions.size(), 5u);
  EXPECT_EQ(executions[3].graph_hash(), kGraphNoIr);
  EXPECT_EQ(executions[3].step(), 2);
  EXPECT_EQ(executions[3].start_ns(), 205 * kMs);
  EXPECT_EQ(executions[3].duration_ns(), 4 * kMs);
  EXPECT_EQ(executions[3].cause(), pb::SYNC_CAUSE_ITEM);
  EXPECT_FALSE(executions[3].cache_hit());
  EXPECT_EQ(executions[3].node_count(), 9);
  EXPECT_EQ(executions[3].source().line(), 57);
  EXPECT_EQ(executions[3].source().function(), "step");
  EXPECT_EQ(executions[0].graph_hash(), kGraphA);
  EXPECT_TRUE(executions[4].cache_hit());

  const auto fallbacks = reader.fallbacks(run_id);
  ASSERT_EQ(fallbacks.size(), 4u);
  EXPECT_EQ(fallbacks[1].op(), "unique");
  EXPECT_EQ(fallbacks[1].bytes(), 50);
  EXPECT_EQ(fallbacks[3].source().line(), 61);

  const auto transfers = reader.transfers(run_id);
  ASSERT_EQ(transfers.size(), 2u);
  EXPECT_TRUE(transfers[0].to_device());
  EXPECT_EQ(transfers[0].bytes(), 4096);
  EXPECT_EQ(transfers[0].duration_ns(), 2 * kMs);
  EXPECT_FALSE(transfers[1].to_device());
  EXPECT_EQ(transfers[1].step(), 1);
}

TEST(Query, FallbacksGroupedByOpAndLineMostExpensiveFirst) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const int64_t run_id = record_event_run(path);
  const auto groups = HistoryReader(path).fallback_groups(run_id);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].op(), "unique");
  EXPECT_EQ(groups[0].count(), 1);
  EXPECT_DOUBLE_EQ(groups[0].total_ms(), 9.0);

  EXPECT_EQ(groups[1].op(), "nonzero");
  EXPECT_EQ(groups[1].source().file(), "train.py");
  EXPECT_EQ(groups[1].source().line(), 60);
  EXPECT_EQ(groups[1].count(), 2);
  EXPECT_DOUBLE_EQ(groups[1].total_ms(), 4.0);
  EXPECT_EQ(groups[1].bytes(), 300);
  EXPECT_EQ(groups[1].first_step(), 0);
  EXPECT_EQ(groups[1].last_step(), 2);
  EXPECT_EQ(groups[1].steps_with_fallback(), 2);

  EXPECT_EQ(groups[2].op(), "nonzero");
  EXPECT_EQ(groups[2].source().line(), 61);
  EXPECT_DOUBLE_EQ(groups[2].total_ms(), 2.0);
  EXPECT_EQ(groups[2].bytes(), 300);
}

TEST(Query, GraphsWithTheirCompileAndExecutionCosts) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const int64_t run_id = record_event_run(path);
  const auto graphs = HistoryReader(path).graphs(run_id);
  ASSERT_EQ(graphs.size(), 3u);

  EXPECT_EQ(graphs[0].hash(), kGraphA);
  EXPECT_EQ(graphs[0].node_count(), 5);
  EXPECT_TRUE(graphs[0].has_ir());
  EXPECT_EQ(graphs[0].compiles(), 2);
  EXPECT_DOUBLE_EQ(graphs[0].compile_ms(), 40.0);
  EXPECT_EQ(graphs[0].executions(), 3);
  EXPECT_DOUBLE_EQ(graphs[0].execute_ms(), 4.0);
  EXPECT_EQ(graphs[0].first_step(), 0);

  EXPECT_EQ(graphs[1].hash(), kGraphB);
  EXPECT_EQ(graphs[1].compiles(), 1);
  EXPECT_DOUBLE_EQ(graphs[1].compile_ms(), 20.0);
  EXPECT_EQ(graphs[1].executions(), 1);
  EXPECT_EQ(graphs[1].first_step(), 1);

  // Executed, never compiled here, no IR: the node count comes from the execution.
  EXPECT_EQ(graphs[2].hash(), kGraphNoIr);
  EXPECT_FALSE(graphs[2].has_ir());
  EXPECT_EQ(graphs[2].node_count(), 9);
  EXPECT_EQ(graphs[2].compiles(), 0);
  EXPECT_EQ(graphs[2].executions(), 1);
  EXPECT_DOUBLE_EQ(graphs[2].execute_ms(), 4.0);
  EXPECT_EQ(graphs[2].first_step(), 2);

  EXPECT_THAT(HistoryReader(path).graphs(run_id + 1), IsEmpty());
}

TEST(Query, OneGraphsIrAndProgramText) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const int64_t run_id = record_event_run(path);
  HistoryReader reader(path);
  const auto ir = reader.graph_ir(run_id, kGraphB);
  ASSERT_TRUE(ir.has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(*ir, test_support::chain_graph(kGraphB, {4, 3}, 4)));
  EXPECT_EQ(reader.program_text(run_id, kGraphB), program_of(kGraphB));
  EXPECT_EQ(reader.graph_ir(run_id, kGraphNoIr), std::nullopt);
  EXPECT_EQ(reader.program_text(run_id, kGraphNoIr), std::nullopt);
  EXPECT_EQ(reader.graph_ir(run_id + 1, kGraphB), std::nullopt);

  test_support::raw_execute(path, "UPDATE graphs SET ir = x'ffffffff'");
  try {
    reader.graph_ir(run_id, kGraphB);
    FAIL() << "a corrupt graph must throw";
  } catch (const HistoryError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("corrupt"));
  }
}

}  // namespace
}  // namespace lazyscope::storage
