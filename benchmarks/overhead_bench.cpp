// What a cached lazy step costs outside its kernels (issue 11: a cached
// 1,000-node elementwise-heavy step at least 3x faster than the same ops run
// eagerly on `cpu`, and at most 50 us of executor overhead beyond its
// kernels). Each case measures LazyScope against its reference in one run:
//  - step_1000_nodes: trace + cached sync of a 1,000-node elementwise chain
//    on [64] floats vs the same ops eagerly on `cpu` (target ratio <= 0.33).
//    Its counters split the lazy step: trace_us (Python-free tracing of the
//    1,000 ops) and the sync's phases from executor::last_sync_profile():
//    collect, lower (walk + graph hash), lookup (compile cache), bind_in,
//    execute, kernel (sampled kernel time), bind_out (results bound, traced
//    graph released), publish; overhead_us is the sync minus its kernels
//    (target <= 50).
//  - step_1000_nodes_wide: the same on [4096] floats, where kernels weigh more.
//
//     build/release/bin/overhead_bench --benchmark_repetitions=7
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//     (one command line)
#include <benchmark/benchmark.h>

#include <algorithm>

#include "events/event_bus.h"
#include "executor/graph_executor.h"
#include "tensor/ops.h"

namespace lazyscope {
namespace {

const Device kLazy{DeviceKind::kLazy, 0};

Tensor filled(Shape shape, float value, Device device) {
  BufferPtr b = Buffer::allocate(DType::kFloat32, shape);
  std::fill(b->as<float>(), b->as<float>() + b->numel(), value);
  return Tensor::wrap(std::move(b), Device{}).to(device);
}

// The chain of engine_bench's cached_step case: relu(x + x), nodes/2 times.
Tensor chain(Tensor x, int64_t nodes) {
  for (int64_t i = 0; i < nodes / 2; ++i) x = ops::relu(ops::add(x, x));
  return x;
}

// The measured steps' phases, each its own function so that callgrind
// attributes them (the warm-up steps, compile included, call chain() and
// mark_step() directly): instructions per step = a function's inclusive
// count / its calls (noipa: not inlined, nor folded into one another as
// identical code). See benchmarks/README.md for the command.
[[gnu::noipa]] Tensor measured_trace(const Tensor& x, int64_t nodes) { return chain(x, nodes); }
[[gnu::noipa]] void measured_sync() { executor::mark_step(kLazy); }
[[gnu::noipa]] Tensor measured_eager(const Tensor& x, int64_t nodes) { return chain(x, nodes); }

void BM_StepLazy(benchmark::State& state) {
  const int64_t nodes = state.range(0), width = state.range(1);
  Tensor x = filled({width}, 1e-3f, kLazy);
  for (int i = 0; i < 3; ++i) {  // compile, then fill the arena and the profile's first samples
    Tensor warm = chain(x, nodes);
    executor::mark_step(kLazy);
  }
  int64_t trace_ns = 0, steps = 0;
  executor::SyncProfile sum;
  const executor::SyncProfile before = executor::last_sync_profile(kLazy);
  for (auto _ : state) {
    const int64_t t0 = events::now_ns();
    Tensor y = measured_trace(x, nodes);
    trace_ns += events::now_ns() - t0;
    measured_sync();
    const executor::SyncProfile p = executor::last_sync_profile(kLazy, /*with_kernels=*/false);
    sum.collect_ns += p.collect_ns;
    sum.lower_ns += p.lower_ns;
    sum.lookup_ns += p.lookup_ns;
    sum.compile_ns += p.compile_ns;
    sum.bind_inputs_ns += p.bind_inputs_ns;
    sum.execute_ns += p.execute_ns;
    sum.bind_outputs_ns += p.bind_outputs_ns;
    sum.publish_ns += p.publish_ns;
    sum.total_ns += p.total_ns;
    ++steps;
    benchmark::DoNotOptimize(y.impl()->buffer);
  }
  // Kernel time: the sampled executions of the timed loop (every 64th), as a mean per execution.
  const executor::SyncProfile after = executor::last_sync_profile(kLazy);
  const int64_t samples = after.kernel_samples - before.kernel_samples;
  const double kernel_us = samples > 0 ? static_cast<double>(after.kernel_total_ns - before.kernel_total_ns) / 1e3 /
                                             static_cast<double>(samples)
                                       : 0.0;
  const auto us = [&](int64_t ns) {
    return static_cast<double>(ns) / 1e3 / static_cast<double>(std::max<int64_t>(1, steps));
  };
  state.counters["trace_us"] = us(trace_ns);
  state.counters["sync_us"] = us(sum.total_ns);
  state.counters["collect"] = us(sum.collect_ns);
  state.counters["lower"] = us(sum.lower_ns);
  state.counters["lookup"] = us(sum.lookup_ns);
  state.counters["compile"] = us(sum.compile_ns);
  state.counters["bind_in"] = us(sum.bind_inputs_ns);
  state.counters["execute"] = us(sum.execute_ns);
  state.counters["kernel"] = kernel_us;
  state.counters["bind_out"] = us(sum.bind_outputs_ns);
  state.counters["publish"] = us(sum.publish_ns);
  state.counters["overhead_us"] = us(sum.total_ns) - kernel_us;
}

void BM_StepEager(benchmark::State& state) {
  Tensor x = filled({state.range(1)}, 1e-3f, {});
  for (auto _ : state) benchmark::DoNotOptimize(measured_eager(x, state.range(0)).impl()->buffer);
}

BENCHMARK(BM_StepLazy)->Name("step_1000_nodes/lazyscope")->Args({1000, 64})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StepEager)->Name("step_1000_nodes/reference")->Args({1000, 64})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StepLazy)->Name("step_1000_nodes_wide/lazyscope")->Args({1000, 4096})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StepEager)->Name("step_1000_nodes_wide/reference")->Args({1000, 4096})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lazyscope
