// The diagnosis rules on runs recorded event by event: exact findings.
#include "analysis/diagnosis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::chain_graph;
using test_support::compile_at;
using test_support::execute_at;
using test_support::source_at;
using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;
constexpr int kSteps = 4;  // each 10 ms: 40 ms of step time in all

// Records four 10 ms steps plus `events`, and loads the run back.
RunData record_and_load(const std::vector<pb::Event>& events) {
  test_support::ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  int64_t run_id = 0;
  {
    Recorder recorder(path, test_support::sample_run_info("diagnosed"));
    run_id = recorder.run_id();
    for (int step = 0; step < kSteps; ++step) {
      recorder.record(test_support::step_event(step, step * 10 * kMs, (step + 1) * 10 * kMs, 0));
    }
    for (const pb::Event& event : events) recorder.record(event);
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  std::optional<RunData> data = load_run_data(HistoryReader(path), run_id);
  EXPECT_TRUE(data.has_value());
  return data ? *data : RunData{};
}

std::vector<pb::Finding> findings_of(const char* rule, const RunData& run) {
  for (const DiagnosisRule& row : diagnosis_rules()) {
    if (std::string(row.id) == rule) return row.find(run);
  }
  ADD_FAILURE() << "no rule " << rule;
  return {};
}

pb::Event mark_step_execution(int step, uint64_t hash) {
  return execute_at(step, hash, step * 10 * kMs + 5 * kMs, 1 * kMs, pb::SYNC_CAUSE_MARK_STEP,
                    source_at("/home/ada/x.py", 9), step > 0);
}

TEST(Diagnosis, RuleTableHasEveryRuleOnce) {
  std::vector<std::string> ids;
  for (const DiagnosisRule& rule : diagnosis_rules()) ids.emplace_back(rule.id);
  EXPECT_THAT(ids, ::testing::ElementsAre("recompilation", "host-sync", "cpu-fallback", "growing-graph",
                                          "blocking-transfer", "replicas"));
}

TEST(Diagnosis, ACleanRunHasNoFindings) {
  std::vector<pb::Event> events = {compile_at(0, 0xa, 1 * kMs, 3 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0,
                                              source_at("/home/ada/x.py", 9), chain_graph(0xa, {8, 3}, 2))};
  for (int step = 0; step < kSteps; ++step) events.push_back(mark_step_execution(step, 0xa));
  // One small upload, one read after the loop (step 4 has no step event).
  events.push_back(test_support::transfer_at(0, true, 1 * kMs, kMs / 10, 96));
  events.push_back(execute_at(kSteps, 0xb, 45 * kMs, 1 * kMs, pb::SYNC_CAUSE_TO_HOST, source_at("x.py", 80)));
  // Sizes, not IsEmpty(): gtest's protobuf printer trips GCC 12's -Wrestrict at -O3.
  EXPECT_EQ(diagnose(record_and_load(events)).size(), 0u);
}

// The optimizer's first step creates its state (momentum buffers), so step 1
// compiles a larger graph once and every later step reuses it: information,
// not a warning; a structure change at a later step, or one that recurs, stays
// a warning.
TEST(Diagnosis, AStructureChangeOnceInStepOneIsWarmUp) {
  const pb::SourceLocation site = source_at("/home/ada/x.py", 9);
  std::vector<pb::Event> events = {
      compile_at(0, 0xa, 1 * kMs, 1 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, site, chain_graph(0xa, {8, 3}, 2)),
      compile_at(1, 0xb, 11 * kMs, 1 * kMs, pb::COMPILE_REASON_STRUCTURE, 0xa, site, chain_graph(0xb, {8, 3}, 4))};
  for (int step = 0; step < kSteps; ++step) events.push_back(mark_step_execution(step, step == 0 ? 0xa : 0xb));
  const auto warm_up = findings_of("recompilation", record_and_load(events));
  ASSERT_EQ(warm_up.size(), 1u);
  EXPECT_EQ(warm_up[0].severity(), pb::SEVERITY_INFO);
  EXPECT_THAT(warm_up[0].title(), HasSubstr("changed once, at step 1, and every later step reuses it"));
  EXPECT_THAT(warm_up[0].detail(), HasSubstr("compiled at x.py:9"));

  // The same change at step 2 of 4 is not warm-up.
  events[1] = compile_at(2, 0xb, 21 * kMs, 1 * kMs, pb::COMPILE_REASON_STRUCTURE, 0xa, site,
                         chain_graph(0xb, {8, 3}, 4));
  const auto late = findings_of("recompilation", record_and_load(events));
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].severity(), pb::SEVERITY_WARNING);
  EXPECT_THAT(late[0].title(), HasSubstr("the traced graph changes at x.py:9"));
}

