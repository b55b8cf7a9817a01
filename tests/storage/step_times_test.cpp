// The one definition of a step and of its breakdown (analysis/step_times.h),
// and that every reader of it agrees: the run summary, the diagnosis, the
// metrics derived from events, the timeline markers and the Chrome trace.
// Expected values are worked out by hand from the recorded events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/run_data.h"
#include "analysis/run_metrics.h"
#include "analysis/step_times.h"
#include "export/chrome_trace.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::compile_at;
using test_support::execute_at;
using test_support::source_at;
using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;

struct Recorded {
  test_support::ScratchFolder scratch;
  std::string path;
  int64_t run_id = 0;
};

void record(Recorded& out, const std::vector<pb::Event>& events) {
  out.path = out.scratch.file("h.sqlite");
  Recorder recorder(out.path, test_support::sample_run_info("steps"));
  out.run_id = recorder.run_id();
  for (const pb::Event& event : events) recorder.record(event);
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
}

pb::Event on_replica(pb::Event event, int replica) {
  event.set_replica(replica);
  return event;
}

// Two 10 ms steps on replica 0, each with an item() at line 7; step 0's
// item() graph compiles (2 ms) before it runs (1 ms); step 1's hits the
// cache (0.5 ms). Step 1 also runs a 3 ms CPU fallback whose operand sync
// (1 ms) and download (0.25 ms) lie inside it. The loader's last barrier
// (step 2) ran nothing. Replica 1 has one step.
std::vector<pb::Event> two_steps() {
  const pb::SourceLocation item = source_at("/w/x.py", 7);
  const pb::SourceLocation barrier = source_at("/w/x.py", 9);
  const pb::SourceLocation matmul = source_at("/w/x.py", 5);
  return {
      test_support::step_event(0, 0, 10 * kMs, 0),
      compile_at(0, 0xe, 1 * kMs, 2 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, item,
                 test_support::chain_graph(0xe, {2}, 1)),
      execute_at(0, 0xe, 3 * kMs, 1 * kMs, pb::SYNC_CAUSE_ITEM, item, false),
      compile_at(0, 0xa, 5 * kMs, 1 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, barrier,
                 test_support::chain_graph(0xa, {2}, 1)),
      execute_at(0, 0xa, 6 * kMs, 2 * kMs, pb::SYNC_CAUSE_MARK_STEP, barrier, false),
      test_support::step_event(1, 10 * kMs, 20 * kMs, 0),
      execute_at(1, 0xe, 11 * kMs, kMs / 2, pb::SYNC_CAUSE_ITEM, item, true),
      test_support::fallback_at(1, "matmul", 12 * kMs, 3 * kMs, 64, matmul),
      execute_at(1, 0xc, 12 * kMs, 1 * kMs, pb::SYNC_CAUSE_FALLBACK, matmul, true),
      test_support::transfer_at(1, false, 13 * kMs, kMs / 4, 64),
      test_support::transfer_at(1, true, 16 * kMs, kMs / 2, 64),
      execute_at(1, 0xa, 17 * kMs, 2 * kMs, pb::SYNC_CAUSE_MARK_STEP, barrier, true),
      test_support::step_event(2, 20 * kMs, 21 * kMs, 0),
      on_replica(test_support::step_event(0, 0, 9 * kMs, 0), 1),
      on_replica(execute_at(0, 0xa, 6 * kMs, 2 * kMs, pb::SYNC_CAUSE_MARK_STEP, barrier, true), 1),
  };
}

