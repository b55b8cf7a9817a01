// The tracing fast paths (issue 11): pooled nodes with inline operands, the
// registry of pending tensors linked through themselves, epoch marks for the
// barrier's walk, the sync's phase profile, apply()'s direct path for
// operands that need no gradient, and the stash of shape vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <utility>

#include "core/pool.h"
#include "core/settings.h"
#include "core/source_location.h"
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
using testing::values;

TEST(Pool, AFreedBlockIsReusedOnTheFreeingThread) {
  void* a = pool::allocate<48>();
  pool::deallocate<48>(a);
  EXPECT_EQ(pool::allocate<48>(), a);  // popped back from this thread's list
  pool::deallocate<48>(a);
}

TEST(Pool, BlocksMayBeFreedOnAnotherThread) {
  // A tensor made on one thread and dropped on another (a loader thread):
  // the block joins the other thread's list, the value is intact until then.
  Tensor t = make({1, 2, 3}, {3}, lazy0());
  Tensor u = ops::add(t, t);
  std::thread([moved = std::move(u)]() mutable {
    EXPECT_EQ(values(moved), (std::vector<float>{2, 4, 6}));
    moved = Tensor();
  }).join();
  Tensor v = ops::mul(t, t);  // allocates again on this thread
  EXPECT_EQ(values(v), (std::vector<float>{1, 4, 9}));
}

TEST(Pool, AStashedShapeKeepsItsStorageForTheNext) {
  std::vector<int64_t> shape{2, 3, 4};
  const int64_t* storage = shape.data();
  pool::stash_vector(shape);
  EXPECT_EQ(shape.capacity(), 0u);  // the stash took the storage
  std::vector<int64_t> next;
  pool::unstash_vector(next);
  EXPECT_EQ(next.data(), storage);
  EXPECT_TRUE(next.empty());
  EXPECT_GE(next.capacity(), 3u);
}

TEST(Trace, TheDirectPathTracesTheGraphTheGeneralPathTraces) {
  // An operand that requires grad sends every op through the general path
  // (promotion, autograd); without one, apply() traces directly. The graph,
  // node by node (op, shape, dtype, hash, scope), must be the same, and so
  // the graph hash: cached programs and recorded histories depend on it.
  const std::string* scope = intern("model.fc1");
  const auto trace = [&](bool requires_grad) {
    Tensor x = make({1, -2, 3, -4, 5, -6}, {2, 3}, lazy0());
    Tensor row = make({1, 2, 3}, {3}, lazy0());
    x.set_requires_grad(requires_grad);
    set_current_scope(scope);
    Tensor y = ops::add(ops::mul(ops::relu(ops::add(x, x)), x), ops::sub(x, row));  // x - row: a broadcast
    y = ops::where(ops::gt(y, ops::neg(y)), y, ops::exp(y));
    set_current_scope(nullptr);
    EXPECT_EQ(y.shape(), (Shape{2, 3}));
    EXPECT_EQ(y.requires_grad(), requires_grad);
    const pb::IrGraph graph = executor::pending_graph(lazy0(), {y.impl()});
    std::vector<float> out = values(y);
    return std::make_pair(graph, out);
  };
  const auto [direct, direct_values] = trace(false);
  const auto [general, general_values] = trace(true);
  EXPECT_EQ(direct.hash(), general.hash());
  ASSERT_EQ(direct.nodes_size(), general.nodes_size());
  for (int i = 0; i < direct.nodes_size(); ++i) {
    const pb::IrNode &d = direct.nodes(i), &g = general.nodes(i);
    EXPECT_EQ(d.op(), g.op()) << i;
    EXPECT_EQ(d.hash(), g.hash()) << i;
    EXPECT_EQ(d.dtype(), g.dtype()) << i;
    EXPECT_EQ(std::vector<int64_t>(d.shape().begin(), d.shape().end()),
              std::vector<int64_t>(g.shape().begin(), g.shape().end()))
        << i;
    if (d.parameter_index() < 0) {
      EXPECT_EQ(d.scope(), "model.fc1") << i;
    }
  }
  // y = relu(2x) * x + (x - row) = {2, -4, 18, -5, 53, -9}; where(y > -y, y, exp(y)).
  const std::vector<float> expected{2, std::exp(-4.f), 18, std::exp(-5.f), 53, std::exp(-9.f)};
  ASSERT_EQ(direct_values.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_FLOAT_EQ(direct_values[k], expected[k]) << k;
    EXPECT_FLOAT_EQ(general_values[k], expected[k]) << k;
  }
}

