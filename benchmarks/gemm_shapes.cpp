// The matrix products of the benchmark models (benchmarks/bench_models.py),
// each shape as the compiled programs call it (transpose flags included),
// run through the engine's matmul_into under every GEMM split
// (cpu::GemmSplit: auto, rows, columns, OpenBLAS's threads, oneDNN's) and
// through cblas_sgemm and dnnl_sgemm called directly in this process on one
// and on all threads (OpenBLAS's, OpenMP's): which products lose against a
// library's own threaded call, and to which split.
// Set-ups alternate (A B C ... A B C ...) so each saw the same load; the
// median time of each is printed with its GFLOP/s and its ratio to the
// faster direct cblas call, and the process CPU time per call (all
// threads, spinning included: on a loaded machine, where the wall time
// says little about two threads, what each set-up costs in CPU).
//
//   build/release/bin/gemm_shapes [rounds=9] [calls per round=20] [shape filter] [set-ups]
//
// set-ups: comma-separated names (auto,rows,columns,blas,dnnl,dnnl-rows,
// openblas,auto+sgd,sgd,auto+gelu,gelu,auto+wake,cblas1,cblasN,dnnl1,dnnlN;
// default all; auto+sgd: auto with an SGD-momentum update as the product's
// epilogue, sgd: that update alone; auto+gelu: auto with bias + GELU (the
// engine's fused kernel, as the transformer's MLP up-projection has it) as
// the epilogue, gelu: that kernel alone; auto+wake: auto with the pool's workers woken 200
// us before the call, as a sync's start wakes them: with
// LAZYSCOPE_GEMM_SHAPES_IDLE_US, against auto, what a sleeping worker's
// wake-up costs the first product). OpenBLAS's threads spin in
// sched_yield for a while after each threaded call, beside the pool's next
// product: leave out blas and cblasN to see the pool's splits without them.
// libgomp reads OMP_WAIT_POLICY before main: the binary re-executes itself
// once with PASSIVE (what `import lazyscope` and `lazyscope run` set) unless
// a policy is set.
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>
#include <unistd.h>

#include <time.h>
#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/fusion.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "ir/attrs.h"

