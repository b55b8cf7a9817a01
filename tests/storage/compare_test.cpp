// Comparing two recorded runs: summary deltas, graphs matched by hash, reasons.
#include "analysis/compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <map>
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

constexpr int64_t kMs = 1'000'000;
constexpr uint64_t kShared = 0x1111, kOnlyA = 0x2222, kOnlyB = 0x3333;

int64_t record(const std::string& path, int steps, const std::vector<pb::Event>& events) {
  Recorder recorder(path, test_support::sample_run_info("compared"));
  for (int step = 0; step < steps; ++step) {
    recorder.record(test_support::step_event(step, step * 10 * kMs, (step + 1) * 10 * kMs, 0));
  }
  for (const pb::Event& event : events) recorder.record(event);
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  return recorder.run_id();
}

pb::Event execution(int step, uint64_t hash, int64_t duration_ms, bool hit) {
  return execute_at(step, hash, step * 10 * kMs + 5 * kMs, duration_ms * kMs, pb::SYNC_CAUSE_MARK_STEP,
                    source_at("x.py", 9), hit);
}

pb::RunComparison compare_two(test_support::ScratchFolder& scratch) {
  const std::string path = scratch.file("h.sqlite");
  const pb::SourceLocation line9 = source_at("x.py", 9), line12 = source_at("x.py", 12);
  const int64_t a = record(path, 3,
                           {
                               compile_at(0, kShared, 1 * kMs, 4 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, line9,
                                          chain_graph(kShared, {8}, 2)),
                               compile_at(1, kOnlyA, 11 * kMs, 3 * kMs, pb::COMPILE_REASON_SHAPE, kShared, line9,
                                          chain_graph(kOnlyA, {4}, 2)),
                               execution(0, kShared, 1, false),
                               execution(1, kOnlyA, 2, false),
                               execution(2, kShared, 1, true),
                               test_support::fallback_at(1, "nonzero", 12 * kMs, 1 * kMs, 8, line12),
                           });
  const int64_t b = record(path, 4,
                           {
                               compile_at(0, kShared, 1 * kMs, 5 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, line9,
                                          chain_graph(kShared, {8}, 2)),
                               compile_at(0, kOnlyB, 2 * kMs, 3 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, line12,
                                          chain_graph(kOnlyB, {8}, 5)),
                               execution(0, kShared, 1, false),
                               execution(0, kOnlyB, 1, false),
                               execution(1, kShared, 1, true),
                               execution(2, kShared, 1, true),
                               execution(3, kShared, 1, true),
                           });
  HistoryReader reader(path);
  return compare_runs(*load_run_data(reader, a), *load_run_data(reader, b));
}