TEST(Diagnosis, ShapeRecompilesNameTheInputItsShapesAndTheTimeLost) {
  const pb::SourceLocation site = source_at("/home/ada/x.py", 9, "train");
  const pb::SourceLocation batch = source_at("/home/ada/x.py", 5, "train");
  const RunData run = record_and_load({
      compile_at(0, 0xa, 1 * kMs, 4 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, site, chain_graph(0xa, {8, 3}, 2, batch)),
      compile_at(1, 0xb, 11 * kMs, 3 * kMs, pb::COMPILE_REASON_SHAPE, 0xa, site, chain_graph(0xb, {4, 3}, 2, batch)),
      compile_at(2, 0xc, 21 * kMs, 2 * kMs, pb::COMPILE_REASON_SHAPE, 0xb, site, chain_graph(0xc, {6, 3}, 2, batch)),
      compile_at(3, 0xd, 31 * kMs, 1 * kMs, pb::COMPILE_REASON_EVICTED, 0, source_at("/home/ada/x.py", 30),
                 chain_graph(0xd, {1}, 1)),
  });
  const auto findings = findings_of("recompilation", run);
  ASSERT_EQ(findings.size(), 2u);

  const pb::Finding& shape = findings[0];
  EXPECT_EQ(shape.rule(), "recompilation");
  // Only the first dimension varies: named as the batch dimension.
  EXPECT_EQ(shape.title(), "input 0 shape: the batch dimension (dim 0) took 3 values at x.py:5 (2 recompiles, 5.0 ms)");
  EXPECT_EQ(shape.detail(), "shapes: [8, 3], [4, 3], [6, 3]; compiled at x.py:9");
  EXPECT_THAT(shape.fix(), HasSubstr("drop_last=True or pad batches to a fixed size"));
  EXPECT_EQ(shape.source().line(), 5);
  EXPECT_EQ(shape.count(), 2);
  EXPECT_EQ(shape.first_step(), 1);
  EXPECT_EQ(shape.last_step(), 2);
  EXPECT_EQ(shape.steps_affected(), 2);
  EXPECT_DOUBLE_EQ(shape.time_lost_ms(), 5.0);
  EXPECT_DOUBLE_EQ(shape.share_of_step_time(), 5.0 / 40.0);
  EXPECT_EQ(shape.severity(), pb::SEVERITY_CRITICAL);  // over a tenth of step time

  const pb::Finding& evicted = findings[1];
  EXPECT_EQ(evicted.title(), "compiled graphs are evicted and compiled again at x.py:30 (1 recompile, 1.0 ms)");
  EXPECT_THAT(evicted.fix(), HasSubstr("LAZYSCOPE_COMPILE_CACHE_SIZE"));
  EXPECT_EQ(evicted.severity(), pb::SEVERITY_WARNING);
  EXPECT_DOUBLE_EQ(evicted.share_of_step_time(), 1.0 / 40.0);
}