TEST(Trace, LookingAtThePendingGraphLeavesItPending) {
  // pending_graph() shows the graph the next barrier runs: looking must not
  // take the tensors out of the registry (it did: the barrier then ran nothing).
  executor::mark_step(lazy0());
  Tensor x = make({1, 2}, {2}, lazy0());
  Tensor y = ops::relu(ops::add(x, x));
  EXPECT_EQ(executor::pending_graph(lazy0(), {}).outputs_size(), 1);
  executor::mark_step(lazy0());
  EXPECT_FALSE(y.impl()->pending());
  EXPECT_EQ(values(y), (std::vector<float>{2, 4}));
}

TEST(Trace, ATensorDroppedOnAnotherThreadLeavesTheRegistry) {
  // A pending tensor unlinks itself when it dies, on whichever thread.
  executor::mark_step(lazy0());
  Tensor x = make({1, 2}, {2}, lazy0());
  Tensor kept = ops::relu(x);
  Tensor dropped = ops::add(x, x);
  std::thread([moved = std::move(dropped)]() mutable { moved = Tensor(); }).join();
  const pb::IrGraph graph = executor::pending_graph(lazy0(), {});
  ASSERT_EQ(graph.outputs_size(), 1);
  EXPECT_EQ(graph.nodes(graph.outputs(0)).op(), "relu");
  executor::mark_step(lazy0());
  EXPECT_EQ(values(kept), (std::vector<float>{1, 2}));
}

TEST(Trace, NodesKeepTheirOperandsInOrderInlineOrNot) {
  Tensor a = make({1}, {1}, lazy0()), b = make({2, 2}, {2}, lazy0()), c = make({3}, {1}, lazy0());
  Tensor d = make({4}, {1}, lazy0()), e = make({5}, {1}, lazy0());
  Tensor two = ops::add(a, b);
  ASSERT_EQ(two.impl()->ir->operands().size(), 2u);
  EXPECT_EQ(two.impl()->ir->operands()[0], a.impl()->ir);
  EXPECT_EQ(two.impl()->ir->operands()[1], b.impl()->ir);
  // More operands than a node holds inline: cat of five.
  Tensor five = ops::cat({a, b, c, d, e}, 0);
  const auto operands = five.impl()->ir->operands();
  ASSERT_EQ(operands.size(), 5u);
  const Tensor* expected[] = {&a, &b, &c, &d, &e};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(operands[i], expected[i]->impl()->ir) << "operand " << i;
  EXPECT_EQ(values(five), (std::vector<float>{1, 2, 2, 3, 4, 5}));
  // The structural hash folds the operands in order: swapping two of other shapes changes it.
  EXPECT_NE(ops::cat({b, a, c, d, e}, 0).impl()->ir->hash(), ops::cat({a, b, c, d, e}, 0).impl()->ir->hash());
}