TEST(Compare, SummaryDeltasAreBMinusA) {
  test_support::ScratchFolder scratch;
  const pb::RunComparison comparison = compare_two(scratch);
  std::map<std::string, pb::MetricDelta> metrics;
  std::vector<std::string> order;
  for (const auto& metric : comparison.metrics()) {
    metrics[metric.metric()] = metric;
    order.push_back(metric.metric());
  }
  EXPECT_THAT(order, ::testing::ElementsAre("steps", "wall_ms", "median_step_ms", "compiles", "compile_ms",
                                            "executions", "execute_ms", "cache_hit_rate", "fallbacks"));
  EXPECT_EQ(metrics["steps"].a(), 3);
  EXPECT_EQ(metrics["steps"].b(), 4);
  EXPECT_EQ(metrics["steps"].delta(), 1);
  EXPECT_DOUBLE_EQ(metrics["median_step_ms"].delta(), 0.0);
  EXPECT_EQ(metrics["compiles"].delta(), 0);
  EXPECT_DOUBLE_EQ(metrics["compile_ms"].a(), 7.0);
  EXPECT_DOUBLE_EQ(metrics["compile_ms"].b(), 8.0);
  EXPECT_DOUBLE_EQ(metrics["compile_ms"].delta(), 1.0);
  EXPECT_EQ(metrics["executions"].delta(), 2);
  EXPECT_DOUBLE_EQ(metrics["cache_hit_rate"].a(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(metrics["cache_hit_rate"].b(), 3.0 / 5.0);
  EXPECT_EQ(metrics["fallbacks"].delta(), -1);
  EXPECT_EQ(comparison.a().run().id() + 1, comparison.b().run().id());
}

TEST(Compare, VerdictsKnowWhichWayIsBetterAndIgnoreNoise) {
  test_support::ScratchFolder scratch;
  const pb::RunComparison comparison = compare_two(scratch);
  std::map<std::string, pb::MetricDelta> metrics;
  for (const auto& metric : comparison.metrics()) metrics[metric.metric()] = metric;
  // Work done, not a cost: more steps or executions is neither better nor worse.
  EXPECT_EQ(metrics["steps"].verdict(), 0);
  EXPECT_EQ(metrics["executions"].verdict(), 0);
  EXPECT_TRUE(metrics["steps"].is_count());
  EXPECT_FALSE(metrics["compile_ms"].is_count());
  EXPECT_EQ(metrics["fallbacks"].verdict(), 1);       // one fewer
  EXPECT_EQ(metrics["cache_hit_rate"].verdict(), 1);  // higher
  // Compiles of A took 4 and 3 ms, of B 5 and 3 ms: two samples tell no
  // spread, so the larger (5 ms) stands for it, times sqrt(2) for a sum of
  // two; B's extra 1 ms is within it.
  EXPECT_DOUBLE_EQ(metrics["compile_ms"].noise(), 5.0 * std::sqrt(2.0));
  EXPECT_EQ(metrics["compile_ms"].verdict(), 0);
  // Five executions of 1 ms in B, three of 1, 2, 1 ms in A: a MAD of 0 ms;
  // B's extra 2 ms of executing is a real change.
  EXPECT_DOUBLE_EQ(metrics["execute_ms"].noise(), 0.0);
  EXPECT_EQ(metrics["execute_ms"].verdict(), -1);
  // Every step took 10 ms in both: no spread, and no change.
  EXPECT_DOUBLE_EQ(metrics["median_step_ms"].noise(), 0.0);
  EXPECT_EQ(metrics["median_step_ms"].verdict(), 0);
}

TEST(Compare, GraphsMatchedByTheirHash) {
  test_support::ScratchFolder scratch;
  const pb::RunComparison comparison = compare_two(scratch);
  ASSERT_EQ(comparison.only_a_size(), 1);
  EXPECT_EQ(comparison.only_a(0).hash(), kOnlyA);
  EXPECT_EQ(comparison.only_a(0).a().compiles(), 1);
  EXPECT_FALSE(comparison.only_a(0).has_b());
  EXPECT_EQ(comparison.only_a(0).compiles_delta(), -1);

  ASSERT_EQ(comparison.only_b_size(), 1);
  EXPECT_EQ(comparison.only_b(0).hash(), kOnlyB);
  EXPECT_EQ(comparison.only_b(0).b().node_count(), 6);
  EXPECT_FALSE(comparison.only_b(0).has_a());

  ASSERT_EQ(comparison.both_size(), 1);
  const pb::GraphMatch& shared = comparison.both(0);
  EXPECT_EQ(shared.hash(), kShared);
  EXPECT_EQ(shared.a().executions(), 2);
  EXPECT_EQ(shared.b().executions(), 4);
  EXPECT_EQ(shared.compiles_delta(), 0);
  EXPECT_DOUBLE_EQ(shared.compile_ms_delta(), 1.0);
  EXPECT_EQ(shared.executions_delta(), 2);
  EXPECT_DOUBLE_EQ(shared.execute_ms_delta(), 2.0);
}

TEST(Compare, OnlyReasonGroupsWhoseCountsDifferAreListed) {
  test_support::ScratchFolder scratch;
  const pb::RunComparison comparison = compare_two(scratch);
  ASSERT_EQ(comparison.reasons_size(), 2);
  const pb::CompileReasonDelta& first_sight = comparison.reasons(0);
  EXPECT_EQ(first_sight.kind(), pb::COMPILE_REASON_FIRST_SIGHT);
  EXPECT_EQ(first_sight.source().line(), 12);
  EXPECT_EQ(first_sight.count_a(), 0);
  EXPECT_EQ(first_sight.count_b(), 1);
  EXPECT_DOUBLE_EQ(first_sight.compile_ms_b(), 3.0);
  const pb::CompileReasonDelta& shape = comparison.reasons(1);
  EXPECT_EQ(shape.kind(), pb::COMPILE_REASON_SHAPE);
  EXPECT_EQ(shape.source().line(), 9);
  EXPECT_EQ(shape.count_a(), 1);
  EXPECT_EQ(shape.count_b(), 0);
  EXPECT_DOUBLE_EQ(shape.compile_ms_a(), 3.0);
}

}  // namespace
}  // namespace lazyscope::storage
