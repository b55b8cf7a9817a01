// Engine benchmarks, each against its reference:
//  - matmul/<n>:  the engine's eager matmul vs OpenBLAS's sgemm called directly
//    (target: the engine reaches 90% of OpenBLAS, i.e. ratio <= 1.11);
//  - cached_step/<nodes>: a lazy step of a chain of elementwise ops (trace,
//    hash, cache lookup, execute) vs running the same kernels eagerly — the
//    ratio is the lazy machinery's overhead.
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

BENCHMARK(BM_MatmulLazyScope)->Name("matmul/256/lazyscope")->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulReference)->Name("matmul/256/reference")->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulLazyScope)->Name("matmul/512/lazyscope")->Arg(512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulReference)->Name("matmul/512/reference")->Arg(512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedStepLazyScope)->Name("cached_step_1000_nodes/lazyscope")->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedStepReference)->Name("cached_step_1000_nodes/reference")->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lazyscope