TEST(StepTimes, HostWaitIsEachValueReadsCompileAndExecutionAndFallbackIsItsOwnSegment) {
  Recorded run;
  record(run, two_steps());
  const HistoryReader reader(run.path);
  const std::vector<StepTimes> steps = step_times(*reader.timeline(run.run_id));
  ASSERT_EQ(steps.size(), 4u);  // replica 0: steps 0, 1, 2; replica 1: step 0

  const StepTimes& s0 = steps[0];
  EXPECT_TRUE(s0.ran_graph);
  EXPECT_EQ(s0.host_wait_ns, 3 * kMs);  // the item() graph's compile (2 ms) and run (1 ms)
  EXPECT_EQ(s0.compile_ns, 1 * kMs);
  EXPECT_EQ(s0.execute_ns, 2 * kMs);
  EXPECT_EQ(s0.fallback_ns, 0);
  EXPECT_EQ(s0.trace_ns, 4 * kMs);

  const StepTimes& s1 = steps[1];
  EXPECT_EQ(s1.host_wait_ns, kMs / 2);
  EXPECT_EQ(s1.fallback_ns, 3 * kMs);  // its operand sync and download are inside it
  EXPECT_EQ(s1.execute_ns, 2 * kMs);   // the barrier only
  EXPECT_EQ(s1.transfer_ns, kMs / 2);  // the upload outside the fallback
  EXPECT_EQ(s1.trace_ns, 10 * kMs - kMs / 2 - 3 * kMs - 2 * kMs - kMs / 2);

  EXPECT_FALSE(steps[2].ran_graph);  // an empty barrier is not a step
  EXPECT_EQ(steps[3].replica, 1);
  EXPECT_TRUE(steps[3].ran_graph);

  const auto counts = steps_per_replica(steps);
  EXPECT_EQ(counts.at(0), 2);
  EXPECT_EQ(counts.at(1), 1);

  const pb::StepSeries series = step_series(steps, 0);
  ASSERT_EQ(series.steps_size(), 2);
  EXPECT_DOUBLE_EQ(series.host_wait_ms(0), 3.0);
  EXPECT_DOUBLE_EQ(series.fallback_ms(1), 3.0);
  EXPECT_EQ(step_series(steps, 1).steps_size(), 1);
}

TEST(StepTimes, PerReplicaStatsCountStepsThatRanAGraphAndTheirCollectives) {
  // Replica 0: steps 0 (10 ms, 4 ms in collectives, 1000 bytes) and 1
  // (20 ms, 6 ms, 1000 bytes), then an empty barrier with collective time
  // recorded (it must not count). Replica 1: step 0 only (30 ms, 1 ms).
  const pb::SourceLocation barrier = source_at("/w/x.py", 9);
  const auto step = [](int replica, int64_t n, int64_t start_ms, int64_t end_ms, int64_t collective_ms) {
    pb::Event e = on_replica(test_support::step_event(n, start_ms * kMs, end_ms * kMs, 0), replica);
    e.mutable_step()->set_collective_ns(collective_ms * kMs);
    e.mutable_step()->set_collective_bytes(1000);
    return e;
  };
  Recorded run;
  record(run, {
                  step(0, 0, 0, 10, 4),
                  execute_at(0, 0xa, 1 * kMs, 8 * kMs, pb::SYNC_CAUSE_MARK_STEP, barrier, false),
                  step(0, 1, 10, 30, 6),
                  execute_at(1, 0xa, 11 * kMs, 8 * kMs, pb::SYNC_CAUSE_MARK_STEP, barrier, true),
                  step(0, 2, 30, 90, 50),
                  step(1, 0, 0, 30, 1),
                  on_replica(execute_at(0, 0xa, 1 * kMs, 8 * kMs, pb::SYNC_CAUSE_MARK_STEP, barrier, false), 1),
              });
  const std::vector<StepTimes> steps = step_times(*HistoryReader(run.path).timeline(run.run_id));
  EXPECT_EQ(steps[0].collective_ns, 4 * kMs);
  const std::vector<pb::ReplicaStats> stats = replica_stats(steps);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].replica(), 0);
  EXPECT_EQ(stats[0].steps(), 2);
  EXPECT_DOUBLE_EQ(stats[0].step_ms(), 30.0);
  EXPECT_DOUBLE_EQ(stats[0].step_p50_ms(), 15.0);  // the mean of the two middle values
  EXPECT_DOUBLE_EQ(stats[0].collective_ms(), 10.0);
  EXPECT_EQ(stats[0].collective_bytes(), 2000);
  EXPECT_EQ(stats[1].steps(), 1);
  EXPECT_DOUBLE_EQ(stats[1].collective_ms(), 1.0);
  // Where replicas compare: only step 0 ran on both.
  const std::set<int64_t> common = common_steps(steps);
  EXPECT_EQ(common, (std::set<int64_t>{0}));
  const std::vector<pb::ReplicaStats> on_common = replica_stats(steps, &common);
  EXPECT_EQ(on_common[0].steps(), 1);
  EXPECT_DOUBLE_EQ(on_common[0].collective_ms(), 4.0);
  // The timeline's series carries the collective part of each step.
  const pb::StepSeries series = step_series(steps, 0);
  ASSERT_EQ(series.collective_ms_size(), 2);
  EXPECT_DOUBLE_EQ(series.collective_ms(1), 6.0);
}

