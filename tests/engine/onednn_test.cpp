// The oneDNN-backed conv/pool kernels: a training step's primitives are
// created once, and a cached step creates none (the primitive cache keys on
// shapes and attributes); a new geometry creates its own.
#include <gtest/gtest.h>

#include "backend/cpu/onednn.h"
#include "executor/graph_executor.h"
#include "tensor/ops.h"
#include "test_util.h"

namespace lazyscope {
namespace {

using testing::lazy0;
using testing::make;

std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.01f * static_cast<float>((i * 7) % 13) - 0.05f;
  return v;
}

// conv -> max pool -> sum, forward and backward, on the lazy device.
void train_step(int64_t hw) {
  Tensor x = make(ramp(static_cast<size_t>(2 * 4 * hw * hw)), {2, 4, hw, hw}, lazy0());
  Tensor w = make(ramp(4 * 4 * 3 * 3), {4, 4, 3, 3}, lazy0());
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  ops::sum(ops::max_pool2d(ops::conv2d(x, w, Tensor(), {1, 1}, {1, 1}), {2, 2})).backward();
  executor::mark_step(lazy0());
  ASSERT_EQ(w.grad().shape(), (Shape{4, 4, 3, 3}));
}

TEST(OneDnn, ACachedStepCreatesNoPrimitive) {
  const int64_t before = cpu::onednn::primitives_created();
  train_step(8);
  const int64_t first = cpu::onednn::primitives_created();
  // conv forward, backward data, backward weights, pool forward, training and backward
  EXPECT_GE(first - before, 6);
  train_step(8);
  train_step(8);
  EXPECT_EQ(cpu::onednn::primitives_created(), first);
  train_step(10);  // another geometry: its own primitives
  EXPECT_GT(cpu::onednn::primitives_created(), first);
}

}  // namespace
}  // namespace lazyscope
