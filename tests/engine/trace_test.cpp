// The tracing fast paths (issue 11): pooled nodes with inline operands, the
// registry of pending tensors linked through themselves, epoch marks for the
// barrier's walk, the sync's phase profile, apply()'s direct path for
// operands that need no gradient, and the stash of shape vectors.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "backend/backend.h"
#include "core/error.h"
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

TEST(Trace, ATensorDroppedWhileItsBarrierRunsIsNotBound) {
  // A barrier binds its results through bare pointers (no reference per
  // tensor). One whose last reference goes while the graph runs (here from
  // a subscriber of the compile event, inside the sync) leaves the sync's
  // list as it dies: the pool block it frees, taken at once by a new
  // tensor, must not be bound to the dropped tensor's result.
  executor::compile_cache().clear();
  executor::mark_step(lazy0());
  Tensor x = make({1, 2}, {2}, lazy0());
  const Tensor kept = ops::relu(ops::add(x, x));
  std::optional<Tensor> dropped = ops::mul(x, x);
  const TensorImpl* dropped_at = dropped->impl().get();
  BufferPtr seven = Buffer::allocate(DType::kFloat32, {2});
  seven->as<float>()[0] = 7;
  seven->as<float>()[1] = 8;
  Tensor late;
  const int id = events::subscribe([&](const pb::Event& e) {
    if (!e.has_compile() || !dropped) return;
    dropped.reset();
    late = Tensor::wrap(seven, lazy0());  // one TensorImpl: the block just freed (the pool's lists are LIFO)
  });
  executor::mark_step(lazy0());
  events::unsubscribe(id);
  ASSERT_TRUE(late.defined());
  EXPECT_EQ(late.impl().get(), dropped_at) << "the probe needs the freed block reused";
  EXPECT_EQ(values(late), (std::vector<float>{7, 8}));
  EXPECT_EQ(values(kept), (std::vector<float>{2, 4}));
  EXPECT_FALSE(kept.impl()->pending());
}

