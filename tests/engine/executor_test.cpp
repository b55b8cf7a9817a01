// The graph executor: cache hits, hashing rules, recompile reasons, steps.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/settings.h"
#include "executor/compile_cache.h"
#include "executor/graph_executor.h"
#include "metrics/metrics.h"
#include "tensor/ops.h"
#include "tensor/views.h"
#include "test_util.h"

namespace lazyscope {
namespace {

using testing::lazy0;
using testing::make;

class Executor : public ::testing::Test {
 protected:
  void SetUp() override {
    executor::compile_cache().clear();
    metrics::reset();
  }
  static int64_t counter(const std::string& name) { return metrics::counters()[name]; }
  // One "training step": y = relu(x @ w) * lr, then the barrier.
  static Tensor step(const Tensor& x, const Tensor& w, double lr) {
    Tensor y = ops::mul(ops::relu(ops::matmul(x, w)), ops::scalar(lr, DType::kFloat32, lazy0()));
    executor::mark_step(lazy0());
    return y;
  }
};

TEST_F(Executor, SecondIdenticalStepIsACacheHit) {
  testing::EventCapture capture;
  Tensor w = make({1, 2, 3, 4}, {2, 2}, lazy0());
  for (int i = 0; i < 3; ++i) step(make({1, 1, 1, 1}, {2, 2}, lazy0()), w, 0.1);
  EXPECT_EQ(counter("UncachedCompile"), 1);
  EXPECT_EQ(counter("CachedCompile"), 2);
  EXPECT_EQ(counter("ExecuteCount"), 3);
  ASSERT_EQ(capture.compiles().size(), 1u);
  EXPECT_EQ(capture.compiles()[0].reason_kind(), pb::COMPILE_REASON_FIRST_SIGHT);
  EXPECT_EQ(capture.compiles()[0].graph().nodes_size(), 6);  // x, w, lr, matmul, relu, mul
  const auto execs = capture.executions();
  ASSERT_EQ(execs.size(), 3u);
  EXPECT_FALSE(execs[0].cache_hit());
  EXPECT_TRUE(execs[1].cache_hit());
  EXPECT_EQ(execs[2].cause(), pb::SYNC_CAUSE_MARK_STEP);
  ASSERT_EQ(capture.steps().size(), 3u);
  EXPECT_EQ(capture.steps()[2].step() - capture.steps()[1].step(), 1);
}

TEST_F(Executor, ScalarValuesAreInputsNotConstants) {
  Tensor w = make({1, 2, 3, 4}, {2, 2}, lazy0());
  Tensor x = make({1, 0, 0, 1}, {2, 2}, lazy0());
  Tensor a = step(x, w, 0.5);
  Tensor b = step(x, w, 2.0);
  EXPECT_EQ(counter("UncachedCompile"), 1);
  EXPECT_EQ(testing::values(a), (std::vector<float>{0.5f, 1, 1.5f, 2}));
  EXPECT_EQ(testing::values(b), (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(Executor, NewBatchShapeRecompilesWithAShapeReason) {
  testing::EventCapture capture;
  Tensor w = make({1, 2, 3, 4}, {2, 2}, lazy0());
  step(make({1, 1, 1, 1}, {2, 2}, lazy0()), w, 0.1);
  step(make({1, 1}, {1, 2}, lazy0()), w, 0.1);
  const auto compiles = capture.compiles();
  ASSERT_EQ(compiles.size(), 2u);
  EXPECT_EQ(compiles[1].reason_kind(), pb::COMPILE_REASON_SHAPE);
  EXPECT_NE(compiles[1].reason().find("shape [2, 2] -> [1, 2]"), std::string::npos) << compiles[1].reason();
  EXPECT_EQ(compiles[1].compared_with(), compiles[0].graph_hash());
}

TEST_F(Executor, ExtraOpsRecompileWithAStructureReason) {
  testing::EventCapture capture;
  Tensor x = make({1, 2}, {2}, lazy0());
  Tensor y = ops::add(x, x);
  executor::mark_step(lazy0());
  Tensor z = ops::relu(ops::mul(ops::add(x, x), x));
  executor::mark_step(lazy0());
  const auto compiles = capture.compiles();
  ASSERT_EQ(compiles.size(), 2u);
  EXPECT_EQ(compiles[1].reason_kind(), pb::COMPILE_REASON_STRUCTURE);
  EXPECT_NE(compiles[1].reason().find("+2 nodes"), std::string::npos) << compiles[1].reason();
  EXPECT_NE(compiles[1].reason().find("mul"), std::string::npos) << compiles[1].reason();
}

TEST_F(Executor, HashSeesInputAliasingButNotValues) {
  testing::EventCapture capture;
  Tensor a = make({1, 2}, {2}, lazy0());
  Tensor b = make({3, 4}, {2}, lazy0());
  Tensor same = ops::add(a, a);
  executor::mark_step(lazy0());
  Tensor different = ops::add(a, b);
  executor::mark_step(lazy0());
  Tensor again = ops::add(b, a);  // same structure as add(a, b): a cache hit
  executor::mark_step(lazy0());
  const auto compiles = capture.compiles();
  ASSERT_EQ(compiles.size(), 2u);
  EXPECT_NE(compiles[0].graph_hash(), compiles[1].graph_hash());
  EXPECT_EQ(testing::values(again), (std::vector<float>{4, 6}));
}

TEST_F(Executor, CacheIsBoundedAndReportsEvictions) {
  settings::set_compile_cache_size(1);
  testing::EventCapture capture;
  Tensor x = make({1, 2}, {2}, lazy0());
  Tensor y1 = ops::add(x, x);
  executor::mark_step(lazy0());
  Tensor y2 = ops::mul(x, x);
  executor::mark_step(lazy0());
  Tensor y3 = ops::add(x, x);
  executor::mark_step(lazy0());
  settings::set_compile_cache_size(1024);
  const auto compiles = capture.compiles();
  ASSERT_EQ(compiles.size(), 3u);
  EXPECT_EQ(compiles[2].reason_kind(), pb::COMPILE_REASON_EVICTED);
  EXPECT_EQ(counter("CompileCacheEvictions"), 2);
}

TEST_F(Executor, ReadingAValueRunsOnlyWhatItNeeds) {
  testing::EventCapture capture;
  Tensor x = make({1, 2}, {2}, lazy0());
  Tensor wanted = ops::add(x, x);
  Tensor other = ops::mul(x, x);
  EXPECT_EQ(testing::values(wanted), (std::vector<float>{2, 4}));
  EXPECT_TRUE(other.impl()->pending());
  ASSERT_EQ(capture.executions().size(), 1u);
  EXPECT_EQ(capture.executions()[0].cause(), pb::SYNC_CAUSE_TO_HOST);
  EXPECT_EQ(capture.executions()[0].node_count(), 2);
  executor::mark_step(lazy0());
  EXPECT_FALSE(other.impl()->pending());
}

// Buffer donation: w <- w - 0.5 * g (an optimizer-like update in place)
// three times; w's old value dies with each step, so from the second step
// (w is then the previous step's output) the update writes over its buffer.
TEST_F(Executor, AnInPlaceUpdateWritesOverTheDeadParameter) {
  const std::vector<float> g_values = {1, 2, 3, 4, 5, 6};
  Tensor w = make({10, 20, 30, 40, 50, 60}, {2, 3}, lazy0());
  const Tensor g = make(g_values, {2, 3}, lazy0());
  std::vector<float> want = {10, 20, 30, 40, 50, 60};
  std::vector<int64_t> donated;
  for (int step = 0; step < 3; ++step) {
    const int64_t before = counter("CpuDonatedBuffers");
    views::inplace(w, "sub_", [&](const Tensor& old) {
      return ops::sub(old, ops::mul(g, ops::scalar(0.5, DType::kFloat32, lazy0())));
    });
    executor::mark_step(lazy0());
    donated.push_back(counter("CpuDonatedBuffers") - before);
    for (size_t i = 0; i < want.size(); ++i) want[i] -= 0.5f * g_values[i];
    EXPECT_EQ(testing::values(w), want) << "step " << step;
  }
  EXPECT_EQ(donated[1], 1);
  EXPECT_EQ(donated[2], 1);
}

// A tensor still holding the parameter's old buffer (a C++ detach() shares
// the leaf and its buffer, with no view to regenerate) keeps its values:
// the update gets a new buffer instead.
TEST_F(Executor, AnInPlaceUpdateNeverWritesOverAValueSomeoneHolds) {
  Tensor w = make({10, 20, 30, 40}, {2, 2}, lazy0());
  const Tensor g = make({1, 1, 1, 1}, {2, 2}, lazy0());
  const auto update = [&] {
    views::inplace(w, "sub_", [&](const Tensor& old) { return ops::sub(old, g); });
    executor::mark_step(lazy0());
  };
  update();  // w is now an output of the cached program
  const Tensor kept = w.detach();
  const int64_t before = counter("CpuDonatedBuffers");
  update();
  EXPECT_EQ(counter("CpuDonatedBuffers") - before, 0);
  EXPECT_EQ(testing::values(kept), (std::vector<float>{9, 19, 29, 39}));
  EXPECT_EQ(testing::values(w), (std::vector<float>{8, 18, 28, 38}));
  // Once let go, the next update writes in place again.
  update();
  EXPECT_EQ(testing::values(w), (std::vector<float>{7, 17, 27, 37}));
  EXPECT_EQ(testing::values(kept), (std::vector<float>{9, 19, 29, 39}));
}

// A step that fails after its update (an index out of range, found only
// when the kernel runs) must leave the parameter's old value intact: the
// update's tensors stay pending and run again, from it, when read.
TEST_F(Executor, AStepThatFailsAfterItsUpdateKeepsTheOldParameter) {
  Tensor w = make({10, 20, 30, 40}, {2, 2}, lazy0());
  const Tensor g = make({1, 1, 1, 1}, {2, 2}, lazy0());
  const auto step = [&](float row) {
    views::inplace(w, "sub_", [&](const Tensor& old) { return ops::sub(old, g); });
    // Reads the new value, so it runs after the update.
    const Tensor picked = ops::index_select(w, 0, ops::cast(make({row}, {1}, lazy0()), DType::kInt64));
    executor::mark_step(lazy0());
  };
  step(1);
  step(1);  // w is now an output of this very program, held by nothing else
  EXPECT_THROW(step(5), IndexError);
  EXPECT_EQ(testing::values(w), (std::vector<float>{7, 17, 27, 37}));
}

TEST_F(Executor, GraphNodeLimitSplitsARunawayGraph) {
  settings::set_graph_node_limit(50);
  testing::EventCapture capture;
  Tensor x = make({1}, {1}, lazy0());
  for (int i = 0; i < 120; ++i) x = ops::add(x, x);
  settings::set_graph_node_limit(100000);
  EXPECT_GE(counter("GraphNodeLimitSplits"), 2);
  bool saw_limit = false;
  for (const auto& e : capture.executions()) saw_limit |= e.cause() == pb::SYNC_CAUSE_GRAPH_LIMIT;
  EXPECT_TRUE(saw_limit);
  executor::mark_step(lazy0());
  EXPECT_EQ(testing::values(x)[0], std::ldexp(1.0f, 120));
}

}  // namespace
}  // namespace lazyscope
