// Every tunable of the engine is a named setting with a default, one sentence
// of why, and an environment variable that overrides it at start-up.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lazyscope::settings {

// The settings every traced op reads are inline: a relaxed load of a value
// that a sentinel marks as not yet read from the environment (the first
// call reads it, out of line). Calls into settings.cpp, each with its
// function-local static's guard, were ~30 instructions of a replayed op.
namespace detail {
extern std::atomic<int64_t> g_graph_node_limit;  // 0: not read yet
extern std::atomic<int> g_any_forced_fallback;   // -1: not read yet
extern std::atomic<int> g_reuse_ir_nodes;        // -1: not read yet
int64_t load_graph_node_limit();
bool load_any_forced_fallback();
bool load_reuse_ir_nodes();
}  // namespace detail

// LAZYSCOPE_COMPILE_CACHE_SIZE: compiled graphs kept (LRU). A training loop
// needs a handful; a bound keeps pathological shape churn from eating memory.
int64_t compile_cache_size();
void set_compile_cache_size(int64_t n);

// LAZYSCOPE_GRAPH_NODE_LIMIT: a pending graph that grows past this many
// nodes without a barrier is executed and reported (a missing mark_step).
inline int64_t graph_node_limit() {
  const int64_t v = detail::g_graph_node_limit.load(std::memory_order_relaxed);
  return v > 0 ? v : detail::load_graph_node_limit();
}
void set_graph_node_limit(int64_t n);

// LAZYSCOPE_METRIC_SNAPSHOT_MS: while someone records events, a barrier
// publishes the metrics that changed at most this often (0: at every
// barrier). Percentiles of every timed metric at each of 20,000 tiny steps
// cost more than the steps; once per 100 ms keeps the series and is cheap.
// The snapshot at the end of a run is always complete.
int64_t metric_snapshot_ms();
void set_metric_snapshot_ms(int64_t ms);

// LAZYSCOPE_FORCE_FALLBACK: comma-separated op names ("exp,matmul") that run
// on the host even where the device lowers them — to measure what a
// fallback costs, or to rule a backend kernel in or out, without editing code.
bool forced_fallback(std::string_view op);
// Whether any op is forced: lets a traced op skip naming itself (op_name,
// strlen) and the search when none is, the usual case.
[[gnu::always_inline]] inline bool any_forced_fallback() {
  const int v = detail::g_any_forced_fallback.load(std::memory_order_relaxed);
  return v >= 0 ? v != 0 : detail::load_any_forced_fallback();
}
std::vector<std::string> forced_fallbacks();
// Replaces the set; unknown names are rejected by the caller (it knows the ops).
void set_forced_fallbacks(const std::vector<std::string>& ops);

// LAZYSCOPE_USE_BF16=1 (or the seeds' XLA_USE_BF16=1): float32 and float64
// tensors on lazy devices are stored as bfloat16 on the device while they
// still report their dtype — half the device memory, bf16 precision.
bool bf16_mode();
void set_bf16_mode(bool on);

// LAZYSCOPE_BUFFER_DONATION (default 1): at a barrier, a parameter whose old
// value dies with the step gives its buffer to the output that replaces it
// (an optimizer update written in place). 0 turns it off, for
// benchmarks/vs_pytorch.py's side-by-side comparison.
bool buffer_donation();
void set_buffer_donation(bool on);

// LAZYSCOPE_REUSE_IR (default 1): an op traced on the direct path (no
// autograd, no view, no promotion) that is the same op, with the same
// attributes, source line and scope, on the very same operand nodes as the
// op the previous step traced at its place gets that step's node back
// instead of a new one (no allocation, shape inference or hashing; the
// graph and its hash are the same). 0 builds every node afresh, as a way
// out and for side-by-side benchmarks.
inline bool reuse_ir_nodes() {
  const int v = detail::g_reuse_ir_nodes.load(std::memory_order_relaxed);
  return v >= 0 ? v != 0 : detail::load_reuse_ir_nodes();
}
void set_reuse_ir_nodes(bool on);

// LAZYSCOPE_ALIAS_VALUES (default 1): the CPU backend's memory plan makes
// reshapes and contiguous slices views of their operand's bytes and writes
// fused kernels' outputs in place over operands that die there. 0: they
// copy and get bytes of their own, for benchmarks/memory_plan.py's
// side-by-side comparison and as a way out should aliasing misbehave. Read
// once, at start-up (compiled programs are cached).
bool alias_values();

// LAZYSCOPE_NLL_BACKWARD_KERNEL (default 1): nll_loss's gradient (so
// cross_entropy's) is one nll_loss_backward op. 0: the composite of before
// (ne, where, one_hot, casts, sum, div, mul, neg: the same values, bit for
// bit), for A/B runs of a training step. Read once.
bool nll_backward_kernel();

// LAZYSCOPE_LAYER_NORM_KERNEL (default 1): layer_norm (float32/64) is one
// layer_norm op, its input gradient one layer_norm_backward. 0: the
// composite of before (mean, var, sub, rsqrt, mul, add, and their
// gradients), for A/B runs. Read once.
bool layer_norm_kernel();

// LAZYSCOPE_NUM_THREADS: threads of the CPU backend's one pool (kernels and
// the GEMM share it, so they never fight over cores). Default: the cores the
// process may run on. Read once, when the pool starts.
int64_t num_threads();

// LAZYSCOPE_CPU_ISA: the widest vector instruction set the CPU backend's
// fused kernels may use: "avx512f", "avx2" or "x86-64" (baseline). Default
// (unset or empty): the widest the CPU supports, found at run time. Lower it
// to test or rule out a code path; one the CPU lacks is never used.
std::string cpu_isa_limit();

// LAZYSCOPE_FUSION_JIT (default 1): fused elementwise chains of two ops or
// more over at least LAZYSCOPE_FUSION_JIT_MIN_ELEMENTS elements (default
// 2^16: 256 KiB of float32; the compile runs in the background, so the
// first step does not wait for it, see fusion_jit_sync) are compiled at run time by
// LAZYSCOPE_CXX (default "c++") into LAZYSCOPE_KERNEL_CACHE_DIR (default
// $XDG_CACHE_HOME/lazyscope/kernels, else ~/.cache/lazyscope/kernels).
// 0 keeps every chain on the tiled interpreter (as where no compiler runs).
bool fusion_jit();
int64_t fusion_jit_min_elements();
// LAZYSCOPE_FUSION_JIT_SYNC=1: a chain that must be compiled is compiled
// before its step runs (the compile of old: tests, reproducible timings).
// Default: on a background thread, the chain running on the interpreter
// until its compiled code is ready; the cache's hits are used at once.
bool fusion_jit_sync();
// LAZYSCOPE_FUSION_JIT_NICE (0-19, default 19): the nice value of the
// background compile thread and of the compilers it runs.
int64_t fusion_jit_nice();
std::string kernel_compiler();
std::string kernel_cache_dir();

// LAZYSCOPE_COLLECTIVE_TIMEOUT_S: how long (seconds, fractions allowed) a
// replica waits in a collective (all_reduce) for the other replicas of its
// group. A replica that failed or took another path would otherwise hang the
// whole process; past this the waiting replicas raise, naming the missing ones.
double collective_timeout_s();
void set_collective_timeout_s(double seconds);

// LAZYSCOPE_IM2COL_CONV=1: float32 convolutions take the old im2col + GEMM
// kernels instead of oneDNN's primitives — for side-by-side benchmarks, and
// as a way out should oneDNN misbehave on some machine.
bool im2col_conv();
void set_im2col_conv(bool on);

}  // namespace lazyscope::settings
