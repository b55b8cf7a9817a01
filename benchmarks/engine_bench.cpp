// Engine benchmarks, each against its reference:
//  - matmul/<n>:  the engine's eager matmul vs OpenBLAS's sgemm called directly
//    (target: the engine reaches 90% of OpenBLAS, i.e. ratio <= 1.11);
//  - cached_step_1000_nodes: a lazy step of a chain of 1,000 elementwise ops
//    over 64 floats (trace, hash, cache lookup, execute) vs running the same
//    kernels eagerly — the ratio is the lazy machinery's overhead (target
//    <= 0.33); trace_us and sync_us split the lazy step;
//  - cached_step_sweep/1000/<floats>: the same chain over 64, 4 Ki and 64 Ki
//    floats per tensor: where fusion wins by kernel time, where overhead
//    dominates;
//  - fused_chain_vs_triad: a cached lazy step of 8 elementwise ops over two
//    4M-float inputs (one fused kernel: reads 2 arrays, writes 1) vs a STREAM
//    triad (a = b + s*c, the same bytes) on the same threads: the ratio is the
//    inverse of the fraction of triad bandwidth reached (target >= 70%: <= 1.43);
//  - fused_chain_threads: that chain on all the pool's threads vs one
//    (target: 2 threads >= 1.7x one, ratio <= 0.59); triad_threads: the
//    triad on all threads vs one, the memory system's own speed-up, which
//    bounds a chain that runs at memory speed;
//  - compile_1000_nodes: an uncached step of the 1,000-node chain (compile
//    included) vs the cached one; compile_ms is the compile alone (target <= 20);
//  - conv2d_3x3/...: the engine's eager conv2d (im2col + sgemm per image) vs
//    a plain im2col + the same cblas_sgemm call written here.
//  - conv2d_3x3/...: the engine's eager conv2d vs a plain im2col + the same
//    cblas_sgemm call written here;
//  - conv_kernel/<pass>/<shape>: the float32 conv kernels as the engine
//    runs them (direct kernels where they fit, else oneDNN) vs oneDNN
//    alone (cpu::set_direct_conv(false)), forward and both backward ops, on
//    the MNIST CNN's two convolutions and a wider 3x3 one;
//    conv_kernel_im2col/<pass>/<shape>: the same against the old im2col +
//    OpenBLAS path (settings::set_im2col_conv). Below 1: the engine's
//    default is faster.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "core/settings.h"
#include "events/event_bus.h"
#include "executor/compile_cache.h"
#include "executor/graph_executor.h"
#include "metrics/metrics.h"
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
  // OpenBLAS on its own threads, as many as the engine's pool: the
  // alternative the engine's split-by-rows GEMM was measured against.
  openblas_set_num_threads(cpu::num_threads());
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  for (auto _ : state) {
    // Allocation included, as the engine allocates its output too.
    std::vector<float> out(a.size());
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, out.data(),
                n);
    benchmark::DoNotOptimize(out.data());
  }
  openblas_set_num_threads(1);  // back to the engine's set-up
  state.SetItemsProcessed(state.iterations() * 2 * state.range(0) * state.range(0) * state.range(0));
}

Tensor chain(Tensor x, int64_t nodes) {
  for (int64_t i = 0; i < nodes / 2; ++i) x = ops::relu(ops::add(x, x));
  return x;
}

// A cached lazy step of chain() over `width` floats per tensor.
void cached_step(benchmark::State& state, int64_t width) {
  const Device lazy{DeviceKind::kLazy, 0};
  Tensor x = filled({width}, 1e-3f, lazy);
  chain(x, state.range(0));
  executor::mark_step(lazy);  // compile once, outside the timing
  // Split of a step: tracing the ops, then the sync (lower, hash, cache
  // lookup, execute, bind). Its kernel is one fused kernel over 64 floats,
  // so the sync is almost all executor overhead.
  int64_t trace_ns = 0, sync_ns = 0;
  for (auto _ : state) {
    const int64_t t0 = events::now_ns();
    Tensor y = chain(x, state.range(0));
    const int64_t t1 = events::now_ns();
    executor::mark_step(lazy);
    sync_ns += events::now_ns() - t1;
    trace_ns += t1 - t0;
    benchmark::DoNotOptimize(y.impl()->buffer);
  }
  const auto per_step_us = [&](int64_t ns) {
    return static_cast<double>(ns) / 1e3 / static_cast<double>(std::max<int64_t>(1, state.iterations()));
  };
  state.counters["trace_us"] = per_step_us(trace_ns);
  state.counters["sync_us"] = per_step_us(sync_ns);
}

void eager_step(benchmark::State& state, int64_t width) {
  Tensor x = filled({width}, 1e-3f, {});
  for (auto _ : state) benchmark::DoNotOptimize(chain(x, state.range(0)).impl()->buffer);
}

// The target's case: 64 floats, where the kernels are nothing and the ratio
// is the lazy machinery's cost against eager dispatch.
void BM_CachedStepLazyScope(benchmark::State& state) { cached_step(state, 64); }
void BM_CachedStepReference(benchmark::State& state) { eager_step(state, 64); }