TEST(Trace, AFailedBarrierLeavesItsTensorsInNoList) {
  // A barrier whose graph fails lets its tensors go from its own list: they
  // leave the barrier's set (the next one runs without them) and link to
  // nothing that outlives the sync; reading one runs its graph again.
  executor::mark_step(lazy0());
  Tensor w = make({1, 2, 3, 4}, {2, 2}, lazy0());
  const Tensor picked = ops::index_select(w, 0, ops::cast(make({5}, {1}, lazy0()), DType::kInt64));
  const Tensor doubled = ops::add(w, w);
  EXPECT_THROW(executor::mark_step(lazy0()), IndexError);
  EXPECT_EQ(picked.impl()->pending_link.list.load(), nullptr);
  EXPECT_EQ(doubled.impl()->pending_link.list.load(), nullptr);
  EXPECT_TRUE(doubled.impl()->pending());
  const Tensor squared = ops::mul(w, w);
  executor::mark_step(lazy0());  // runs squared alone
  EXPECT_EQ(values(squared), (std::vector<float>{1, 4, 9, 16}));
  EXPECT_EQ(values(doubled), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_THROW(values(picked), IndexError);
}

TEST(Trace, TensorsDroppedOnAnotherThreadWhileBarriersRunLeaveNoTrace) {
  // One thread traces and runs steps; another drops the step's tensors
  // meanwhile, some before their barrier, some while it runs: each leaves
  // whichever list holds it (the device's or the running sync's). The
  // values are checked against the same arithmetic on the host.
  const Device device{DeviceKind::kLazy, 5};
  executor::mark_step(device);
  std::mutex mu;
  std::vector<Tensor> handed;
  std::atomic<bool> done{false};
  std::thread dropper([&] {
    while (!done.load()) {
      std::vector<Tensor> drop;
      {
        std::lock_guard lock(mu);
        drop.swap(handed);
      }
      drop.clear();
      std::this_thread::yield();
    }
  });
  Tensor x = make({0.5f, -1.0f, 2.0f}, {3}, device);
  std::vector<float> host{0.5f, -1.0f, 2.0f};
  for (int step = 0; step < 200; ++step) {
    Tensor y = x;
    std::vector<float> h = host;
    std::vector<Tensor> made;
    for (int i = 0; i < 12; ++i) {
      y = i % 2 ? ops::relu(y) : ops::add(y, x);
      for (size_t k = 0; k < h.size(); ++k) h[k] = i % 2 ? std::max(h[k], 0.0f) : h[k] + host[k];
      made.push_back(y);
    }
    {
      // Handed over just before the barrier: most die while it runs.
      std::lock_guard lock(mu);
      for (Tensor& t : made) handed.push_back(std::move(t));
    }
    made.clear();
    executor::mark_step(device);
    ASSERT_EQ(values(y), h) << "step " << step;
  }
  done.store(true);
  dropper.join();
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

// Trace replay (settings::reuse_ir_nodes): a direct-path op traced like the
// previous step's op at its place gets that step's node.

int64_t created_nodes() { return metrics::counters()["CreatedIrNodes"]; }

// A source line the tests choose (no Python frames in C++ tests).
int g_test_line = 0;
SourceLocation test_location() { return {intern("reuse_test.py"), nullptr, g_test_line}; }

// Sets the reuse setting for a test and restores it.
struct ReuseSetting {
  bool previous = settings::reuse_ir_nodes();
  explicit ReuseSetting(bool on) { settings::set_reuse_ir_nodes(on); }
  ~ReuseSetting() { settings::set_reuse_ir_nodes(previous); }
};

TEST(TraceReuse, AStepTracedAgainGetsThePreviousStepsNodesAndTheSameGraph) {
  // The same chain each step over the same input: from the second step on
  // no node is made, the graph hash and the values are those of fresh nodes.
  const auto run = [](bool reuse) {
    ReuseSetting setting(reuse);
    executor::mark_step(lazy0());
    executor::mark_step(lazy0());  // the lists of earlier tests settled
    Tensor x = make({1, -2, 3, -4}, {4}, lazy0());
    Tensor w = make({0.5f, 0.25f, 2, 1}, {4}, lazy0());
    std::vector<int64_t> made;
    std::vector<const Node*> products;
    std::vector<uint64_t> hashes;
    std::vector<Tensor> results;
    for (int step = 0; step < 4; ++step) {
      const int64_t before = created_nodes();
      Tensor y = ops::where(ops::gt(x, w), ops::mul(ops::relu(ops::add(x, w)), w), ops::neg(x));
      made.push_back(created_nodes() - before);
      products.push_back(y.impl()->ir->operands()[1].get());  // relu(x + w) * w
      hashes.push_back(executor::pending_graph(lazy0(), {y.impl()}).hash());
      executor::mark_step(lazy0());
      results.push_back(y);
    }
    return std::make_tuple(made, products, hashes, results);
  };
  const auto [made, products, hashes, results] = run(true);
  // gt, add, relu, mul, neg, where; `where` takes apply()'s general path
  // (its promotion rule), so it alone is made again each step.
  EXPECT_EQ(made, (std::vector<int64_t>{6, 1, 1, 1}));
  EXPECT_EQ(products[1], products[0]);
  EXPECT_EQ(products[3], products[0]);
  const auto [fresh_made, fresh_products, fresh_hashes, fresh_results] = run(false);
  EXPECT_EQ(fresh_made, (std::vector<int64_t>{6, 6, 6, 6}));
  EXPECT_EQ(hashes, fresh_hashes);
  // where(x > w, relu(x + w) * w, -x): x = {1, -2, 3, -4}, w = {.5, .25, 2, 1}
  const std::vector<float> expected{0.75f, 2, 10, 4};
  for (size_t step = 0; step < results.size(); ++step) {
    // Read after later steps ran: every step's result keeps its value.
    EXPECT_EQ(values(results[step]), expected) << "step " << step;
    EXPECT_EQ(values(fresh_results[step]), expected) << "step " << step;
  }
}

TEST(TraceReuse, AnOpUnlikeThePreviousStepsGetsANodeOfItsOwn) {
  // A different operand, op, attribute, shape, source line or scope at the
  // same place: a new node with what this step traced, never the old one.
  ReuseSetting setting(true);
  set_source_location_provider(&test_location);
  Tensor x = make({1, -2, 3}, {3}, lazy0());
  Tensor other = make({4, 5, -6}, {3}, lazy0());
  Tensor wide = make({1, -2, 3, 7}, {4}, lazy0());
  const std::string* scope = intern("model.block");
  struct Variant {
    const char* what;
    std::function<Tensor()> op;
    std::vector<float> expected;
  };
  const std::vector<Variant> variants{
      {"the same", [&] { return ops::leaky_relu(ops::add(x, x), 0.5); }, {2, -2, 6}},
      {"another operand", [&] { return ops::leaky_relu(ops::add(x, other), 0.5); }, {5, 3, -1.5f}},
      {"another op", [&] { return ops::leaky_relu(ops::mul(x, x), 0.5); }, {1, 4, 9}},
      {"another attribute", [&] { return ops::leaky_relu(ops::add(x, x), 0.25); }, {2, -1, 6}},
      {"another shape", [&] { return ops::leaky_relu(ops::add(wide, wide), 0.5); }, {2, -2, 6, 14}},
      {"another line",
       [&] {
         g_test_line = 2;
         return ops::leaky_relu(ops::add(x, x), 0.5);
       },
       {2, -2, 6}},
      {"another scope",
       [&] {
         set_current_scope(scope);
         return ops::leaky_relu(ops::add(x, x), 0.5);
       },
       {2, -2, 6}},
  };
  for (const Variant& v : variants) {
    // The previous step: the first variant's ops, at line 1.
    g_test_line = 1;
    executor::mark_step(lazy0());
    Tensor before = variants[0].op();
    const NodePtr held = before.impl()->ir;  // alive: no new node can take its address
    executor::mark_step(lazy0());
    Tensor after = v.op();
    const Node& node = *after.impl()->ir;
    set_current_scope(nullptr);
    if (std::string(v.what) == "the same") {
      EXPECT_EQ(&node, held.get());
    } else {
      EXPECT_NE(&node, held.get()) << v.what;
      if (std::string(v.what) != "another attribute") {  // the add below differs too
        EXPECT_NE(node.operands()[0].get(), held->operands()[0].get()) << v.what;
      } else {
        EXPECT_EQ(node.operands()[0].get(), held->operands()[0].get());  // x + x, the same
      }
    }
    EXPECT_EQ(node.source().line, std::string(v.what) == "another line" ? 2 : 1) << v.what;
    EXPECT_EQ(node.scope(), std::string(v.what) == "another scope" ? scope : nullptr) << v.what;
    EXPECT_EQ(values(after), v.expected) << v.what;
  }
  set_source_location_provider(nullptr);
  g_test_line = 0;
}

TEST(TraceReuse, TheListsHoldNoBufferOnceNothingElseDoes) {
  // A step's nodes are kept for the next step only while their input leaves
  // are held from outside: an input let go is freed at the next barrier.
  ReuseSetting setting(true);
  // Without donation: x's buffer, let go, would become y's output.
  const bool donation = settings::buffer_donation();
  settings::set_buffer_donation(false);
  executor::mark_step(lazy0());
  Tensor x = make({1, 2, 3}, {3}, lazy0());
  const std::weak_ptr<Buffer> buffer = x.impl()->buffer;
  for (int step = 0; step < 3; ++step) {
    Tensor y = ops::relu(ops::add(x, x));
    if (step == 2) x = Tensor();     // let go in the middle of the last step
    EXPECT_FALSE(buffer.expired());  // the step's nodes still read it
    executor::mark_step(lazy0());
    EXPECT_EQ(buffer.expired(), step == 2) << "step " << step;
    EXPECT_EQ(values(y), (std::vector<float>{2, 4, 6}));
  }
  settings::set_buffer_donation(donation);
}

TEST(TraceReuse, ManyStepsMakeNoNodesAndKeepNoMore) {
  // 200 steps of a 100-op chain: nodes made once, nothing piles up (the
  // previous step's nodes are the only ones kept: each step's result is
  // rebound to its own leaf and the chain's nodes are shared).
  ReuseSetting setting(true);
  executor::mark_step(lazy0());
  Tensor x = make({0.5f, -1}, {2}, lazy0());
  const std::weak_ptr<const Node> leaf = x.impl()->ir;
  const int64_t before = created_nodes();
  const int64_t reused_before = metrics::counters()["ReusedIrNodes"];
  std::weak_ptr<const Node> first_root;
  for (int step = 0; step < 200; ++step) {
    Tensor y = x;
    for (int i = 0; i < 50; ++i) y = ops::relu(ops::add(y, x));
    if (step == 0) first_root = y.impl()->ir;
    EXPECT_EQ(y.impl()->ir, first_root.lock());
    executor::mark_step(lazy0());
    EXPECT_EQ(values(y), (std::vector<float>{25.5f, 0}));
  }
  EXPECT_EQ(created_nodes() - before, 100);
  EXPECT_EQ(metrics::counters()["ReusedIrNodes"] - reused_before, 199 * 100);
  // The root is held by the list alone (once), and through it the chain.
  EXPECT_EQ(first_root.use_count(), 1);
  ReuseSetting off(false);
  executor::mark_step(lazy0());  // reuse turned off: the lists let go
  EXPECT_TRUE(first_root.expired());
  EXPECT_FALSE(leaf.expired());  // x still holds its leaf
}

TEST(TraceReuse, AReusedNodeStillLetsAnUpdateDonateItsBuffer) {
  // w <- w - g * g: g * g is the previous step's node each step (g is held),
  // and the reuse lists hold it; their references are the graph's own, so
  // w's dead old buffer is still written over from the second step on.
  ReuseSetting setting(true);
  executor::mark_step(lazy0());
  Tensor w = make({10, 20, 30}, {3}, lazy0());
  const Tensor g = make({1, 2, 3}, {3}, lazy0());
  std::vector<float> want{10, 20, 30};
  std::vector<int64_t> donated;
  const Node* first_square = nullptr;
  for (int step = 0; step < 4; ++step) {
    const int64_t before = metrics::counters()["CpuDonatedBuffers"];
    Tensor gg = ops::mul(g, g);
    if (step == 0) first_square = gg.impl()->ir.get();
    EXPECT_EQ(gg.impl()->ir.get(), first_square) << "step " << step;
    views::inplace(w, "sub_", [&](const Tensor& old) { return ops::sub(old, gg); });
    gg = Tensor();
    executor::mark_step(lazy0());
    donated.push_back(metrics::counters()["CpuDonatedBuffers"] - before);
    for (size_t i = 0; i < want.size(); ++i) want[i] -= static_cast<float>((i + 1) * (i + 1));
    EXPECT_EQ(values(w), want) << "step " << step;
  }
  EXPECT_EQ(donated, (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(TraceReuse, AStepOfTheSameNodesIsCompiledAgainInBf16Mode) {
  // The sync reuses the last walk when the roots are the same nodes; bf16
  // mode changes the graph's hash (its program rounds differently), so a
  // step of the very same nodes after the mode changed is a new program,
  // and its values are rounded as bf16's.
  ReuseSetting setting(true);
  executor::compile_cache().clear();
  executor::mark_step(lazy0());
  Tensor x = make({1.001f, 2.003f, -3.007f}, {3}, lazy0());
  const auto compiles = [] { return metrics::counters()["UncachedCompile"]; };
  std::vector<int64_t> made;
  std::vector<std::vector<float>> got;
  const Node* first_root = nullptr;
  for (int step = 0; step < 4; ++step) {
    settings::set_bf16_mode(step == 2);
    const int64_t before = compiles();
    Tensor y = ops::mul(ops::add(x, x), x);
    if (step == 0) first_root = y.impl()->ir.get();
    EXPECT_EQ(y.impl()->ir.get(), first_root) << "step " << step;  // the same nodes every step
    executor::mark_step(lazy0());
    made.push_back(compiles() - before);
    got.push_back(values(y));
  }
  settings::set_bf16_mode(false);
  EXPECT_EQ(made, (std::vector<int64_t>{1, 0, 1, 0}));  // step 3: float32's program, cached
  // (x + x) * x = 2 x^2; in bf16 mode the sum and the product are rounded to bf16's 8 bits.
  for (int step : {0, 1, 3}) {
    for (size_t i = 0; i < 3; ++i) {
      const float v = std::vector<float>{1.001f, 2.003f, -3.007f}[i];
      EXPECT_FLOAT_EQ(got[static_cast<size_t>(step)][i], (v + v) * v) << step;
    }
  }
  const auto bf16 = [](float f) {  // round to nearest even, to bfloat16's 8 bits of mantissa
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  };
  for (size_t i = 0; i < 3; ++i) {
    const float v = std::vector<float>{1.001f, 2.003f, -3.007f}[i];
    EXPECT_FLOAT_EQ(got[2][i], bf16(bf16(v + v) * v)) << i;
  }
  EXPECT_NE(got[2], got[0]);
}

TEST(TraceReuse, ALoopThatReadsAValueEachIterationKeepsNoInputsAlive) {
  // No barrier, a value read each iteration (an evaluation loop summing
  // accuracies): the nodes traced before a sync are let go at it, so the
  // inputs they read are freed as soon as the loop drops them.
  ReuseSetting setting(true);
  executor::mark_step(lazy0());
  std::vector<std::weak_ptr<Buffer>> inputs;
  float total = 0;
  for (int i = 0; i < 20; ++i) {
    Tensor x = make({static_cast<float>(i), 1}, {2}, lazy0());
    inputs.push_back(x.impl()->buffer);
    total += values(ops::sum(ops::relu(ops::add(x, x))))[0];
  }
  EXPECT_EQ(total, 2 * (19 * 20 / 2) + 2 * 20);
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_TRUE(inputs[i].expired()) << "input " << i;
  executor::mark_step(lazy0());
}

TEST(TraceReuse, AnOpForcedOffTheDeviceSinceIsNotReused) {
  // relu(x + x) twice; before the second step relu is forced onto the host:
  // the previous step's relu node matches, but the device no longer runs
  // it, so the op falls back (an event, the host's result), while x + x is
  // still the previous step's node.
  ReuseSetting setting(true);
  executor::mark_step(lazy0());
  Tensor x = make({-2, 3}, {2}, lazy0());
  Tensor first = ops::relu(ops::add(x, x));
  const NodePtr sum = first.impl()->ir->operands()[0];
  executor::mark_step(lazy0());
  settings::set_forced_fallbacks({"relu"});
  testing::EventCapture capture;
  Tensor doubled = ops::add(x, x);
  EXPECT_EQ(doubled.impl()->ir, sum);
  Tensor second = ops::relu(doubled);
  settings::set_forced_fallbacks({});
  ASSERT_EQ(capture.fallbacks().size(), 1u);
  EXPECT_EQ(capture.fallbacks()[0].reason(), pb::FALLBACK_REASON_FORCED);
  executor::mark_step(lazy0());
  EXPECT_EQ(values(second), (std::vector<float>{0, 6}));
  EXPECT_EQ(values(first), (std::vector<float>{0, 6}));
}

TEST(TraceReuse, AReplayedOpIsAskedAgainOnceABackendIsInstalledOrAnOpForced) {
  // relu(x + x) replayed for three steps, so the device's answer for relu is
  // kept with its node; then a backend that refuses relu is installed, and
  // later relu is forced off the device: each time the replayed relu falls
  // back (an event, the host's result), never the kept answer.
  ReuseSetting setting(true);
  executor::mark_step(lazy0());
  Tensor x = make({-2, 3}, {2}, lazy0());
  const auto replay = [&x](int steps) {
    const Node* relu_node = nullptr;
    for (int step = 0; step < steps; ++step) {
      Tensor y = ops::relu(ops::add(x, x));
      if (step > 0) {
        EXPECT_EQ(y.impl()->ir.get(), relu_node) << "step " << step;  // replayed
      }
      relu_node = y.impl()->ir.get();
      executor::mark_step(lazy0());
      EXPECT_EQ(values(y), (std::vector<float>{0, 6}));
    }
  };
  replay(3);
  testing::EventCapture capture;
  RestrictedBackend no_relu(default_backend(), {{OpKind::kRelu, std::nullopt}});
  set_default_backend(&no_relu);
  Tensor on_host = ops::relu(ops::add(x, x));
  set_default_backend(nullptr);
  ASSERT_EQ(capture.fallbacks().size(), 1u);
  EXPECT_EQ(capture.fallbacks()[0].op(), "relu");
  EXPECT_EQ(capture.fallbacks()[0].reason(), pb::FALLBACK_REASON_NOT_LOWERED);
  executor::mark_step(lazy0());
  EXPECT_EQ(values(on_host), (std::vector<float>{0, 6}));

  replay(3);  // the CPU backend again: replayed, its answer kept anew
  EXPECT_EQ(capture.fallbacks().size(), 1u);
  settings::set_forced_fallbacks({"relu"});
  Tensor forced = ops::relu(ops::add(x, x));
  settings::set_forced_fallbacks({});
  ASSERT_EQ(capture.fallbacks().size(), 2u);
  EXPECT_EQ(capture.fallbacks()[1].reason(), pb::FALLBACK_REASON_FORCED);
  executor::mark_step(lazy0());
  EXPECT_EQ(values(forced), (std::vector<float>{0, 6}));
}

TEST(TraceReuse, ASyncOfTheSameGraphDonatesOnceItsInputIsLetGo) {
  // y = x * x replayed each step: the same nodes, so the same walk, and the
  // barrier counts only x's references against the graph's (kept from the
  // last full count). While x is held its buffer is never given (x keeps
  // its values); the step in which it is let go gives it to y.
  ReuseSetting setting(true);
  executor::mark_step(lazy0());
  Tensor x = make({1, 2, 3}, {3}, lazy0());
  const auto donated = [] { return metrics::counters()["CpuDonatedBuffers"]; };
  for (int step = 0; step < 3; ++step) {
    const int64_t before = donated();
    Tensor y = ops::mul(x, x);
    executor::mark_step(lazy0());
    EXPECT_EQ(donated() - before, 0) << "step " << step;
    EXPECT_EQ(values(y), (std::vector<float>{1, 4, 9})) << "step " << step;
    EXPECT_EQ(values(x), (std::vector<float>{1, 2, 3})) << "step " << step;
  }
  const int64_t before = donated();
  Tensor y = ops::mul(x, x);
  const void* x_bytes = x.impl()->buffer->data();
  x = Tensor();
  executor::mark_step(lazy0());
  EXPECT_EQ(donated() - before, 1);
  EXPECT_EQ(y.impl()->buffer->data(), x_bytes);
  EXPECT_EQ(values(y), (std::vector<float>{1, 4, 9}));
}

}  // namespace
}  // namespace lazyscope