TEST(Diagnosis, HostSyncsInsideStepsGroupedByCauseAndLine) {
  std::vector<pb::Event> events;
  const pb::SourceLocation item = source_at("/home/ada/x.py", 57);
  for (int step = 0; step < kSteps; ++step) {
    events.push_back(mark_step_execution(step, 0xa));
    events.push_back(execute_at(step, 0xe, step * 10 * kMs + 2 * kMs, kMs / 2, pb::SYNC_CAUSE_ITEM, item));
  }
  events.push_back(execute_at(1, 0xf, 13 * kMs, 2 * kMs, pb::SYNC_CAUSE_TO_HOST, source_at("x.py", 70)));
  events.push_back(execute_at(kSteps, 0xe, 41 * kMs, 9 * kMs, pb::SYNC_CAUSE_ITEM, item));  // after the loop
  const auto findings = findings_of("host-sync", record_and_load(events));
  ASSERT_EQ(findings.size(), 2u);

  EXPECT_EQ(findings[0].title(), "item() at x.py:57 in every step forces a sync");
  EXPECT_THAT(findings[0].fix(), HasSubstr("lazyscope.log or read the value after mark_step"));
  EXPECT_EQ(findings[0].count(), 4);
  EXPECT_EQ(findings[0].steps_affected(), 4);
  EXPECT_EQ(findings[0].first_step(), 0);
  EXPECT_EQ(findings[0].last_step(), 3);
  EXPECT_DOUBLE_EQ(findings[0].time_lost_ms(), 2.0);
  EXPECT_EQ(findings[0].severity(), pb::SEVERITY_WARNING);
  EXPECT_EQ(findings[0].detail(),
            "4 syncs made the host wait 2.0 ms for the device inside steps (compile and execution of the graphs "
            "they forced; 1.0 syncs and 500 us per affected step)");

  EXPECT_THAT(findings[1].title(), HasSubstr("at x.py:70 in 1 of 4 steps forces a sync"));
  EXPECT_EQ(findings[1].severity(), pb::SEVERITY_INFO);
  EXPECT_DOUBLE_EQ(findings[1].time_lost_ms(), 2.0);
}

TEST(Diagnosis, FallbacksByOpAndLineWithTheirShareOfStepTime) {
  const pb::SourceLocation line60 = source_at("/home/ada/x.py", 60);
  const RunData run = record_and_load({
      test_support::fallback_at(0, "nonzero", 2 * kMs, 2 * kMs, 64, line60),
      test_support::fallback_at(1, "nonzero", 12 * kMs, 2 * kMs, 64, line60),
      test_support::fallback_at(1, "gelu", 15 * kMs, kMs / 2, 64, source_at("/home/ada/x.py", 61)),
  });
  const auto findings = findings_of("cpu-fallback", run);
  ASSERT_EQ(findings.size(), 2u);
  // Grouped by op: "gelu" sorts before "nonzero".
  EXPECT_EQ(findings[0].title(), "gelu runs on the CPU at x.py:61: 1 calls, 500 us (1.2% of step time)");
  EXPECT_THAT(findings[0].fix(), HasSubstr("the backend does not lower gelu"));
  EXPECT_EQ(findings[0].severity(), pb::SEVERITY_WARNING);
  EXPECT_EQ(findings[1].title(), "nonzero runs on the CPU at x.py:60: 2 calls, 4.0 ms (10.0% of step time)");
  EXPECT_THAT(findings[1].fix(), HasSubstr("data-dependent output shape"));
  EXPECT_EQ(findings[1].severity(), pb::SEVERITY_CRITICAL);
  EXPECT_EQ(findings[1].count(), 2);
  EXPECT_EQ(findings[1].steps_affected(), 2);
  EXPECT_DOUBLE_EQ(findings[1].share_of_step_time(), 0.1);
}