TEST(StepTimes, TheSummaryCountsOnlyBarriersThatRanAGraph) {
  Recorded run;
  record(run, two_steps());
  const auto summary = HistoryReader(run.path).run_summary(run.run_id);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->steps(), 2);  // not 3: step 2 ran nothing
  EXPECT_DOUBLE_EQ(summary->median_step_ms(), 10.0);
}

TEST(StepTimes, TheDiagnosisHostWaitIsTheSumOfTheStepsHostWait) {
  Recorded run;
  record(run, two_steps());
  const std::optional<RunData> data = load_run_data(HistoryReader(run.path), run.run_id);
  ASSERT_TRUE(data.has_value());
  std::vector<pb::Finding> syncs;
  for (const pb::Finding& finding : diagnose(*data)) {
    if (finding.rule() == "host-sync") syncs.push_back(finding);
  }
  ASSERT_EQ(syncs.size(), 1u);
  int64_t host_wait_ns = 0;
  for (const StepTimes& step : data->step_times) host_wait_ns += step.host_wait_ns;
  EXPECT_DOUBLE_EQ(syncs[0].time_lost_ms(), static_cast<double>(host_wait_ns) / 1e6);
  EXPECT_DOUBLE_EQ(syncs[0].time_lost_ms(), 3.5);
  EXPECT_THAT(syncs[0].detail(), HasSubstr("made the host wait 3.5 ms"));
}

TEST(StepTimes, DerivedMetricsUseTheEnginesNamesAndListNoZeroCauses) {
  Recorded run;
  record(run, two_steps());
  const std::vector<pb::MetricValue> metrics = derive_metrics(*HistoryReader(run.path).timeline(run.run_id));
  const auto find = [&](const std::string& name) -> const pb::MetricValue* {
    for (const pb::MetricValue& m : metrics) {
      if (m.name() == name) return &m;
    }
    return nullptr;
  };
  ASSERT_NE(find("SyncCause.item"), nullptr);
  EXPECT_EQ(find("SyncCause.item")->value(), 2);
  EXPECT_EQ(find("SyncCause.fallback")->value(), 1);
  EXPECT_EQ(find("SyncCause.item()"), nullptr);
  EXPECT_EQ(find("SyncCause.control_flow"), nullptr);  // never happened: no row
  EXPECT_EQ(find("StepTime")->count(), 2);             // steps that ran a graph, replica 0
}

TEST(StepTimes, UnusedCauseCountersAreNotListed) {
  pb::MetricValue metric;
  metric.set_is_counter(true);
  metric.set_name("SyncCause.save");
  EXPECT_TRUE(is_unused_cause_counter(metric));
  metric.set_value(3);
  EXPECT_FALSE(is_unused_cause_counter(metric));
  metric.set_value(0);
  metric.set_name("Fallbacks");  // a zero that says something: no fallbacks
  EXPECT_FALSE(is_unused_cause_counter(metric));
}