namespace lazyscope {
namespace {

struct GemmShape {
  const char* name;
  int64_t m, k, n;
  bool ta, tb;        // A stored [k, m], B stored [n, k]
  int64_t batch = 1;  // both operands [batch, ...]: a batched product (attention)
  // An attention's products as the transformer step runs them: batch =
  // kHeadBatch sequences x kHeads heads, and the operands flagged here
  // (kA, kB, kOut) are heads of a [B, S, H, D] value read or written in place
  // through strides (matmul_strided; leading dimension H*D), the others
  // contiguous [B, H, rows, cols].
  int heads_split = -1;  // -1: not strided (matmul_into)
};
constexpr int kA = 1, kB = 2, kOut = 4;
constexpr int64_t kHeadBatch = 16, kHeads = 4;

// x @ w.t() forward, dy @ w input gradients, dy.t() @ x weight gradients.
const GemmShape kShapes[] = {
    {"mlp fc1 forward", 128, 784, 512, false, true},
    {"mlp fc2 forward", 128, 512, 256, false, true},
    {"mlp fc3 forward", 128, 256, 10, false, true},
    {"mlp fc3 dx", 128, 10, 256, false, false},
    {"mlp fc2 dx", 128, 256, 512, false, false},
    {"mlp fc3 dW", 10, 128, 256, true, false},
    {"mlp fc2 dW", 256, 128, 512, true, false},
    {"mlp fc1 dW", 512, 128, 784, true, false},
    {"transformer qkv forward", 1024, 256, 768, false, true},
    {"transformer attn out forward", 1024, 256, 256, false, true},
    {"transformer mlp up forward", 1024, 256, 1024, false, true},
    {"transformer mlp down forward", 1024, 1024, 256, false, true},
    {"transformer head forward", 1024, 256, 65, false, true},
    {"transformer mlp down dx", 1024, 256, 1024, false, false},
    {"transformer mlp up dW", 1024, 1024, 256, true, false},
    {"transformer qkv dW", 768, 1024, 256, true, false},
    {"transformer attention q k^T", 64, 64, 64, false, true, 64},
    {"transformer attention p v", 64, 64, 64, false, false, 64},
    // The step's own layouts (program listing: "reads or writes in place
    // through strides"): forward q k^T, p v; backward p^T do, do v^T, ds^T q, ds k.
    {"transformer strided q k^T", 64, 64, 64, false, true, 64, kA | kB},
    {"transformer strided p v", 64, 64, 64, false, false, 64, kB | kOut},
    {"transformer strided p^T do", 64, 64, 64, true, false, 64, kB | kOut},
    {"transformer strided do v^T", 64, 64, 64, false, true, 64, kA | kB},
    {"transformer strided ds^T q", 64, 64, 64, true, false, 64, kB | kOut},
    {"transformer strided ds k", 64, 64, 64, false, false, 64, kB | kOut},
    // The 65-wide head: forward, input gradient, weight gradient.
    {"transformer head dx", 1024, 65, 256, false, false},
    {"transformer head dW", 65, 1024, 256, true, false},
};

// The layout of a [batch, rows, cols] operand as the step stores it: heads
// of [B, S, H, D] (rows = S, cols = D) when split, else contiguous.
cpu::MatrixLayout head_layout(int64_t rows, int64_t cols, bool split) {
  cpu::MatrixLayout l;
  l.shape = {kHeadBatch, kHeads, rows, cols};
  l.strides = split ? std::vector<int64_t>{rows * kHeads * cols, cols, kHeads * cols, 1}
                    : std::vector<int64_t>{kHeads * rows * cols, rows * cols, cols, 1};
  return l;
}

// Element offset of batch i (over the layout's batch dims) and its leading dimension.
int64_t batch_offset(const cpu::MatrixLayout& l, int64_t i) {
  int64_t off = 0;
  for (size_t d = l.shape.size() - 2; d-- > 0;) {
    off += i % l.shape[d] * l.strides[d];
    i /= l.shape[d];
  }
  return off;
}

double cpu_now_us() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The 10th percentile: on a machine shared with other work, about what a
// call takes when both cores are its own (with per-call alternation,
// rounds x 1 call, each set-up sees the same moments of quiet).
double p10(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 10];
}

void direct_one(const GemmShape& s, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, static_cast<int>(s.m),
              static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb),
              0.0f, c, static_cast<int>(ldc));
}