TEST(Diagnosis, FallbacksAreExplainedByTheirRecordedReason) {
  const pb::SourceLocation line = source_at("/home/ada/x.py", 41);
  const auto fallback = [&](int step, const std::string& op, pb::FallbackReason reason, const std::string& dtype,
                            int cut_nodes) {
    pb::Event event = test_support::fallback_at(step, op, step * 10 * kMs + kMs, kMs, 64, line);
    event.mutable_fallback()->set_reason(reason);
    event.mutable_fallback()->set_dtype(dtype);
    event.mutable_fallback()->set_graph_cut_nodes(cut_nodes);
    return event;
  };
  const RunData run = record_and_load({
      // An op not named data-dependent, but recorded as such by the engine.
      fallback(0, "argwhere", pb::FALLBACK_REASON_DATA_DEPENDENT, "float32", 10),
      fallback(1, "argwhere", pb::FALLBACK_REASON_DATA_DEPENDENT, "float32", 20),
      fallback(1, "matmul", pb::FALLBACK_REASON_FORCED, "float32", 0),
      fallback(2, "erf", pb::FALLBACK_REASON_NOT_LOWERED, "float16", 4),
      fallback(kSteps, "erf", pb::FALLBACK_REASON_NOT_LOWERED, "float16", 4),  // after the loop
  });
  const auto findings = findings_of("cpu-fallback", run);
  ASSERT_EQ(findings.size(), 3u);  // by op, line and reason: argwhere, erf, matmul

  EXPECT_EQ(findings[0].title(), "argwhere runs on the CPU at x.py:41: 2 calls, 2.0 ms (5.0% of step time)");
  EXPECT_THAT(findings[0].fix(), HasSubstr("argwhere has a data-dependent output shape"));
  EXPECT_THAT(findings[0].detail(), HasSubstr("2 of the calls inside the step loop, in 2 steps"));
  EXPECT_THAT(findings[0].detail(), HasSubstr("15.0 pending nodes executed early per call"));
  EXPECT_THAT(findings[0].detail(), HasSubstr("operand dtypes: float32"));
  EXPECT_EQ(findings[0].source().line(), 41);
  EXPECT_EQ(findings[0].severity(), pb::SEVERITY_WARNING);

  EXPECT_THAT(findings[1].fix(), HasSubstr("the backend does not lower erf for float16"));
  EXPECT_THAT(findings[1].fix(), HasSubstr("cast its operands to a supported dtype"));
  EXPECT_THAT(findings[1].detail(), HasSubstr("1 of the calls inside the step loop, in 2 steps"));

  // Asked for with --force-fallback: ranked by its cost like any other (it
  // is what the run pays for), the fix says it was forced.
  EXPECT_EQ(findings[2].severity(), pb::SEVERITY_WARNING);
  EXPECT_THAT(findings[2].fix(), HasSubstr("LAZYSCOPE_FORCE_FALLBACK (--force-fallback) names it"));
}

TEST(Diagnosis, ARecompileInAnotherDimensionIsNamedByItsIndex) {
  const pb::SourceLocation made = source_at("/home/ada/x.py", 5);
  const pb::SourceLocation sync = source_at("/home/ada/x.py", 9);
  const RunData run = record_and_load({
      compile_at(0, 0x1, 0, kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, sync, chain_graph(0x1, {8, 16}, 2, made)),
      compile_at(1, 0x2, 10 * kMs, kMs, pb::COMPILE_REASON_SHAPE, 0x1, sync, chain_graph(0x2, {8, 24}, 2, made)),
      compile_at(2, 0x3, 20 * kMs, kMs, pb::COMPILE_REASON_SHAPE, 0x2, sync, chain_graph(0x3, {4, 32}, 2, made)),
  });
  const auto findings = findings_of("recompilation", run);
  ASSERT_EQ(findings.size(), 1u);
  // Two dimensions vary: the shapes are listed instead.
  EXPECT_EQ(findings[0].title(), "input 0 shape took 3 values at x.py:5 (2 recompiles, 2.0 ms)");

  const RunData sequence = record_and_load({
      compile_at(0, 0x1, 0, kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, sync, chain_graph(0x1, {8, 16}, 2, made)),
      compile_at(1, 0x2, 10 * kMs, kMs, pb::COMPILE_REASON_SHAPE, 0x1, sync, chain_graph(0x2, {8, 24}, 2, made)),
  });
  const auto by_length = findings_of("recompilation", sequence);
  ASSERT_EQ(by_length.size(), 1u);
  EXPECT_EQ(by_length[0].title(), "input 0 shape: dimension 1 took 2 values at x.py:5 (1 recompile, 1.0 ms)");
  EXPECT_EQ(by_length[0].source().line(), 5);
  EXPECT_THAT(by_length[0].detail(), HasSubstr("shapes: [8, 16], [8, 24]"));
}