// The size sweep (range(1) floats per tensor): where one fused kernel
// (reading x once, writing once) wins by kernel time over 1,000 eager
// kernels each reading and writing the whole tensor, and where per-op
// overhead dominates.
void BM_CachedStepSweepLazyScope(benchmark::State& state) { cached_step(state, state.range(1)); }
void BM_CachedStepSweepReference(benchmark::State& state) { eager_step(state, state.range(1)); }

constexpr int64_t kStreamN = int64_t{1} << 22;  // 16 MiB per array: well past the caches

// 8 elementwise ops, 2 inputs, 1 output: fused, 12 bytes per element.
Tensor elementwise_chain(const Tensor& x, const Tensor& y) {
  Tensor t = ops::add(ops::mul(x, y), x);
  t = ops::relu(ops::sub(t, y));
  t = ops::mul(ops::add(t, x), ops::maximum(t, y));
  return ops::neg(t);
}

void fused_chain(benchmark::State& state, int threads) {
  const int64_t n = kStreamN;
  const int previous = cpu::set_active_threads(threads);
  const Device lazy{DeviceKind::kLazy, 0};
  Tensor x = filled({n}, 0.5f, lazy), y = filled({n}, 0.25f, lazy);
  executor::mark_step(lazy);
  {
    Tensor warm = elementwise_chain(x, y);
    executor::mark_step(lazy);
  }
  for (auto _ : state) {
    Tensor z = elementwise_chain(x, y);
    executor::mark_step(lazy);
    benchmark::DoNotOptimize(z.impl()->buffer);
  }
  state.SetBytesProcessed(state.iterations() * 12 * n);
  cpu::set_active_threads(previous);
}

void BM_FusedChainLazyScope(benchmark::State& state) { fused_chain(state, 1 << 20); }
void BM_FusedChainOneThread(benchmark::State& state) { fused_chain(state, 1); }

void stream_triad(benchmark::State& state, int threads) {
  const int previous = cpu::set_active_threads(threads);
  std::vector<float> a(kStreamN), b(kStreamN, 0.5f), c(kStreamN, 0.25f);
  const float s = 3.0f;
  for (auto _ : state) {
    cpu::parallel_for(kStreamN, 1 << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        a[static_cast<size_t>(i)] = b[static_cast<size_t>(i)] + s * c[static_cast<size_t>(i)];
    });
    benchmark::DoNotOptimize(a.data());
  }
  state.SetBytesProcessed(state.iterations() * 12 * kStreamN);
  cpu::set_active_threads(previous);
}

void BM_StreamTriadReference(benchmark::State& state) { stream_triad(state, 1 << 20); }
void BM_StreamTriadOneThread(benchmark::State& state) { stream_triad(state, 1); }