void direct_dnnl_one(const GemmShape& s, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                     int64_t ldc) {
  dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

// Each batch's product by one library call on the calling thread (the
// library's own threads where it has been given more than one), at the
// shape's layouts.
void direct(const GemmShape& s, const float* a, const float* b, float* c, bool dnnl = false) {
  const auto call = dnnl ? direct_dnnl_one : direct_one;
  if (s.heads_split < 0) {
    for (int64_t i = 0; i < s.batch; ++i) {
      call(s, a + i * s.m * s.k, s.ta ? s.m : s.k, b + i * s.k * s.n, s.tb ? s.k : s.n, c + i * s.m * s.n, s.n);
    }
    return;
  }
  const auto la = s.ta ? head_layout(s.k, s.m, s.heads_split & kA) : head_layout(s.m, s.k, s.heads_split & kA);
  const auto lb = s.tb ? head_layout(s.n, s.k, s.heads_split & kB) : head_layout(s.k, s.n, s.heads_split & kB);
  const auto lo = head_layout(s.m, s.n, s.heads_split & kOut);
  for (int64_t i = 0; i < s.batch; ++i) {
    call(s, a + batch_offset(la, i), la.strides[2], b + batch_offset(lb, i), lb.strides[2], c + batch_offset(lo, i),
         lo.strides[2]);
  }
}

// LAZYSCOPE_GEMM_SHAPES_COLD=1: each call starts with its operands, output
// and the update's weight and momentum out of the caches (64 MiB written
// before it, not timed), as a training step finds a layer's weight and
// momentum after the rest of the step and the other processes' work.
const bool cold = [] {
  const char* env = std::getenv("LAZYSCOPE_GEMM_SHAPES_COLD");
  return env && *env && *env != '0';
}();

// LAZYSCOPE_GEMM_SHAPES_IDLE_US=N: N microseconds asleep before each call
// (not timed), as a step's first product finds the pool after the Python
// tracing between steps: its workers asleep.
const int idle_us = [] {
  const char* env = std::getenv("LAZYSCOPE_GEMM_SHAPES_IDLE_US");
  return env && *env ? std::atoi(env) : 0;
}();

void evict() {
  static std::vector<char> junk(size_t{64} << 20);
  static char value = 0;
  ++value;
  std::fill(junk.begin(), junk.end(), value);
}

// Filter "attention op": the fused attention kernels (op attention and
// attention_backward, kernels_layout.cpp) on the transformer's heads
// ([16, 64, 4, 64] q, k, v, the causal boolean mask), beside the step's
// softmax over the same scores, alternated; with
// LAZYSCOPE_GEMM_SHAPES_COLD, every operand out of the caches first, as
// the step finds them. Compare with the strided shapes' products (the
// composed attention: q k^T, p v forward; p^T do, do v^T, ds^T q, ds k
// backward) measured the same way.
int run_attention(int rounds, int calls) {
  const int64_t n = kHeadBatch, l = 64, h = kHeads, d = 64;
  std::mt19937 rng(0);
  std::normal_distribution<float> dist;
  const auto filled = [&](Shape shape) {
    auto b = Buffer::allocate(DType::kFloat32, std::move(shape));
    for (int64_t i = 0; i < b->numel(); ++i) b->as<float>()[i] = dist(rng);
    return b;
  };
  // The forward's output is [O | P] flat; the backward reads O's gradient and P.
  const int64_t saved = n * l * h * d + n * h * l * l;
  auto q = filled({n, l, h, d}), k = filled({n, l, h, d}), v = filled({n, l, h, d}), dout = filled({n, l, h, d});
  auto out = Buffer::allocate(DType::kFloat32, {saved});
  auto grads = Buffer::allocate(DType::kFloat32, {3 * n * l * h * d});
  auto mask = Buffer::allocate(DType::kBool, {l, l});
  for (int64_t i = 0; i < l; ++i) {
    for (int64_t j = 0; j < l; ++j) mask->as<bool>()[i * l + j] = j <= i;
  }
  auto scores = filled({n, h, l, l});
  auto probs = Buffer::allocate(DType::kFloat32, {n, h, l, l});
  const Attrs attrs{{"scale", 0.125}, {"causal", int64_t{0}}};
  const Attrs softmax_attrs{{"dim", int64_t{-1}}};
  const Buffer* fwd_in[] = {q.get(), k.get(), v.get(), mask.get()};
  const Buffer* bwd_in[] = {q.get(), k.get(), v.get(), dout.get(), out.get()};
  const Buffer* softmax_in[] = {scores.get()};
  const cpu::KernelFn fwd = cpu::find_kernel(OpKind::kAttention, DType::kFloat32);
  const cpu::KernelFn bwd = cpu::find_kernel(OpKind::kAttentionBackward, DType::kFloat32);
  const cpu::KernelFn softmax = cpu::find_kernel(OpKind::kSoftmax, DType::kFloat32);
  struct Setup {
    const char* name;
    std::function<void()> call;
    std::vector<double> us;
    double flop;
  };
  const double product = 2.0 * static_cast<double>(n * h * l * l * d);
  std::vector<Setup> setups = {
      {"attention",
       [&] {
         fwd({fwd_in, *out, attrs});
       },
       {},
       2 * product},
      {"attention_backward",
       [&] {
         bwd({bwd_in, *grads, attrs});
       },
       {},
       5 * product},
      {"softmax (composed)",
       [&] {
         softmax({softmax_in, *probs, softmax_attrs});
       },
       {},
       0},
  };
  if (cold) std::printf("operands out of the caches before each call (LAZYSCOPE_GEMM_SHAPES_COLD)\n");
  std::printf("%d threads; the fused attention on [16, 64, 4, 64], causal bool mask; median and p10 us per call\n",
              cpu::num_threads());
  for (auto& setup : setups) setup.call();  // the forward first: P for the backward
  for (int r = 0; r < rounds; ++r) {
    for (auto& setup : setups) {
      for (int i = 0; i < calls; ++i) {
        if (cold) evict();
        const auto t0 = std::chrono::steady_clock::now();
        setup.call();
        setup.us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
    }
  }
  for (const auto& setup : setups) {
    const double us = median(setup.us);
    std::printf("  %-22s %9.1f us %8.1f GFLOP/s (products) %9.1f p10\n", setup.name, us, setup.flop / us / 1e3,
                p10(setup.us));
  }
  return 0;
}

int run(int rounds, int calls, const std::string& filter, const std::string& wanted) {
  if (filter == "attention op") return run_attention(rounds, calls);
  const int threads = cpu::num_threads();
  if (cold) std::printf("operands out of the caches before each call (LAZYSCOPE_GEMM_SHAPES_COLD)\n");
  std::printf("%d threads; median us per call over %d rounds x %d calls, set-ups alternated\n", threads, rounds, calls);
  std::printf("%-30s %-8s %9s %8s %8s %9s %9s\n", "product (m k n)", "set-up", "us", "GFLOP/s", "/best direct",
              "cpu us", "p10 us");
  std::mt19937 rng(0);
  std::normal_distribution<float> dist;
  for (const GemmShape& s : kShapes) {
    if (!filter.empty() && std::string(s.name).find(filter) == std::string::npos) continue;
    const auto shape = [&](int64_t r, int64_t c) { return s.batch > 1 ? Shape{s.batch, r, c} : Shape{r, c}; };
    auto a = Buffer::allocate(DType::kFloat32, s.ta ? shape(s.k, s.m) : shape(s.m, s.k));
    auto b = Buffer::allocate(DType::kFloat32, s.tb ? shape(s.n, s.k) : shape(s.k, s.n));
    auto c = Buffer::allocate(DType::kFloat32, shape(s.m, s.n));
    for (auto* buf : {a.get(), b.get()}) {
      for (int64_t i = 0; i < buf->numel(); ++i) buf->as<float>()[i] = dist(rng);
    }
    struct Setup {
      std::string name;
      std::function<void()> call;
      std::vector<double> us;
      double cpu_us = 0;  // process CPU time (all threads, spinning included), summed
      bool wake = false;  // the pool woken 200 us before the call (not timed), as a sync's start does
    };
    std::vector<Setup> setups;
    cpu::MatrixLayout la, lb, lo;  // the strided shapes' layouts
    if (s.heads_split >= 0) {
      la = s.ta ? head_layout(s.k, s.m, s.heads_split & kA) : head_layout(s.m, s.k, s.heads_split & kA);
      lb = s.tb ? head_layout(s.n, s.k, s.heads_split & kB) : head_layout(s.k, s.n, s.heads_split & kB);
      lo = head_layout(s.m, s.n, s.heads_split & kOut);
    }
    for (auto mode : {cpu::GemmSplit::kAuto, cpu::GemmSplit::kRows, cpu::GemmSplit::kColumns, cpu::GemmSplit::kBlas,
                      cpu::GemmSplit::kDnnl, cpu::GemmSplit::kDnnlRows, cpu::GemmSplit::kOpenBlas}) {
      setups.push_back({cpu::gemm_split_name(mode),
                        [&, mode] {
                          cpu::set_gemm_split(mode);
                          if (s.heads_split < 0) {
                            cpu::matmul_into(*a, s.ta, *b, s.tb, *c);
                          } else {
                            cpu::matmul_strided(*a, la, s.ta, *b, lb, s.tb, *c, lo);
                          }
                        },
                        {}});
    }
    // The weight-gradient products' usual epilogue: SGD with momentum on a
    // weight of the product's shape (buf = 0.9 buf + g; w -= 0.01 buf), as
    // the engine fuses it into the GEMM (matmul_into's Epilogue, per part);
    // `sgd` is that update alone over an already computed product.
    auto w = Buffer::allocate(DType::kFloat32, shape(s.m, s.n));
    auto mom = Buffer::allocate(DType::kFloat32, shape(s.m, s.n));
    std::fill(w->as<float>(), w->as<float>() + w->numel(), 0.5f);
    std::fill(mom->as<float>(), mom->as<float>() + mom->numel(), 0.0f);
    auto sgd = [&](int64_t begin, int64_t end) {
      const float* g = c->as<float>();
      float* wp = w->as<float>();
      float* bp = mom->as<float>();
      for (int64_t i = begin; i < end; ++i) {
        bp[i] = 0.9f * bp[i] + g[i];
        wp[i] -= 0.01f * bp[i];
      }
    };
    const cpu::Epilogue sgd_epilogue(sgd);
    setups.push_back({"auto+sgd",
                      [&] {
                        cpu::set_gemm_split(cpu::GemmSplit::kAuto);
                        cpu::matmul_into(*a, s.ta, *b, s.tb, *c, &sgd_epilogue);
                      },
                      {}});
    setups.push_back({"sgd", [&] { cpu::parallel_for(c->numel(), 2048, sgd); }, {}});
    // The MLP up-projection's epilogue in the transformer step: h = product
    // + bias (written over the product, kept for the backward) and GELU(h),
    // as the engine's own fused kernel (compiled at run time, as in the
    // step); `gelu` is that kernel alone over an already computed product.
    auto bias = Buffer::allocate(DType::kFloat32, Shape{s.n});
    auto act = Buffer::allocate(DType::kFloat32, shape(s.m, s.n));
    for (int64_t i = 0; i < s.n; ++i) bias->as<float>()[i] = 0.01f * static_cast<float>(i % 7);
    const DType f32 = DType::kFloat32;
    const DType add_types[] = {f32, f32}, gelu_types[] = {f32};
    const cpu::FusedKernel bias_gelu(
        c->shape(), {{f32, c->shape()}, {f32, Shape{s.n}}},
        {{cpu::fused_row(OpKind::kAdd, f32, add_types), OpKind::kAdd, {0, 1, -1}, 0, 0, 0},
         {cpu::fused_row(OpKind::kGelu, f32, gelu_types), OpKind::kGelu, {2, -1, -1}, 0, 0, 1}},
        {0, 1}, {f32, f32});
    while (bias_gelu.adopt()) ::usleep(1000);  // its compiled code, as a warm step runs it
    const Buffer* gelu_in[] = {c.get(), bias.get()};
    Buffer* gelu_out[] = {c.get(), act.get()};
    auto gelu = [&](int64_t begin, int64_t end) { bias_gelu.run_range(gelu_in, gelu_out, false, begin, end); };
    const cpu::Epilogue gelu_epilogue(gelu);
    setups.push_back({"auto+gelu",
                      [&] {
                        cpu::set_gemm_split(cpu::GemmSplit::kAuto);
                        cpu::matmul_into(*a, s.ta, *b, s.tb, *c, &gelu_epilogue);
                      },
                      {}});
    setups.push_back({"gelu", [&] { cpu::parallel_for(c->numel(), 2048, gelu); }, {}});
    // The other forward products' epilogue: the bias alone (a one-step
    // fused kernel: the tile interpreter), written over the product.
    const cpu::FusedKernel bias_add(c->shape(), {{f32, c->shape()}, {f32, Shape{s.n}}},
                                    {{cpu::fused_row(OpKind::kAdd, f32, add_types), OpKind::kAdd, {0, 1, -1}, 0, 0, 0}},
                                    {0}, {f32});
    Buffer* bias_out[] = {c.get()};
    auto add_bias = [&](int64_t begin, int64_t end) { bias_add.run_range(gelu_in, bias_out, false, begin, end); };
    const cpu::Epilogue bias_epilogue(add_bias);
    setups.push_back({"auto+bias",
                      [&] {
                        cpu::set_gemm_split(cpu::GemmSplit::kAuto);
                        cpu::matmul_into(*a, s.ta, *b, s.tb, *c, &bias_epilogue);
                      },
                      {}});
    setups.push_back({"bias", [&] { cpu::parallel_for(c->numel(), 2048, add_bias); }, {}});
    setups.push_back({"auto+wake", setups[0].call, {}, 0, true});  // keys[] below: same order
    setups.push_back({"cblas 1",
                      [&] {
                        openblas_set_num_threads(1);
                        direct(s, a->as<float>(), b->as<float>(), c->as<float>());
                      },
                      {}});
    setups.push_back({"cblas " + std::to_string(threads),
                      [&] {
                        openblas_set_num_threads(threads);
                        direct(s, a->as<float>(), b->as<float>(), c->as<float>());
                        openblas_set_num_threads(1);
                      },
                      {}});
    setups.push_back({"dnnl 1",
                      [&] {
                        omp_set_num_threads(1);
                        direct(s, a->as<float>(), b->as<float>(), c->as<float>(), true);
                      },
                      {}});
    setups.push_back({"dnnl " + std::to_string(threads),
                      [&] {
                        cpu::park_workers();
                        omp_set_num_threads(threads);
                        direct(s, a->as<float>(), b->as<float>(), c->as<float>(), true);
                      },
                      {}});
    const auto keep = [&](const std::string& key) {
      return wanted.empty() || ("," + wanted + ",").find("," + key + ",") != std::string::npos;
    };
    const std::string keys[] = {"auto",     "rows",      "columns", "blas",      "dnnl",  "dnnl-rows",
                                "openblas", "auto+sgd",  "sgd",     "auto+gelu", "gelu",  "auto+bias",
                                "bias",     "auto+wake", "cblas1",  "cblasN",    "dnnl1", "dnnlN"};
    constexpr size_t kFirstDirect = 14;
    for (size_t i = 0; i < setups.size(); ++i) {
      // No SGD epilogue on a strided product (the step's have none).
      const bool epilogue = keys[i].starts_with("auto+") && keys[i] != "auto+wake";
      if (!keep(keys[i]) || (s.heads_split >= 0 && epilogue)) setups[i].call = nullptr;
    }
    for (auto& setup : setups) {
      if (setup.call) setup.call();  // warm-up: OpenBLAS's buffers, the pool's threads
    }
    for (int r = 0; r < rounds; ++r) {
      for (auto& setup : setups) {
        for (int i = 0; setup.call && i < calls; ++i) {
          if (cold) evict();
          if (idle_us > 0) ::usleep(static_cast<useconds_t>(idle_us));
          if (setup.wake) {
            cpu::wake_workers(2000);
            ::usleep(200);
          }
          const double c0 = cpu_now_us();
          const auto t0 = std::chrono::steady_clock::now();
          setup.call();
          setup.us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
          setup.cpu_us += cpu_now_us() - c0;
        }
      }
    }
    cpu::set_gemm_split(cpu::GemmSplit::kAuto);
    const double flop = 2.0 * static_cast<double>(s.batch * s.m * s.k * s.n);
    double best_direct = 0;
    for (size_t i = kFirstDirect; i < setups.size(); ++i) {
      if (!setups[i].us.empty())
        best_direct = best_direct > 0 ? std::min(best_direct, median(setups[i].us)) : median(setups[i].us);
    }
    char label[96];
    std::snprintf(label, sizeof label, "%s (%lldx %lld %lld %lld%s%s)", s.name, static_cast<long long>(s.batch),
                  static_cast<long long>(s.m), static_cast<long long>(s.k), static_cast<long long>(s.n),
                  s.ta ? " tA" : "", s.tb ? " tB" : "");
    std::printf("%s\n", label);
    for (const auto& setup : setups) {
      if (setup.us.empty()) continue;
      const double us = median(setup.us);
      std::printf("  %-28s %-8s %9.1f %8.1f %8.2f %9.1f %9.1f\n", "", setup.name.c_str(), us, flop / us / 1e3,
                  best_direct > 0 ? us / best_direct : 0.0, setup.cpu_us / static_cast<double>(setup.us.size()),
                  p10(setup.us));
    }
  }
  return 0;
}

}  // namespace
}  // namespace lazyscope

int main(int argc, char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1) == 0) {
    ::execv("/proc/self/exe", argv);
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 20;
  return lazyscope::run(std::max(1, rounds), std::max(1, calls), argc > 3 ? argv[3] : "", argc > 4 ? argv[4] : "");
}