TEST(Diagnosis, GrowingGraphFromRisingNodeCountsAndFromTheNodeLimit) {
  const pb::SourceLocation grows = source_at("/home/ada/x.py", 20);
  const pb::SourceLocation varies = source_at("/home/ada/x.py", 25);
  const auto compile = [](int step, uint64_t hash, int nodes, const pb::SourceLocation& site) {
    return compile_at(step, hash, step * 10 * kMs, 1 * kMs,
                      step == 0 ? pb::COMPILE_REASON_FIRST_SIGHT : pb::COMPILE_REASON_STRUCTURE, 0, site,
                      chain_graph(hash, {2}, nodes - 1));
  };
  const RunData run = record_and_load({
      compile(0, 0x10, 10, grows),
      compile(1, 0x11, 20, grows),
      compile(2, 0x12, 30, grows),
      compile(0, 0x20, 10, varies),
      compile(1, 0x21, 5, varies),
      compile(2, 0x22, 10, varies),
      execute_at(3, 0x30, 31 * kMs, 3 * kMs, pb::SYNC_CAUSE_GRAPH_LIMIT, source_at("/home/ada/x.py", 22)),
  });
  const auto findings = findings_of("growing-graph", run);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].title(),
            "the pending graph hit the node limit 1 times (last traced at x.py:22): a barrier is missing");
  EXPECT_DOUBLE_EQ(findings[0].time_lost_ms(), 3.0);
  EXPECT_EQ(findings[1].title(), "the graph compiled at x.py:20 grows every step: 10 -> 30 nodes over 3 compiles");
  EXPECT_EQ(findings[1].count(), 3);
  EXPECT_EQ(findings[1].first_step(), 0);
  EXPECT_EQ(findings[1].last_step(), 2);
  for (const auto& finding : findings) {
    EXPECT_THAT(finding.fix(), HasSubstr("mark_step()"));
    EXPECT_EQ(finding.severity(), pb::SEVERITY_CRITICAL);
  }
}

TEST(Diagnosis, UploadsAboveTheThresholdShareOfStepTime) {
  const auto uploads = [](int64_t each_ns) {
    std::vector<pb::Event> events;
    for (int step = 0; step < kSteps; ++step) {
      events.push_back(test_support::transfer_at(step, true, step * 10 * kMs, each_ns, 1'000'000));
      events.push_back(
          test_support::transfer_at(step, false, step * 10 * kMs + 5, 5 * kMs, 8));  // downloads do not count
    }
    return events;
  };
  const auto findings = findings_of("blocking-transfer", record_and_load(uploads(3 * kMs / 2)));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].title(), "uploads to the device take 15% of step time and block the step");
  EXPECT_EQ(findings[0].detail(), "4 host-to-device transfers in 4 steps moved 4.0 MB in 6.0 ms");
  EXPECT_THAT(findings[0].fix(), HasSubstr("parallel loader"));
  EXPECT_DOUBLE_EQ(findings[0].share_of_step_time(), 0.15);
  // Exactly at the threshold: not reported.
  EXPECT_EQ(findings_of("blocking-transfer", record_and_load(uploads(1 * kMs))).size(), 0u);
  // A large share of tiny steps, but under a millisecond in all: nothing to gain.
  EXPECT_EQ(findings_of("blocking-transfer", record_and_load(uploads(kMs / 5 - 1))).size(), 0u);
}

