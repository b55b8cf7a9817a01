// Engine benchmarks, each against its reference:
//  - matmul/<n>:  the engine's eager matmul vs OpenBLAS's sgemm called directly
//    (target: the engine reaches 90% of OpenBLAS, i.e. ratio <= 1.11);
//  - cached_step/<nodes>: a lazy step of a chain of elementwise ops (trace,
//    hash, cache lookup, execute) vs running the same kernels eagerly — the
//    ratio is the lazy machinery's overhead;
//  - conv2d_3x3/...: the engine's eager conv2d (im2col + sgemm per image) vs
//    a plain im2col + the same cblas_sgemm call written here.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstring>
#include <vector>

#include "executor/graph_executor.h"
#include "tensor/ops.h"

namespace lazyscope {
namespace {

Tensor filled(Shape shape, float value, Device device) {
  BufferPtr b = Buffer::allocate(DType::kFloat32, shape);
  std::fill(b->as<float>(), b->as<float>() + b->numel(), value);
  return Tensor::wrap(std::move(b), Device{}).to(device);
}

void BM_MatmulLazyScope(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor a = filled({n, n}, 0.5f, {}), b = filled({n, n}, 0.25f, {});
  for (auto _ : state) benchmark::DoNotOptimize(ops::matmul(a, b));
  state.SetItemsProcessed(state.iterations() * 2 * n * n * n);
}

void BM_MatmulReference(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  for (auto _ : state) {
    // Allocation included, as the engine allocates its output too.
    std::vector<float> out(a.size());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                out.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 2 * state.range(0) * state.range(0) * state.range(0));
}

Tensor chain(Tensor x, int64_t nodes) {
  for (int64_t i = 0; i < nodes / 2; ++i) x = ops::relu(ops::add(x, x));
  return x;
}

void BM_CachedStepLazyScope(benchmark::State& state) {
  const Device lazy{DeviceKind::kLazy, 0};
  Tensor x = filled({64}, 1e-3f, lazy);
  chain(x, state.range(0));
  executor::mark_step(lazy);  // compile once, outside the timing
  for (auto _ : state) {
    Tensor y = chain(x, state.range(0));
    executor::mark_step(lazy);
    benchmark::DoNotOptimize(y.impl()->buffer);
  }
}

void BM_CachedStepReference(benchmark::State& state) {
  Tensor x = filled({64}, 1e-3f, {});
  for (auto _ : state) benchmark::DoNotOptimize(chain(x, state.range(0)).impl()->buffer);
}

// [32, 16, 28, 28] * [32, 16, 3, 3], stride 1, padding 1 -> [32, 32, 28, 28].
constexpr int64_t kConvN = 32, kConvC = 16, kConvHW = 28, kConvO = 32;

void BM_Conv2dLazyScope(benchmark::State& state) {
  Tensor x = filled({kConvN, kConvC, kConvHW, kConvHW}, 0.5f, {});
  Tensor w = filled({kConvO, kConvC, 3, 3}, 0.25f, {});
  for (auto _ : state) benchmark::DoNotOptimize(ops::conv2d(x, w, Tensor(), {1, 1}, {1, 1}));
  state.SetItemsProcessed(state.iterations() * 2 * kConvN * kConvO * kConvC * 9 * kConvHW * kConvHW);
}

void BM_Conv2dReference(benchmark::State& state) {
  const int64_t hw = kConvHW, k = kConvC * 9, l = hw * hw;
  std::vector<float> x(static_cast<size_t>(kConvN * kConvC * l), 0.5f), w(static_cast<size_t>(kConvO * k), 0.25f);
  std::vector<float> cols(static_cast<size_t>(k * l));
  for (auto _ : state) {
    std::vector<float> out(static_cast<size_t>(kConvN * kConvO * l));  // allocated, as the engine's is
    for (int64_t n = 0; n < kConvN; ++n) {
      for (int64_t c = 0; c < kConvC; ++c) {
        for (int64_t i = 0; i < 3; ++i) {
          for (int64_t j = 0; j < 3; ++j) {
            float* row = cols.data() + ((c * 3 + i) * 3 + j) * l;
            for (int64_t y = 0; y < hw; ++y) {
              for (int64_t xx = 0; xx < hw; ++xx) {
                const int64_t iy = y + i - 1, ix = xx + j - 1;
                const bool inside = iy >= 0 && iy < hw && ix >= 0 && ix < hw;
                row[y * hw + xx] = inside ? x[static_cast<size_t>(((n * kConvC + c) * hw + iy) * hw + ix)] : 0.0f;
              }
            }
          }
        }
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(kConvO), static_cast<int>(l),
                  static_cast<int>(k), 1.0f, w.data(), static_cast<int>(k), cols.data(), static_cast<int>(l), 0.0f,
                  out.data() + n * kConvO * l, static_cast<int>(l));
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 2 * kConvN * kConvO * kConvC * 9 * kConvHW * kConvHW);
}

BENCHMARK(BM_Conv2dLazyScope)->Name("conv2d_3x3_32x16x28x28_to_32/lazyscope")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv2dReference)->Name("conv2d_3x3_32x16x28x28_to_32/reference")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatmulLazyScope)->Name("matmul/256/lazyscope")->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulReference)->Name("matmul/256/reference")->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulLazyScope)->Name("matmul/512/lazyscope")->Arg(512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulReference)->Name("matmul/512/reference")->Arg(512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedStepLazyScope)->Name("cached_step_1000_nodes/lazyscope")->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedStepReference)->Name("cached_step_1000_nodes/reference")->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lazyscope