TEST(StepTimes, MarkersNameCausesAndReasonsAsTheSharedHelperDoes) {
  Recorded run;
  record(run, two_steps());
  const std::vector<TimelineMarker> markers = timeline_markers(*HistoryReader(run.path).timeline(run.run_id));
  std::vector<std::string> texts;
  for (const TimelineMarker& marker : markers) {
    if (marker.replica == 0) texts.push_back(marker.text);
  }
  EXPECT_THAT(texts, ::testing::Contains("sync: item() at x.py:7"));
  EXPECT_THAT(texts, ::testing::Contains("compile (first sight, 2.000 ms) at x.py:7"));
  EXPECT_THAT(texts, ::testing::Contains("fallback matmul at x.py:5"));
  EXPECT_TRUE(std::is_sorted(markers.begin(), markers.end(), [](const auto& a, const auto& b) {
    return std::tie(a.replica, a.step) < std::tie(b.replica, b.step);
  }));
}

TEST(StepTimes, TheChromeTraceHasTheHostWaitsAndCountsWhatItWrites) {
  Recorded run;
  record(run, two_steps());
  const ChromeTrace trace = chrome_trace(*HistoryReader(run.path).timeline(run.run_id));
  // One entry per line between "[" and "]".
  const size_t lines = static_cast<size_t>(std::count(trace.json.begin(), trace.json.end(), '\n'));
  EXPECT_EQ(trace.event_count, lines - 2);
  EXPECT_THAT(trace.json, HasSubstr("\"name\":\"thread_name\",\"args\":{\"name\":\"host waits (syncs)\"}"));
  // Step 0's item(): from its compile (1 ms after the trace's zero) to the
  // end of its run, 3 ms.
  EXPECT_THAT(trace.json, HasSubstr("{\"name\":\"sync: item()\",\"cat\":\"host_wait\",\"ph\":\"X\",\"pid\":1,"
                                    "\"tid\":6,\"ts\":1000.000,\"dur\":3000.000"));
  EXPECT_THAT(trace.json, HasSubstr("\"host_wait_us\":3000.000,\"fallback_us\":0.000"));
}

TEST(StepTimes, GraphPiecesCutByAFallbackAreNotRecompilations) {
  // --force-fallback matmul: each step's graph is cut at the matmul; the
  // second piece from the same line compiles with reason "structure".
  const pb::SourceLocation matmul = source_at("/w/x.py", 5);
  const pb::SourceLocation barrier = source_at("/w/x.py", 9);
  Recorded run;
  record(run, {
                  test_support::step_event(0, 0, 10 * kMs, 0),
                  compile_at(0, 0x1, 1 * kMs, 1 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, matmul,
                             test_support::chain_graph(0x1, {4}, 1)),
                  execute_at(0, 0x1, 2 * kMs, kMs / 2, pb::SYNC_CAUSE_FALLBACK, matmul, false),
                  test_support::fallback_at(0, "matmul", 1 * kMs, 3 * kMs, 64, matmul),
                  compile_at(0, 0x2, 4 * kMs, 1 * kMs, pb::COMPILE_REASON_STRUCTURE, 0x1, matmul,
                             test_support::chain_graph(0x2, {8}, 3)),
                  execute_at(0, 0x2, 5 * kMs, kMs / 2, pb::SYNC_CAUSE_FALLBACK, matmul, false),
                  test_support::fallback_at(0, "matmul", 4 * kMs, 3 * kMs, 64, matmul),
                  execute_at(0, 0x3, 8 * kMs, kMs / 2, pb::SYNC_CAUSE_MARK_STEP, barrier, false),
              });
  const std::optional<RunData> data = load_run_data(HistoryReader(run.path), run.run_id);
  ASSERT_TRUE(data.has_value());
  const std::vector<pb::Finding> findings = diagnose(*data);
  ASSERT_FALSE(findings.empty());
  for (const pb::Finding& finding : findings) EXPECT_NE(finding.rule(), "recompilation") << finding.title();
  EXPECT_EQ(findings.front().rule(), "cpu-fallback");
  EXPECT_NE(findings.front().severity(), pb::SEVERITY_INFO);
}

}  // namespace
}  // namespace lazyscope::storage