void BM_UncachedStepLazyScope(benchmark::State& state) {
  const Device lazy{DeviceKind::kLazy, 0};
  Tensor x = filled({64}, 1e-3f, lazy);
  executor::mark_step(lazy);
  metrics::metric("CompileTime")->reset();
  for (auto _ : state) {
    executor::compile_cache().clear();
    Tensor y = chain(x, state.range(0));
    executor::mark_step(lazy);
    benchmark::DoNotOptimize(y.impl()->buffer);
  }
  state.counters["compile_ms"] = metrics::metric("CompileTime")->stats().p50;
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

// One conv kernel called directly, as a compiled program calls it: x [n, c,
// hw, hw], w [o, c, k, k], stride 1, no padding. range(0) picks the pass.
struct ConvCase {
  int64_t n, c, hw, o, k, pad;
};
constexpr ConvCase kConvCases[] = {
    {64, 1, 28, 10, 5, 0}, {64, 10, 12, 20, 5, 0}, {32, 16, 28, 32, 3, 1}, {64, 32, 14, 64, 3, 1}};

// kOneDnnTeam: oneDNN as one primitive on its OpenMP team (before the pool's
// split; cpu::set_onednn_on_pool(false)), against kOneDnn's split.
enum class ConvMode { kDefault, kOneDnn, kIm2col, kOneDnnTeam };

void BM_ConvKernel(benchmark::State& state, ConvMode mode) {
  const ConvCase cc = kConvCases[state.range(1)];
  const int64_t oh = cc.hw + 2 * cc.pad - cc.k + 1;
  const Shape xs{cc.n, cc.c, cc.hw, cc.hw}, ws{cc.o, cc.c, cc.k, cc.k}, ys{cc.n, cc.o, oh, oh};
  const Attrs attrs{{"stride", std::vector<int64_t>{1, 1}},
                    {"padding", std::vector<int64_t>{cc.pad, cc.pad}},
                    {"dilation", std::vector<int64_t>{1, 1}},
                    {"groups", int64_t{1}}};
  auto buffer = [](const Shape& s) {
    BufferPtr b = Buffer::allocate(DType::kFloat32, s);
    for (int64_t i = 0; i < b->numel(); ++i) b->as<float>()[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
    return b;
  };
  const BufferPtr x = buffer(xs), w = buffer(ws), y = buffer(ys);
  const int pass = static_cast<int>(state.range(0));
  const OpKind op = pass == 0   ? OpKind::kConv2d
                    : pass == 1 ? OpKind::kConv2dBackwardInput
                                : OpKind::kConv2dBackwardWeight;
  const Buffer* in0 = pass == 0 ? x.get() : pass == 1 ? y.get() : x.get();
  const Buffer* in1 = pass == 0 ? w.get() : pass == 1 ? w.get() : y.get();
  const BufferPtr out = pass == 0 ? buffer(ys) : pass == 1 ? buffer(xs) : buffer(ws);
  const Buffer* inputs[] = {in0, in1};
  const cpu::KernelFn kernel = cpu::find_kernel(op, DType::kFloat32);
  settings::set_im2col_conv(mode == ConvMode::kIm2col);
  cpu::set_direct_conv(mode == ConvMode::kDefault);
  cpu::set_onednn_on_pool(mode != ConvMode::kOneDnnTeam);
  kernel({inputs, *out, attrs});  // warm: oneDNN creates its primitives here
  for (auto _ : state) kernel({inputs, *out, attrs});
  settings::set_im2col_conv(false);
  cpu::set_direct_conv(true);
  cpu::set_onednn_on_pool(true);
  state.SetItemsProcessed(state.iterations() * 2 * cc.n * cc.o * cc.c * cc.k * cc.k * oh * oh);
}

// Registered per (pass, case) pair so that oneDNN and im2col alternate in the run.
// conv_kernel_pool/...: oneDNN split over the pool (lazyscope) against one
// primitive on oneDNN's OpenMP team (reference), on the oneDNN-sized cases;
// run under OMP_WAIT_POLICY=PASSIVE (what `lazyscope` sets) and ACTIVE.
[[maybe_unused]] const bool kConvKernelsRegistered = [] {
  const char* passes[] = {"forward", "backward_input", "backward_weight"};
  for (int64_t pass = 0; pass < 3; ++pass) {
    for (int64_t c = 0; c < 4; ++c) {
      const ConvCase cc = kConvCases[c];
      const std::string shape = std::to_string(cc.n) + "x" + std::to_string(cc.c) + "x" + std::to_string(cc.hw) + "_k" +
                                std::to_string(cc.k) + "_to_" + std::to_string(cc.o);
      const std::pair<ConvMode, ConvMode> pairs[] = {{ConvMode::kDefault, ConvMode::kOneDnn},
                                                     {ConvMode::kDefault, ConvMode::kIm2col},
                                                     {ConvMode::kOneDnn, ConvMode::kOneDnnTeam}};
      for (const auto& [ours, reference] : pairs) {
        const bool pool = reference == ConvMode::kOneDnnTeam;
        if (pool ? c < 2 : c > 2) continue;  // the split where oneDNN runs; the rest as before
        const std::string name = std::string(pool                             ? "conv_kernel_pool/"
                                             : reference == ConvMode::kOneDnn ? "conv_kernel/"
                                                                              : "conv_kernel_im2col/") +
                                 passes[pass] + "/" + shape;
        benchmark::RegisterBenchmark((name + "/lazyscope").c_str(), BM_ConvKernel, ours)
            ->Args({pass, c})
            ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark((name + "/reference").c_str(), BM_ConvKernel, reference)
            ->Args({pass, c})
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return true;
}();

BENCHMARK(BM_Conv2dLazyScope)->Name("conv2d_3x3_32x16x28x28_to_32/lazyscope")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv2dReference)->Name("conv2d_3x3_32x16x28x28_to_32/reference")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatmulLazyScope)->Name("matmul/256/lazyscope")->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulReference)->Name("matmul/256/reference")->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulLazyScope)->Name("matmul/512/lazyscope")->Arg(512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatmulReference)->Name("matmul/512/reference")->Arg(512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FusedChainLazyScope)->Name("fused_chain_vs_triad/lazyscope")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamTriadReference)->Name("fused_chain_vs_triad/reference")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FusedChainLazyScope)->Name("fused_chain_threads/lazyscope")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FusedChainOneThread)->Name("fused_chain_threads/reference")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamTriadReference)->Name("triad_threads/lazyscope")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamTriadOneThread)->Name("triad_threads/reference")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_UncachedStepLazyScope)->Name("compile_1000_nodes/lazyscope")->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedStepLazyScope)->Name("compile_1000_nodes/reference")->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedStepLazyScope)->Name("cached_step_1000_nodes/lazyscope")->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedStepReference)->Name("cached_step_1000_nodes/reference")->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedStepSweepLazyScope)
    ->Name("cached_step_sweep/lazyscope")
    ->ArgsProduct({{1000}, {64, 4096, 65536}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedStepSweepReference)
    ->Name("cached_step_sweep/reference")
    ->ArgsProduct({{1000}, {64, 4096, 65536}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lazyscope
