// conv2d, pooling, batch_norm and dropout at the engine level: the lazy
// backward pass is made of IR backward ops (so it is traced and cached), the
// running-stat update of batch_norm keeps one graph across steps, and the
// dropout rng state is a graph input.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "autograd/autograd.h"
#include "executor/compile_cache.h"
#include "executor/graph_executor.h"
#include "metrics/metrics.h"
#include "tensor/ops.h"
#include "test_util.h"

namespace lazyscope {
namespace {

using testing::lazy0;
using testing::make;

std::set<std::string> pending_ops() {
  std::set<std::string> ops;
  const pb::IrGraph graph = executor::pending_graph(lazy0(), {});
  for (const auto& n : graph.nodes()) ops.insert(n.op());
  return ops;
}

std::vector<float> iota(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7) % 13) - 1.0f;
  return v;
}

TEST(NnOps, LazyConvAndPoolBackwardAreIrOps) {
  executor::mark_step(lazy0());
  Tensor x = make(iota(2 * 3 * 6 * 6, 0.1f), {2, 3, 6, 6}, lazy0());
  Tensor w = make(iota(4 * 3 * 3 * 3, 0.05f), {4, 3, 3, 3}, lazy0());
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  Tensor y = ops::avg_pool2d(ops::max_pool2d(ops::conv2d(x, w, Tensor(), {1, 1}, {1, 1}), {2, 2}), {1, 1});
  y = ops::adaptive_avg_pool2d(y, {2, 1});
  ops::sum(y).backward();
  const auto names = pending_ops();
  for (const char* op : {"conv2d_backward_input", "conv2d_backward_weight", "max_pool2d_backward",
                         "avg_pool2d_backward", "adaptive_avg_pool2d_backward"}) {
    EXPECT_TRUE(names.contains(op)) << op;
  }
  executor::mark_step(lazy0());
  EXPECT_EQ(x.grad().shape(), (Shape{2, 3, 6, 6}));
  EXPECT_EQ(w.grad().shape(), (Shape{4, 3, 3, 3}));
}

// The 3-D ops the same way: their gradients are IR backward ops too (the
// rules are the 2-D ones instantiated for three spatial dims).
TEST(NnOps, LazyConv3dAndPool3dBackwardAreIrOps) {
  executor::mark_step(lazy0());
  Tensor x = make(iota(2 * 3 * 4 * 6 * 6, 0.1f), {2, 3, 4, 6, 6}, lazy0());
  Tensor w = make(iota(4 * 3 * 3 * 3 * 3, 0.05f), {4, 3, 3, 3, 3}, lazy0());
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  Tensor y = ops::avg_pool3d(ops::max_pool3d(ops::conv3d(x, w, Tensor(), {1, 1, 1}, {1, 1, 1}), {2, 2, 2}), {1, 1, 1});
  y = ops::adaptive_avg_pool3d(y, {2, 1, 2});
  EXPECT_EQ(y.shape(), (Shape{2, 4, 2, 1, 2}));
  ops::sum(y).backward();
  const auto names = pending_ops();
  for (const char* op : {"conv3d_backward_input", "conv3d_backward_weight", "max_pool3d_backward",
                         "avg_pool3d_backward", "adaptive_avg_pool3d_backward"}) {
    EXPECT_TRUE(names.contains(op)) << op;
  }
  executor::mark_step(lazy0());
  EXPECT_EQ(x.grad().shape(), (Shape{2, 3, 4, 6, 6}));
  EXPECT_EQ(w.grad().shape(), (Shape{4, 3, 3, 3, 3}));
}

TEST(NnOps, BatchNormRunningStatsKeepOneGraphAcrossSteps) {
  executor::mark_step(lazy0());
  executor::compile_cache().clear();
  metrics::reset();
  Tensor rm = make({0, 0}, {2}, lazy0());
  Tensor rv = make({1, 1}, {2}, lazy0());
  for (int step = 0; step < 4; ++step) {
    Tensor x = make(iota(8, 0.3f * static_cast<float>(step + 1)), {4, 2}, lazy0());
    ops::batch_norm(x, rm, rv, Tensor(), Tensor(), /*training=*/true);
    executor::mark_step(lazy0());
  }
  EXPECT_EQ(metrics::counter("UncachedCompile")->value(), 1);
  EXPECT_EQ(metrics::counter("CachedCompile")->value(), 3);
}

TEST(NnOps, DropoutStateIsAGraphInputAndSeedsReproduce) {
  executor::mark_step(lazy0());
  ops::manual_seed(5);
  Tensor x = make(std::vector<float>(64, 1.0f), {64}, lazy0());
  Tensor a = ops::dropout(x, 0.5, true);
  const pb::IrGraph graph = executor::pending_graph(lazy0(), {a.impl()});
  int masks = 0;
  for (const auto& n : graph.nodes()) masks += n.op() == "dropout_mask";
  EXPECT_EQ(masks, 1);
  const std::vector<float> first = testing::values(a);
  ops::manual_seed(5);
  EXPECT_EQ(testing::values(ops::dropout(x, 0.5, true)), first);
  EXPECT_NE(testing::values(ops::dropout(x, 0.5, true)), first);
}

}  // namespace
}  // namespace lazyscope