// Replicas 0..n-1, four 10 ms steps each (each runs a graph); replica r
// spends waits[r] ms of each step in collectives and contributes 1 MB per
// step. Then every replica's data loader ends with an empty 30 ms barrier,
// which is no step: it must not count in any total.
RunData replicas_run(const std::vector<int64_t>& waits_ms) {
  test_support::ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  int64_t run_id = 0;
  {
    Recorder recorder(path, test_support::sample_run_info("replicated"));
    run_id = recorder.run_id();
    for (int replica = 0; replica < static_cast<int>(waits_ms.size()); ++replica) {
      for (int step = 0; step < kSteps; ++step) {
        pb::Event e = test_support::step_event(step, step * 10 * kMs, (step + 1) * 10 * kMs, 0, replica);
        e.mutable_step()->set_collective_ns(waits_ms[static_cast<size_t>(replica)] * kMs);
        e.mutable_step()->set_collective_bytes(1'000'000);
        recorder.record(e);
        pb::Event x = execute_at(step, 0xa, step * 10 * kMs + kMs, 9 * kMs, pb::SYNC_CAUSE_MARK_STEP,
                                 source_at("x.py", 9), step > 0);
        x.set_replica(replica);
        recorder.record(x);
      }
      recorder.record(test_support::step_event(kSteps, kSteps * 10 * kMs, (kSteps + 3) * 10 * kMs, 0, replica));
    }
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  std::optional<RunData> data = load_run_data(HistoryReader(path), run_id);
  EXPECT_TRUE(data.has_value());
  return data ? *data : RunData{};
}

TEST(Diagnosis, AStragglerIsTheReplicaTheOthersWaitFor) {
  // Replicas 0 and 2 wait 6 ms a step for replica 1, which computes 9 ms of
  // each 10 ms step against their 4: 5 ms a step, 20 ms in all.
  const auto findings = findings_of("replicas", replicas_run({6, 1, 6}));
  ASSERT_EQ(findings.size(), 2u);
  const pb::Finding& straggler = findings[0];
  EXPECT_EQ(straggler.title(),
            "replica 1 is a straggler: its steps compute 5.0 ms longer than the others' median, and the others "
            "wait for it in collectives");
  EXPECT_DOUBLE_EQ(straggler.time_lost_ms(), 20.0);
  EXPECT_DOUBLE_EQ(straggler.share_of_step_time(), 0.5);
  EXPECT_EQ(straggler.first_step(), 0);
  EXPECT_EQ(straggler.last_step(), 3);
  EXPECT_THAT(straggler.detail(), HasSubstr("1: 36.0 ms (waited 4.0 ms)"));
  EXPECT_THAT(straggler.fix(), HasSubstr("DistributedSampler"));
  // 13 of every 30 ms of the three replicas' steps are in collectives.
  const pb::Finding& dominating = findings[1];
  EXPECT_EQ(dominating.title(), "collectives take 43% of step time (4.3 ms per step and replica)");
  EXPECT_THAT(dominating.detail(), HasSubstr("3 replicas contributed 3.00 MB per step"));
}

TEST(Diagnosis, BalancedReplicasWithLittleExchangeHaveNoReplicaFindings) {
  EXPECT_EQ(findings_of("replicas", replicas_run({1, 1})).size(), 0u);
  // Balanced, but exchanging takes most of the step: only that is reported.
  const auto findings = findings_of("replicas", replicas_run({7, 7}));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].title(), "collectives take 70% of step time (7.0 ms per step and replica)");
  // One replica: nothing to compare.
  EXPECT_EQ(findings_of("replicas", replicas_run({9})).size(), 0u);
}

TEST(Diagnosis, FindingsAreOrderedBySeverityThenTimeLost) {
  const pb::SourceLocation site = source_at("x.py", 9);
  const RunData run = record_and_load({
      execute_at(1, 0xf, 13 * kMs, 1 * kMs, pb::SYNC_CAUSE_ITEM, site),     // info
      test_support::fallback_at(0, "gelu", 2 * kMs, 1 * kMs, 64, site),     // warning, 1 ms
      test_support::fallback_at(0, "erf", 2 * kMs, 2 * kMs, 64, site),      // warning, 2 ms
      test_support::fallback_at(0, "nonzero", 2 * kMs, 8 * kMs, 64, site),  // critical
  });
  std::vector<std::string> order;
  for (const auto& finding : diagnose(run)) {
    std::string entry = finding.rule();
    entry.append(" ").append(pb::Severity_Name(finding.severity()));
    order.push_back(entry);
  }
  EXPECT_THAT(order, ::testing::ElementsAre("cpu-fallback SEVERITY_CRITICAL", "cpu-fallback SEVERITY_WARNING",
                                            "cpu-fallback SEVERITY_WARNING", "host-sync SEVERITY_INFO"));
  EXPECT_THAT(diagnose(run)[1].title(), HasSubstr("erf"));
}

}  // namespace
}  // namespace lazyscope::storage