TEST(Trace, ATensorRegisteredAgainIsAnOutputOnceAtItsLastPlace) {
  executor::compile_cache().clear();
  executor::mark_step(lazy0());  // nothing pending from earlier tests
  Tensor x = make({1, 2}, {2}, lazy0());
  Tensor p = make({10, 20}, {2}, lazy0());
  const auto add_x = [&](const Tensor& before) { return ops::add(before, x); };
  views::inplace(p, "add_", add_x);                    // p registers (1)
  Tensor u = ops::mul(x, x);                           // u registers (2)
  EXPECT_EQ(values(p), (std::vector<float>{11, 22}));  // runs p alone: its entry (1) stays behind
  views::inplace(p, "add_", add_x);                    // p registers again (3): entry (1) is stale
  const pb::IrGraph graph = executor::pending_graph(lazy0(), {});
  ASSERT_EQ(graph.outputs_size(), 2);
  EXPECT_EQ(graph.nodes(graph.outputs(0)).op(), "mul");  // u, registered before p's latest value
  EXPECT_EQ(graph.nodes(graph.outputs(1)).op(), "add");  // p, once, at its last registration
  EXPECT_EQ(values(p), (std::vector<float>{12, 24}));
  EXPECT_EQ(values(u), (std::vector<float>{1, 4}));
}

TEST(Trace, TheSyncProfileAddsUpAndNamesACacheHit) {
  executor::compile_cache().clear();
  Tensor x = make({1, 2, 3, 4}, {4}, lazy0());
  for (int step = 0; step < 2; ++step) {
    Tensor y = ops::relu(ops::add(x, x));
    executor::mark_step(lazy0());
    const executor::SyncProfile p = executor::last_sync_profile(lazy0());
    EXPECT_EQ(p.cache_hit, step == 1);
    EXPECT_EQ(p.nodes, 3);  // x, add, relu
    EXPECT_EQ(p.compile_ns > 0, step == 0);
    const int64_t parts = p.collect_ns + p.lower_ns + p.lookup_ns + p.compile_ns + p.bind_inputs_ns + p.execute_ns +
                          p.bind_outputs_ns + p.publish_ns;
    EXPECT_LE(parts, p.total_ns);
    EXPECT_GE(p.kernel_samples, 1);  // the first executions are sampled
    EXPECT_EQ(values(y), (std::vector<float>{2, 4, 6, 8}));
  }
}

TEST(Trace, TheGraphLimitCountsEachNodeOnceAcrossSyncs) {
  // A chain of `x + 1` adds two nodes per op (the sum and the scalar's
  // leaf); with a limit of 40 a 60-op chain is cut once, and a second
  // identical chain after the barrier is counted afresh (the epoch moved).
  const int64_t previous = settings::graph_node_limit();
  settings::set_graph_node_limit(40);
  metrics::reset();
  for (int round = 0; round < 2; ++round) {
    Tensor x = make({0}, {1}, lazy0());
    for (int i = 0; i < 30; ++i) x = ops::add(x, ops::scalar(1.0, DType::kFloat32, lazy0()));
    executor::mark_step(lazy0());
    EXPECT_EQ(values(x), (std::vector<float>{30}));
  }
  EXPECT_EQ(metrics::counters()["GraphNodeLimitSplits"], 2);
  settings::set_graph_node_limit(previous);
}

TEST(Trace, AnOpThatRunsTheGraphAsItRegistersStillRecordsItsAttributes) {
  // With a node limit of 1, registering sum's result runs the graph at
  // once and rebinds the result to a leaf, releasing the traced node; the
  // autograd record made after must not read the attributes (dims) from it.
  const int64_t previous = settings::graph_node_limit();
  settings::set_graph_node_limit(1);
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, lazy0());
  x.set_requires_grad(true);
  for (int i = 0; i < 3; ++i) {
    x.set_grad(Tensor());
    Tensor rows = ops::mean(ops::mul(x, x), {1});  // [2]: mean over dim 1
    Tensor total = ops::sum(rows);
    total.backward();
    // d/dx of sum_i mean_j x_ij^2 = 2 x / 3
    const std::vector<float> g = values(x.grad());
    const std::vector<float> expected{2.f / 3, 4.f / 3, 2, 8.f / 3, 10.f / 3, 4};
    ASSERT_EQ(g.size(), expected.size());
    for (size_t k = 0; k < g.size(); ++k) EXPECT_FLOAT_EQ(g[k], expected[k]) << k;
  }
  settings::set_graph_node_limit(previous);
}

}  // namespace
}  // namespace lazyscope
