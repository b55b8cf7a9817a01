// No OpenMP team is started by a convolutional training step: oneDNN's
// convolutions and max pools run split over the engine's pool, each part a
// single-threaded primitive (onednn.cpp, kernels_conv.cpp, kernels_pool.cpp),
// so the pool's threads are the only ones at work. Counted by interposing
// libgomp's GOMP_parallel, where every `#pragma omp parallel` of oneDNN's
// OpenMP build starts a team: this executable defines and exports it
// (tests/engine/CMakeLists.txt), so libdnnl's calls land here first, are
// counted, and go on to libgomp's. A control turns the split off and sees
// the teams, so the count is known to see them.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>

#include "backend/cpu/kernels.h"
#include "executor/graph_executor.h"
#include "tensor/ops.h"
#include "test_util.h"

namespace {

std::atomic<long> g_teams{0};

}  // namespace

// Counts the teams of more than one thread (0 asks for the calling thread's
// OpenMP count), then runs the region as libgomp would.
extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) {
  using Fn = void (*)(void (*)(void*), void*, unsigned, unsigned);
  static const Fn real = [] {
    void* gomp = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return gomp ? reinterpret_cast<Fn>(dlsym(gomp, "GOMP_parallel")) : nullptr;
  }();
  if (num_threads != 1) g_teams.fetch_add(1);
  if (real == nullptr) std::abort();  // libgomp is linked (the engine's): cannot happen
  real(fn, data, num_threads, flags);
}

namespace lazyscope {
namespace {

using testing::lazy0;
using testing::make;

Tensor filled(Shape shape, uint32_t seed, bool grad = true) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (float& f : v) {
    s = s * 1664525u + 1013904223u;
    f = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  Tensor t = make(v, std::move(shape), lazy0());
  t.set_requires_grad(grad);
  return t;
}

// The MNIST CNN of benchmarks/bench_models.py without dropout: two 5x5
// convolutions (the direct kernels), 2x2 max pools, two linear layers,
// log_softmax; the mean of the log-probabilities as the loss.
void mnist_cnn_step(const Tensor& x, const std::vector<Tensor>& p) {
  Tensor h = ops::relu(ops::max_pool2d(ops::conv2d(x, p[0], p[1]), {2, 2}));
  h = ops::relu(ops::max_pool2d(ops::conv2d(h, p[2], p[3]), {2, 2}));
  h = ops::relu(ops::add(ops::matmul(ops::reshape(h, {-1, 320}), ops::t(p[4])), p[5]));
  ops::mean(ops::log_softmax(ops::add(ops::matmul(h, ops::t(p[6])), p[7]), 1)).backward();
  executor::mark_step(lazy0());
  ASSERT_EQ(p[0].grad().shape(), (Shape{10, 1, 5, 5}));
}

// Shapes oneDNN runs (16 channels and more on both sides; strides, groups,
// dilation, padding; a 3x3 max pool at stride 2, odd sizes), forward and
// both backward passes; batch 3 does not divide among 2 threads.
void onednn_step(int64_t batch) {
  Tensor x = filled({batch, 16, 13, 11}, 1);
  Tensor w1 = filled({32, 16, 3, 3}, 2), w2 = filled({32, 16, 3, 3}, 3), w3 = filled({32, 32, 3, 2}, 4);
  Tensor h = ops::conv2d(x, w1, Tensor(), {1, 1}, {1, 1});      // 16 -> 32, padding
  h = ops::max_pool2d(h, {3, 3}, ops::Size2{2, 2}, {1, 1});     // oneDNN's pool
  h = ops::conv2d(h, w2, Tensor(), {2, 1}, {1, 0}, {1, 1}, 2);  // groups 2, stride (2, 1)
  h = ops::conv2d(h, w3, Tensor(), {1, 1}, {2, 1}, {2, 1});     // dilation (2, 1)
  ops::sum(ops::mul(h, h)).backward();
  executor::mark_step(lazy0());
  ASSERT_EQ(x.grad().shape(), (Shape{batch, 16, 13, 11}));
  ASSERT_EQ(w3.grad().shape(), (Shape{32, 32, 3, 2}));
}

TEST(OpenMpTeams, AMnistCnnTrainingStepStartsNone) {
  Tensor x = filled({64, 1, 28, 28}, 7, false);
  const std::vector<Tensor> p{filled({10, 1, 5, 5}, 8), filled({10}, 9),  filled({20, 10, 5, 5}, 10), filled({20}, 11),
                              filled({50, 320}, 12),    filled({50}, 13), filled({10, 50}, 14),       filled({10}, 15)};
  g_teams = 0;
  for (int step = 0; step < 3; ++step) mnist_cnn_step(x, p);
  EXPECT_EQ(g_teams.load(), 0);
}

TEST(OpenMpTeams, OneDnnConvolutionsAndPoolsStartNone) {
  g_teams = 0;
  for (int64_t batch : {3, 1, 3}) onednn_step(batch);
  EXPECT_EQ(g_teams.load(), 0);
}

// The 3-D convolutions run on oneDNN the same way (a single-threaded
// primitive per part of the batch): forward and both backward passes,
// groups and strides, start no team either.
TEST(OpenMpTeams, OneDnn3dConvolutionsStartNone) {
  g_teams = 0;
  for (int64_t batch : {3, 1, 3}) {
    Tensor x = filled({batch, 16, 5, 7, 6}, 21);
    Tensor w1 = filled({32, 16, 3, 3, 3}, 22), w2 = filled({32, 16, 3, 2, 3}, 23);
    Tensor h = ops::conv3d(x, w1, Tensor(), {1, 1, 1}, {1, 1, 1});
    h = ops::conv3d(h, w2, Tensor(), {2, 1, 1}, {1, 0, 1}, {1, 1, 1}, 2);
    ops::sum(ops::mul(h, h)).backward();
    executor::mark_step(lazy0());
    ASSERT_EQ(x.grad().shape(), (Shape{batch, 16, 5, 7, 6}));
    ASSERT_EQ(w2.grad().shape(), (Shape{32, 16, 3, 2, 3}));
  }
  EXPECT_EQ(g_teams.load(), 0);
}

TEST(OpenMpTeams, TheCountSeesOneDnnsOwnTeams) {
  // The control: one primitive over the whole batch on a team of two, as
  // before the split.
  const int before = omp_get_max_threads();
  omp_set_num_threads(2);
  const bool was = cpu::set_onednn_on_pool(false);
  g_teams = 0;
  onednn_step(4);
  const long teams = g_teams.load();
  cpu::set_onednn_on_pool(was);
  omp_set_num_threads(before);
  EXPECT_GT(teams, 0);
}

}  // namespace
}  // namespace lazyscope
