// Reduction kernels. Each output element reduces a set of input elements
// that share one base offset (from the kept dims) and differ by one list of
// inner offsets (from the reduced dims), computed once per call: O(n) work
// for any choice of dims. Floating accumulations run in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/fusion.h"
#include "backend/cpu/kernel_util.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/thread_scratch.h"
#include "core/error.h"

namespace lazyscope::cpu {
namespace {

struct Reduction {
  std::vector<int64_t> bases;  // per output element, row-major over kept dims
  std::vector<int64_t> inner;  // per reduced element, row-major over reduced dims
};

// Offsets of every index of `shape` (row-major) under `strides`.
std::vector<int64_t> offsets(const Shape& shape, const std::vector<int64_t>& strides) {
  std::vector<int64_t> out(static_cast<size_t>(numel(shape)));
  std::vector<int64_t> index(shape.size(), 0);
  int64_t o = 0;
  for (auto& slot : out) {
    slot = o;
    for (size_t d = shape.size(); d-- > 0;) {
      ++index[d];
      o += strides[d];
      if (index[d] < shape[d]) break;
      o -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
  return out;
}

Reduction plan_dims(const Shape& s, const std::vector<int64_t>& dims) {
  const auto reduced = reduced_dims(s, dims, "reduce");
  const auto strides = contiguous_strides(s);
  Shape kept_shape, inner_shape;
  std::vector<int64_t> kept_strides, inner_strides;
  for (size_t d = 0; d < s.size(); ++d) {
    (reduced[d] ? inner_shape : kept_shape).push_back(s[d]);
    (reduced[d] ? inner_strides : kept_strides).push_back(strides[d]);
  }
  return {offsets(kept_shape, kept_strides), offsets(inner_shape, inner_strides)};
}

Reduction plan(const Buffer& in, const Attrs& attrs) { return plan_dims(in.shape(), attrs.get_ints("dims")); }

// A sum over leading and/or trailing dims, the kept dims contiguous in
// between: [R1, C, R2] once merged. A linear layer's bias gradient is
// [R, C] (summed over the batch), a layer norm's row sums [C, R], a
// convolution's bias gradient [N, C, H*W]. Leading-only sums add rows into
// a block of column accumulators, reading the input once, row by row,
// instead of one strided walk down each column; the others add contiguous
// runs of R2 in 8 double lanes. Columns keep the general path's order (each
// adds its values in order, in double: the same result to the bit); lanes
// reorder a sum of doubles (differences far below float32's precision).
// Each output is folded by one thread: threading changes no result.
struct SumPlan {
  int64_t outer = 0, cols = 0, inner = 0;  // R1, C, R2; outer 0: not of this form
};

SumPlan plan_sum(const Shape& s, const Attrs& attrs) {
  const auto reduced = reduced_dims(s, attrs.get_ints("dims"), "reduce");
  SumPlan p{1, 1, 1};
  int stage = 0;  // 0: leading reduced dims, 1: kept dims, 2: trailing reduced dims
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1) continue;  // a unit dim is neither
    if (!reduced[d]) {
      if (stage == 2) return {};
      stage = 1;
      p.cols *= s[d];
    } else if (stage == 0) {
      p.outer *= s[d];
    } else {
      stage = 2;
      p.inner *= s[d];
    }
  }
  if (p.outer * p.inner == 1) return {};  // nothing reduced, or only unit dims
  return p;
}

template <typename T> using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Elements folded into one output at most this many at a time by one
// thread when every element goes into one output (cols 1): fixed, so
// that a fold whose chunks combine in order gives the same result at any
// thread count.
constexpr int64_t kChunk = 16384;

// Folds [0, n) into one value: part(begin, end) for each fixed kChunk-element
// chunk on the pool, then the chunks' results joined in order by
// combine(earlier, later): the same result at any thread count. One chunk
// runs on the caller alone.
template <typename A, typename Part, typename Combine> A fold_chunks(int64_t n, Part&& part, Combine&& combine) {
  static_assert(std::is_trivially_copyable_v<A>);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) return part(int64_t{0}, n);
  A* parts = thread_scratch<A>(kScratchReduceParts, static_cast<size_t>(chunks));
  parallel_for(chunks, 2, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) parts[c] = part(c * kChunk, std::min(n, (c + 1) * kChunk));
  });
  A acc = parts[0];
  for (int64_t c = 1; c < chunks; ++c) acc = combine(acc, parts[c]);
  return acc;
}

// out[o] = finish(fold of step over the reduced elements, starting at init).
// Reduced dims around the kept ones ([R1, C, R2], plan_sum) are walked
// in place, in the general path's order (row-major over the reduced dims:
// the same result to the bit) without its offset tables, which cost an
// allocation and an indirect load per element (a 1M-element amax: 30x
// NumPy's time). `combine(a, b)`, where given, joins the folds of two
// consecutive stretches (a before b): a whole-tensor fold then runs in
// chunks on the pool.
template <typename T, typename Out, typename A, typename Step, typename Finish, typename Combine = std::nullptr_t>
void reduce(const KernelArgs& k, A init, Step step, Finish finish, Combine combine = nullptr) {
  const T* src = k.inputs[0]->as<T>();
  Out* out = k.out.as<Out>();
  if (const SumPlan p = plan_sum(k.inputs[0]->shape(), k.attrs); p.outer != 0) {
    const int64_t per_output = p.outer * p.inner;
    if constexpr (!std::is_same_v<Combine, std::nullptr_t>) {
      // One output: its j-th reduced element is src[j].
      if (p.cols == 1 && per_output > kChunk) {
        const auto part = [&](int64_t j0, int64_t j1) {
          A acc = init;
          for (int64_t j = j0; j < j1; ++j) acc = step(acc, src[j], j);
          return acc;
        };
        out[0] = finish(fold_chunks<A>(per_output, part, combine), per_output);
        return;
      }
    }
    parallel_for(p.cols, std::max<int64_t>(1, 16384 / per_output), [&](int64_t c0, int64_t c1) {
      if (p.inner == 1) {
        // Down the rows a block of columns at a time: each row read once,
        // in order, rather than a strided walk down each column.
        constexpr int64_t kBlock = 128;
        A acc[kBlock];
        for (int64_t b0 = c0; b0 < c1; b0 += kBlock) {
          const int64_t w = std::min(kBlock, c1 - b0);
          std::fill(acc, acc + w, init);
          for (int64_t a = 0; a < p.outer; ++a) {
            const T* row = src + a * p.cols + b0;
            for (int64_t j = 0; j < w; ++j) acc[j] = step(acc[j], row[j], a);
          }
          for (int64_t j = 0; j < w; ++j) out[b0 + j] = finish(acc[j], per_output);
        }
        return;
      }
      for (int64_t c = c0; c < c1; ++c) {
        A acc = init;
        for (int64_t a = 0; a < p.outer; ++a) {
          const T* run = src + (a * p.cols + c) * p.inner;
          for (int64_t b = 0; b < p.inner; ++b) acc = step(acc, run[b], a * p.inner + b);
        }
        out[c] = finish(acc, per_output);
      }
    });
    return;
  }
  const Reduction r = plan(*k.inputs[0], k.attrs);
  // Output elements are independent and each is folded by one thread in
  // the same order: threading does not change a result.
  const auto per_output = static_cast<int64_t>(std::max<size_t>(1, r.inner.size()));
  parallel_for(static_cast<int64_t>(r.bases.size()), std::max<int64_t>(1, 16384 / per_output),
               [&](int64_t begin, int64_t end) {
                 for (auto o = static_cast<size_t>(begin); o < static_cast<size_t>(end); ++o) {
                   const T* base = src + r.bases[o];
                   A acc = init;
                   for (size_t j = 0; j < r.inner.size(); ++j)
                     acc = step(acc, base[r.inner[j]], static_cast<int64_t>(j));
                   out[o] = finish(acc, static_cast<int64_t>(r.inner.size()));
                 }
               });
}

// Column sums of src [rows, cols] for columns [c0, c1), divided by `divide`.
// Blocks of kColumns columns first, their double accumulators held in vector
// registers across the rows (a width the compiler unrolls: 4 zmm, 8 ymm or
// 16 xmm); the rest in blocks of up to 256 accumulated in memory. Each
// column is summed over the rows in order either way: the same bits.
// The transformer step's bias gradients ([1024, 256] in parts of 32
// columns): a copy of this loop alone 33 -> 23 us per 1 MiB on one thread,
// operands in cache; in the step the 38 of them 1.16 -> 0.63 ms
// (benchmarks/README.md, branch xfmr2).
template <typename T, int64_t kColumns>
[[gnu::always_inline]] inline void column_block_sums(const T* src, int64_t rows, int64_t cols, int64_t b, double divide,
                                                     T* out) {
  double acc[kColumns];
  for (int64_t j = 0; j < kColumns; ++j) acc[j] = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = src + r * cols + b;
    for (int64_t j = 0; j < kColumns; ++j) acc[j] += static_cast<double>(row[j]);
  }
  for (int64_t j = 0; j < kColumns; ++j) out[b + j] = static_cast<T>(divide == 1.0 ? acc[j] : acc[j] / divide);
}

// Rows [r0, r1) of the block's columns b.. added into acc (kept in
// registers across the rows).
template <typename T, int64_t kColumns>
[[gnu::always_inline]] inline void column_block_add(const T* src, int64_t r0, int64_t r1, int64_t cols, int64_t b,
                                                    double* __restrict acc) {
  double a[kColumns];
  for (int64_t j = 0; j < kColumns; ++j) a[j] = acc[j];
  for (int64_t r = r0; r < r1; ++r) {
    const T* row = src + r * cols + b;
    for (int64_t j = 0; j < kColumns; ++j) a[j] += static_cast<double>(row[j]);
  }
  for (int64_t j = 0; j < kColumns; ++j) acc[j] = a[j];
}

// Whole blocks of kColumns in [c0, c1): a band of kBandRows rows at a time
// across up to kGroup columns, the blocks' accumulators stored between
// bands. A block walked down all its rows at once reads a 128-byte piece of
// each row: with rows of 4 KiB (the MLP up-projection's bias gradient,
// [1024, 1024]) every piece is on another page, which the prefetchers do
// not follow, and the sum ran at ~15 GB/s in the step. In bands the blocks
// read each row's run of the group's columns in turn. Each column still
// adds its rows in order: the same bits.
template <typename T, int64_t kColumns>
[[gnu::always_inline]] inline int64_t column_blocks_banded(const T* src, int64_t rows, int64_t cols, int64_t c0,
                                                           int64_t c1, double divide, T* out) {
  constexpr int64_t kGroup = 512, kBandRows = 16;
  double acc[kGroup];
  for (; c0 + kColumns <= c1;) {
    const int64_t g1 = c0 + std::min(kGroup, (c1 - c0) / kColumns * kColumns);
    for (int64_t j = 0; j < g1 - c0; ++j) acc[j] = 0.0;
    for (int64_t r0 = 0; r0 < rows; r0 += kBandRows) {
      const int64_t r1 = std::min(rows, r0 + kBandRows);
      for (int64_t b = c0; b < g1; b += kColumns) column_block_add<T, kColumns>(src, r0, r1, cols, b, acc + (b - c0));
    }
    for (int64_t j = 0; j < g1 - c0; ++j) out[c0 + j] = static_cast<T>(divide == 1.0 ? acc[j] : acc[j] / divide);
    c0 = g1;
  }
  return c0;
}

template <typename T>
[[gnu::always_inline]] inline void column_sums_body(const T* src, int64_t rows, int64_t cols, int64_t c0, int64_t c1,
                                                    double divide, T* out) {
  constexpr int64_t kColumns = 32;
  // Banded only for rows of 4 KiB and up: on the [1024, 256] bias
  // gradients (1 KiB rows, 128 columns per thread) bands were 10% slower
  // (their accumulators' loads and stores), on [1024, 1024] 1.4-1.8x faster
  // (benchmarks/README.md, branch xfmr3).
  if (cols * static_cast<int64_t>(sizeof(T)) >= 4096) {
    c0 = column_blocks_banded<T, kColumns>(src, rows, cols, c0, c1, divide, out);
  }
  for (; c0 + kColumns <= c1; c0 += kColumns) column_block_sums<T, kColumns>(src, rows, cols, c0, divide, out);
  constexpr int64_t kBlock = 256;
  double acc[kBlock];
  for (int64_t b = c0; b < c1; b += kBlock) {
    const int64_t w = std::min(kBlock, c1 - b);
    for (int64_t j = 0; j < w; ++j) acc[j] = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = src + r * cols + b;
      for (int64_t j = 0; j < w; ++j) acc[j] += static_cast<double>(row[j]);
    }
    for (int64_t j = 0; j < w; ++j) out[b + j] = static_cast<T>(divide == 1.0 ? acc[j] : acc[j] / divide);
  }
}

// out[c] for c in [c0, c1) of src [outer, cols, inner], summed over outer and inner.
// The sum of column c's runs in double, each run added in 8 lanes (8
// independent chains the compiler vectorises; also the variance's mean).
template <typename T>
[[gnu::always_inline]] inline double column_sum(const T* src, int64_t outer, int64_t cols, int64_t inner, int64_t c) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  double tail = 0;
  for (int64_t a = 0; a < outer; ++a) {
    const T* run = src + (a * cols + c) * inner;
    int64_t b = 0;
    for (; b + 8 <= inner; b += 8) {
      for (int k = 0; k < 8; ++k) lanes[k] += static_cast<double>(run[b + k]);
    }
    for (; b < inner; ++b) tail += static_cast<double>(run[b]);
  }
  double acc = tail;
  for (double lane : lanes) acc += lane;
  return acc;
}

template <typename T>
[[gnu::always_inline]] inline void run_sums_body(const T* src, int64_t outer, int64_t cols, int64_t inner, int64_t c0,
                                                 int64_t c1, double divide, T* out) {
  for (int64_t c = c0; c < c1; ++c) {
    const double acc = column_sum(src, outer, cols, inner, c);
    out[c] = static_cast<T>(divide == 1.0 ? acc : acc / divide);
  }
}

// Compiled for AVX-512, AVX2 and baseline x86-64, chosen when the library
// loads (GCC's target_clones, never -march=native): the float -> double
// widening adds vectorise.
#define LAZYSCOPE_SUM_CLONES(T)                                                                                  \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void column_sums(                                 \
      const T* src, int64_t rows, int64_t cols, int64_t c0, int64_t c1, double divide, T* out) {                 \
    column_sums_body(src, rows, cols, c0, c1, divide, out);                                                      \
  }                                                                                                              \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void run_sums(                                    \
      const T* src, int64_t outer, int64_t cols, int64_t inner, int64_t c0, int64_t c1, double divide, T* out) { \
    run_sums_body(src, outer, cols, inner, c0, c1, divide, out);                                                 \
  }                                                                                                              \
  __attribute__((target_clones("avx512f", "avx2", "default"))) double run_total(const T* src, int64_t n) {       \
    return column_sum(src, 1, 1, n, 0);                                                                          \
  }
LAZYSCOPE_SUM_CLONES(float)
LAZYSCOPE_SUM_CLONES(double)
#undef LAZYSCOPE_SUM_CLONES

template <typename T> bool planned_sum(const KernelArgs& k, bool mean) {
  if constexpr (!std::is_floating_point_v<T>) {
    return false;
  } else {
    const SumPlan p = plan_sum(k.inputs[0]->shape(), k.attrs);
    if (p.outer == 0) return false;
    const T* src = k.inputs[0]->as<T>();
    T* out = k.out.as<T>();
    const double divide = mean ? static_cast<double>(p.outer * p.inner) : 1.0;
    const int64_t per_output = p.outer * p.inner;
    if (p.cols == 1) {
      // Every element into one: column_sums would add them on one chain of
      // dependent adds, on one thread (a 1M-element sum ran 4x NumPy's
      // time). Chunks of a fixed size are summed in 8 lanes on the pool,
      // then their sums in order: the same value at any thread count.
      const double total = fold_chunks<double>(
          per_output, [&](int64_t b, int64_t e) { return run_total(src + b, e - b); },
          [](double a, double b) { return a + b; });
      out[0] = static_cast<T>(divide == 1.0 ? total : total / divide);
      return true;
    }
    if (p.inner == 1) {
      parallel_for(p.cols, std::max<int64_t>(16, 16384 / per_output),
                   [&](int64_t c0, int64_t c1) { column_sums(src, p.outer, p.cols, c0, c1, divide, out); });
    } else {
      parallel_for(p.cols, std::max<int64_t>(1, 16384 / per_output),
                   [&](int64_t c0, int64_t c1) { run_sums(src, p.outer, p.cols, p.inner, c0, c1, divide, out); });
    }
    return true;
  }
}

template <typename T> void sum_kernel(const KernelArgs& k) {
  if (planned_sum<T>(k, false)) return;
  reduce<T, T>(
      k, Acc<T>(0), [](Acc<T> a, T v, int64_t) { return a + static_cast<Acc<T>>(v); },
      [](Acc<T> a, int64_t) { return static_cast<T>(a); });
}

template <typename T> void prod_kernel(const KernelArgs& k) {
  reduce<T, T>(
      k, Acc<T>(1), [](Acc<T> a, T v, int64_t) { return a * static_cast<Acc<T>>(v); },
      [](Acc<T> a, int64_t) { return static_cast<T>(a); });
}

template <typename T> void mean_kernel(const KernelArgs& k) {
  if (planned_sum<T>(k, true)) return;
  reduce<T, T>(
      k, 0.0, [](double a, T v, int64_t) { return a + static_cast<double>(v); },
      [](double a, int64_t n) { return static_cast<T>(a / static_cast<double>(n)); });
}

// float and double extremes over [R1, C, R2] (plan_sum) in lanes the
// compiler vectorises: each lane keeps its best with a compare and a
// select, and a NaN, once seen, sticks (nothing compares greater than it,
// and it is taken as it comes); the lanes then join the same way. The
// value is the sequential fold's (an extreme is exact; NaN wins), but for
// which of +0 and -0 a tie between them keeps. 64 lanes in a loop: GCC's
// loop vectoriser takes the select where a fully unrolled 16 (SLP) stayed
// scalar.
template <typename T, bool kMax> struct Extreme {
  static constexpr int64_t kLanes = 64;
  static constexpr T kInit = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  [[gnu::always_inline]] static T take(T best, T v) { return ((kMax ? v > best : v < best) || v != v) ? v : best; }
};

template <typename T, bool kMax>
[[gnu::always_inline]] inline void extreme_runs_body(const T* src, int64_t outer, int64_t cols, int64_t inner,
                                                     int64_t c0, int64_t c1, T* out) {
  using E = Extreme<T, kMax>;
  for (int64_t c = c0; c < c1; ++c) {
    T best[E::kLanes];
    std::fill(best, best + E::kLanes, E::kInit);
    T tail = E::kInit;
    for (int64_t a = 0; a < outer; ++a) {
      const T* x = src + (a * cols + c) * inner;
      int64_t i = 0;
      for (; i + E::kLanes <= inner; i += E::kLanes) {
        for (int64_t l = 0; l < E::kLanes; ++l) best[l] = E::take(best[l], x[i + l]);
      }
      for (; i < inner; ++i) tail = E::take(tail, x[i]);
    }
    for (int64_t l = 0; l < E::kLanes; ++l) tail = E::take(tail, best[l]);
    out[c] = tail;
  }
}

template <typename T, bool kMax>
[[gnu::always_inline]] inline void extreme_columns_body(const T* src, int64_t rows, int64_t cols, int64_t c0,
                                                        int64_t c1, T* out) {
  using E = Extreme<T, kMax>;
  constexpr int64_t kBlock = 256;
  T best[kBlock];
  for (int64_t b0 = c0; b0 < c1; b0 += kBlock) {
    const int64_t w = std::min(kBlock, c1 - b0);
    std::fill(best, best + w, E::kInit);
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = src + r * cols + b0;
      for (int64_t j = 0; j < w; ++j) best[j] = E::take(best[j], row[j]);
    }
    std::copy(best, best + w, out + b0);
  }
}

// The extreme kernels of one type and direction, each compiled for three
// instruction sets, and ExtremeFns<T, kMax> naming them for the templates.
template <typename T, bool kMax> struct ExtremeFns;
#define LAZYSCOPE_EXTREME_CLONES(T, kMax, suffix)                                                 \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void extreme_runs_##suffix(        \
      const T* src, int64_t outer, int64_t cols, int64_t inner, int64_t c0, int64_t c1, T* out) { \
    extreme_runs_body<T, kMax>(src, outer, cols, inner, c0, c1, out);                             \
  }                                                                                               \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void extreme_columns_##suffix(     \
      const T* src, int64_t rows, int64_t cols, int64_t c0, int64_t c1, T* out) {                 \
    extreme_columns_body<T, kMax>(src, rows, cols, c0, c1, out);                                  \
  }                                                                                               \
  template <> struct ExtremeFns<T, kMax> {                                                        \
    static constexpr auto runs = extreme_runs_##suffix;                                           \
    static constexpr auto columns = extreme_columns_##suffix;                                     \
  };
LAZYSCOPE_EXTREME_CLONES(float, true, max_f32)
LAZYSCOPE_EXTREME_CLONES(float, false, min_f32)
LAZYSCOPE_EXTREME_CLONES(double, true, max_f64)
LAZYSCOPE_EXTREME_CLONES(double, false, min_f64)
#undef LAZYSCOPE_EXTREME_CLONES

// The first i in [0, n) with x[i] equal to `value` (a NaN: the first NaN),
// -1 if none: blocks tested with a vectorised or of compares, the block
// that has it then scanned.
template <typename T> [[gnu::always_inline]] inline int64_t first_index_body(const T* x, int64_t n, T value) {
  constexpr int64_t kBlock = 256;
  const bool nan = value != value;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    int hits = 0;  // counted in an int: GCC leaves an or of bools scalar
    if (nan) {
      for (int64_t i = b; i < e; ++i) hits += x[i] != x[i];
    } else {
      for (int64_t i = b; i < e; ++i) hits += x[i] == value;
    }
    if (hits == 0) continue;
    for (int64_t i = b; i < e; ++i) {
      if (nan ? x[i] != x[i] : x[i] == value) return i;
    }
  }
  return -1;
}
#define LAZYSCOPE_FIRST_INDEX_CLONES(T)                                                                              \
  __attribute__((target_clones("avx512f", "avx2", "default"))) int64_t first_index(const T* x, int64_t n, T value) { \
    return first_index_body(x, n, value);                                                                            \
  }
LAZYSCOPE_FIRST_INDEX_CLONES(float)
LAZYSCOPE_FIRST_INDEX_CLONES(double)
#undef LAZYSCOPE_FIRST_INDEX_CLONES

// The extreme of src[0, n): chunks on the pool, then their extremes
// (exact: in any order).
template <typename T, bool kMax> T whole_extreme(const T* src, int64_t n) {
  const auto part = [&](int64_t b, int64_t e) {
    T value;
    ExtremeFns<T, kMax>::runs(src + b, 1, 1, e - b, 0, 1, &value);
    return value;
  };
  return fold_chunks<T>(n, part, [](T a, T b) { return Extreme<T, kMax>::take(a, b); });
}

// Whether the float extreme ran on the lanes (reduced dims around the kept ones).
template <typename T, bool kMax> bool planned_extreme(const KernelArgs& k) {
  if constexpr (!std::is_floating_point_v<T>) {
    return false;
  } else {
    const SumPlan p = plan_sum(k.inputs[0]->shape(), k.attrs);
    if (p.outer == 0) return false;
    const T* src = k.inputs[0]->as<T>();
    T* out = k.out.as<T>();
    const int64_t per_output = p.outer * p.inner;
    using Fns = ExtremeFns<T, kMax>;
    if (p.cols == 1) {
      out[0] = whole_extreme<T, kMax>(src, per_output);
    } else if (p.inner == 1) {
      parallel_for(p.cols, std::max<int64_t>(16, 16384 / per_output),
                   [&](int64_t c0, int64_t c1) { Fns::columns(src, p.outer, p.cols, c0, c1, out); });
    } else {
      parallel_for(p.cols, std::max<int64_t>(1, 16384 / per_output),
                   [&](int64_t c0, int64_t c1) { Fns::runs(src, p.outer, p.cols, p.inner, c0, c1, out); });
    }
    return true;
  }
}

// NaN wins, as in PyTorch.
template <typename T, bool kMax> void extreme_kernel(const KernelArgs& k) {
  if (planned_extreme<T, kMax>(k)) return;
  // Floats start at -inf/+inf: from lowest() a max of all -inf was -FLT_MAX.
  T init = kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  if constexpr (std::numeric_limits<T>::has_infinity)
    init = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  const auto pick = [](T a, T v) {
    if (v != v || a != a) return a != a ? a : v;  // the first NaN
    return kMax ? std::max(a, v) : std::min(a, v);
  };
  reduce<T, T>(
      k, init, [&](T a, T v, int64_t) { return pick(a, v); }, [](T a, int64_t) { return a; }, pick);
}
template <typename T> void amax_kernel(const KernelArgs& k) { extreme_kernel<T, true>(k); }
template <typename T> void amin_kernel(const KernelArgs& k) { extreme_kernel<T, false>(k); }

// The first index of the extreme value (a NaN counts as the extreme), as in
// PyTorch; with no dims the index is into the flattened tensor.
// argmax/argmin of floats over runs ([R1, C, R2] with R2 > 1: a row's
// classes) or of every element: the extreme on the lanes, then the first
// index holding it, both vectorised; the same index as the sequential fold
// (an element equal to the extreme is one, +0 and -0 equal included, and
// the first NaN where there is one).
template <typename T, bool kMax> bool planned_arg_extreme(const KernelArgs& k) {
  if constexpr (!std::is_floating_point_v<T>) {
    return false;
  } else {
    const SumPlan p = plan_sum(k.inputs[0]->shape(), k.attrs);
    if (p.outer == 0 || (p.inner == 1 && p.cols > 1)) return false;
    const T* src = k.inputs[0]->as<T>();
    int64_t* out = k.out.as<int64_t>();
    using Fns = ExtremeFns<T, kMax>;
    const auto index_of = [&](int64_t c, T value) {
      for (int64_t a = 0; a < p.outer; ++a) {
        const int64_t i = first_index(src + (a * p.cols + c) * p.inner, p.inner, value);
        if (i >= 0) return a * p.inner + i;
      }
      return int64_t{0};  // not reached: the extreme is one of the elements
    };
    if (p.cols == 1) {
      const int64_t n = p.outer * p.inner;
      out[0] = first_index(src, n, whole_extreme<T, kMax>(src, n));
      return true;
    }
    parallel_for(p.cols, std::max<int64_t>(1, 16384 / (p.outer * p.inner)), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        T value;
        Fns::runs(src + c * p.inner, p.outer, p.cols, p.inner, 0, 1, &value);  // column c as column 0
        out[c] = index_of(c, value);
      }
    });
    return true;
  }
}

template <typename T, bool kMax> void arg_extreme_kernel(const KernelArgs& k) {
  if (planned_arg_extreme<T, kMax>(k)) return;
  struct Best {
    T value;
    int64_t index;
  };
  // Stretches join in order: the later one's best wins only where it is
  // strictly better (or the first NaN), so the first index is kept.
  const auto better = [](Best b, Best c) {
    if (b.index < 0 || b.value != b.value) return b.index < 0 ? c : b;
    if (c.index >= 0 && (c.value != c.value || (kMax ? c.value > b.value : c.value < b.value))) return c;
    return b;
  };
  reduce<T, int64_t>(
      k, Best{T(0), -1},
      [&](Best b, T v, int64_t j) {
        return better(b, Best{v, j});
      },
      [](Best b, int64_t) { return b.index; }, better);
}
template <typename T> void argmax_kernel(const KernelArgs& k) { arg_extreme_kernel<T, true>(k); }
template <typename T> void argmin_kernel(const KernelArgs& k) { arg_extreme_kernel<T, false>(k); }

// The variance of each column c of src [outer, cols, inner] over its outer
// and inner elements, for columns [c0, c1): two passes over the column's
// runs in double (its mean, then the squared deviations), each run added in
// 8 double lanes. A layer norm's rows are [1, rows, n]: each row read twice
// while it is in L1, where the general path below walked an offset list per
// element (~1 GB/s on a transformer's layer norms).
template <typename T>
[[gnu::always_inline]] inline void run_vars_body(const T* src, int64_t outer, int64_t cols, int64_t inner, int64_t c0,
                                                 int64_t c1, double correction, T* out) {
  const auto n = static_cast<double>(outer * inner);
  for (int64_t c = c0; c < c1; ++c) {
    const double mean = column_sum(src, outer, cols, inner, c) / n;
    double squares[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    double tail = 0;
    for (int64_t a = 0; a < outer; ++a) {
      const T* run = src + (a * cols + c) * inner;
      int64_t b = 0;
      for (; b + 8 <= inner; b += 8) {
        for (int k = 0; k < 8; ++k) {
          const double d = static_cast<double>(run[b + k]) - mean;
          squares[k] += d * d;
        }
      }
      for (; b < inner; ++b) {
        const double d = static_cast<double>(run[b]) - mean;
        tail += d * d;
      }
    }
    double ss = tail;
    for (double square : squares) ss += square;
    out[c] = static_cast<T>(ss / std::max(0.0, n - correction));
  }
}

#define LAZYSCOPE_VAR_CLONES(T)                                                                                      \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void run_vars(                                        \
      const T* src, int64_t outer, int64_t cols, int64_t inner, int64_t c0, int64_t c1, double correction, T* out) { \
    run_vars_body(src, outer, cols, inner, c0, c1, correction, out);                                                 \
  }
LAZYSCOPE_VAR_CLONES(float)
LAZYSCOPE_VAR_CLONES(double)
#undef LAZYSCOPE_VAR_CLONES

// Two passes per output in double: the mean, then squared deviations.
template <typename T> void var_kernel(const KernelArgs& k) {
  const double correction = k.attrs.get_double("correction");
  // Reduced dims as contiguous runs after the kept ones ([R1, C, R2] with
  // R2 > 1: a layer norm's rows, a batch norm's planes): runs in lanes.
  if (const SumPlan p = plan_sum(k.inputs[0]->shape(), k.attrs); p.outer != 0 && (p.inner > 1 || p.cols == 1)) {
    const T* src = k.inputs[0]->as<T>();
    T* out = k.out.as<T>();
    if (p.cols == 1) {
      // Every element into one: a single run, in lanes (one thread).
      run_vars(src, 1, 1, p.outer * p.inner, 0, 1, correction, out);
      return;
    }
    parallel_for(p.cols, std::max<int64_t>(1, 8192 / (p.outer * p.inner)),
                 [&](int64_t c0, int64_t c1) { run_vars(src, p.outer, p.cols, p.inner, c0, c1, correction, out); });
    return;
  }
  const Reduction r = plan(*k.inputs[0], k.attrs);
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  const auto n = static_cast<double>(r.inner.size());
  // Outputs split across the pool, each folded by one thread in order.
  parallel_for(static_cast<int64_t>(r.bases.size()), std::max<int64_t>(1, 8192 / std::max<int64_t>(1, r.inner.size())),
               [&](int64_t o0, int64_t o1) {
                 for (auto o = static_cast<size_t>(o0); o < static_cast<size_t>(o1); ++o) {
                   const T* base = src + r.bases[o];
                   double mean = 0;
                   for (int64_t off : r.inner) mean += static_cast<double>(base[off]);
                   mean /= n;
                   double ss = 0;
                   for (int64_t off : r.inner) {
                     ss += (static_cast<double>(base[off]) - mean) * (static_cast<double>(base[off]) - mean);
                   }
                   out[o] = static_cast<T>(ss / std::max(0.0, n - correction));
                 }
               });
}

// max + log(sum(exp(x - max))); an infinite max is the answer itself.
template <typename T> void logsumexp_kernel(const KernelArgs& k) {
  if constexpr (std::is_same_v<T, float>) {
    // Trailing dims of contiguous rows ([C, R2]): each row on the
    // instruction set's row function (float exponentials, as softmax_rows
    // and PyTorch), rows on the pool; the general path below walked offset
    // lists in double on one thread (4x NumPy's time).
    if (const SumPlan p = plan_sum(k.inputs[0]->shape(), k.attrs); p.outer == 1 && p.inner > 1) {
      const LogsumexpRowsFn fn = logsumexp_rows();
      const float* src = k.inputs[0]->as<float>();
      float* out = k.out.as<float>();
      parallel_for(p.cols, std::max<int64_t>(1, 8192 / p.inner),
                   [&](int64_t r0, int64_t r1) { fn(out + r0, src + r0 * p.inner, r1 - r0, p.inner); });
      return;
    }
  }
  const Reduction r = plan(*k.inputs[0], k.attrs);
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for (size_t o = 0; o < r.bases.size(); ++o) {
    const T* base = src + r.bases[o];
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t off : r.inner) m = std::max(m, static_cast<double>(base[off]));
    if (std::isinf(m)) {
      out[o] = static_cast<T>(m);
      continue;
    }
    double s = 0;
    for (int64_t off : r.inner) s += std::exp(static_cast<double>(base[off]) - m);
    out[o] = static_cast<T>(m + std::log(s));
  }
}

// softmax/log_softmax along attr dim: each row (the elements that differ only
// in dim) is shifted by its max, in double; the output has the input's
// layout, so the same offsets address both.
template <typename T, bool kLog> void softmax_like_kernel(const KernelArgs& k) {
  const Reduction r = plan_dims(k.inputs[0]->shape(), {k.attrs.get_int("dim")});
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for (int64_t b : r.bases) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t off : r.inner) m = std::max(m, static_cast<double>(src[b + off]));
    if (std::isinf(m)) m = 0;  // all -inf (or +inf present): no shift, IEEE gives NaN/0 as PyTorch does
    double s = 0;
    for (int64_t off : r.inner) s += std::exp(static_cast<double>(src[b + off]) - m);
    const double log_s = std::log(s);
    for (int64_t off : r.inner) {
      const double shifted = static_cast<double>(src[b + off]) - m;
      out[b + off] = static_cast<T>(kLog ? shifted - log_s : std::exp(shifted) / s);
    }
  }
}
// float32 along the last dim: contiguous rows, threaded, each row one pass
// of the instruction set's row function (float exponentials, as PyTorch's).
template <typename T, bool kLog> void softmax_rows_or_general(const KernelArgs& k) {
  const Shape& s = k.inputs[0]->shape();
  if constexpr (std::is_same_v<T, float>) {
    const int64_t dim = wrap_dim(k.attrs.get_int("dim"), s.size(), "softmax");
    if (!s.empty() && dim == static_cast<int64_t>(s.size()) - 1 && s.back() > 0) {
      const int64_t n = s.back(), rows = numel(s) / n;
      const SoftmaxRowsFn fn = softmax_rows();
      const float* src = k.inputs[0]->as<float>();
      float* out = k.out.as<float>();
      parallel_for(rows, std::max<int64_t>(1, 8192 / n),
                   [&](int64_t r0, int64_t r1) { fn(out + r0 * n, src + r0 * n, r1 - r0, n, kLog); });
      return;
    }
    if (!s.empty() && s[static_cast<size_t>(dim)] > 0 && numel(s) > 0) {
      // Not the last dim: [outer, n, inner], a softmax down each column of
      // each [n, inner] block, in blocks of up to 256 columns on the pool
      // (the general path below walked offset lists in double, one thread:
      // 10x NumPy on [1024, 1024] over dim 0).
      const int64_t n = s[static_cast<size_t>(dim)];
      int64_t inner = 1;
      for (size_t d = static_cast<size_t>(dim) + 1; d < s.size(); ++d) inner *= s[d];
      const int64_t outer = numel(s) / (n * inner);
      constexpr int64_t kBlock = 256;
      const int64_t blocks = (inner + kBlock - 1) / kBlock;
      const SoftmaxColumnsFn fn = softmax_columns();
      const float* src = k.inputs[0]->as<float>();
      float* out = k.out.as<float>();
      parallel_for(outer * blocks, std::max<int64_t>(1, 8192 / (n * std::min(kBlock, inner))),
                   [&](int64_t u0, int64_t u1) {
                     for (int64_t u = u0; u < u1; ++u) {
                       const int64_t o = u / blocks, b = (u % blocks) * kBlock;
                       const int64_t at = o * n * inner + b;
                       fn(out + at, src + at, n, inner, std::min(kBlock, inner - b), kLog);
                     }
                   });
      return;
    }
  }
  softmax_like_kernel<T, kLog>(k);
}
template <typename T> void softmax_kernel(const KernelArgs& k) { softmax_rows_or_general<T, false>(k); }
template <typename T> void log_softmax_kernel(const KernelArgs& k) { softmax_rows_or_general<T, true>(k); }

void any_kernel(const KernelArgs& k) {
  reduce<bool, bool>(
      k, false, [](bool a, bool v, int64_t) { return a || v; }, [](bool a, int64_t) { return a; });
}
void all_kernel(const KernelArgs& k) {
  reduce<bool, bool>(
      k, true, [](bool a, bool v, int64_t) { return a && v; }, [](bool a, int64_t) { return a; });
}

// argmax/argmin typed by the input. 16-bit floats widen to float32 first:
// exact, so the order and therefore the index are the same.
template <bool kMax> void arg_reduce(const KernelArgs& k) {
  const auto run = [&]<typename T>(const KernelArgs& args) {
    if constexpr (kMax)
      argmax_kernel<T>(args);
    else
      argmin_kernel<T>(args);
  };
  const Buffer& in = *k.inputs[0];
  dispatch(in.dtype(), [&]<typename T>() {
    if constexpr (std::is_arithmetic_v<T>) {
      run.template operator()<T>(k);
    } else {
      const BufferPtr wide = Buffer::allocate(DType::kFloat32, in.shape());
      const T* src = in.as<T>();
      float* dst = wide->as<float>();
      for (int64_t i = 0; i < in.numel(); ++i) dst[i] = static_cast<float>(to_double(src[i]));
      const Buffer* operand = wide.get();
      run.template operator()<float>(KernelArgs{std::span<const Buffer* const>(&operand, 1), k.out, k.attrs});
    }
  });
}

}  // namespace

void add_reduction_kernels(Table& t) {
  // Integer sums and products arrive as int64 (see Promote::kIntToLong).
  rows<int64_t, float, double>(t, OpKind::kSum, LAZYSCOPE_KERNEL(sum_kernel));
  rows<int64_t, float, double>(t, OpKind::kProd, LAZYSCOPE_KERNEL(prod_kernel));
  rows<float, double>(t, OpKind::kMean, LAZYSCOPE_KERNEL(mean_kernel));
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kAmax, LAZYSCOPE_KERNEL(amax_kernel));
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kAmin, LAZYSCOPE_KERNEL(amin_kernel));
  rows<float, double>(t, OpKind::kVar, LAZYSCOPE_KERNEL(var_kernel));
  rows<float, double>(t, OpKind::kLogsumexp, LAZYSCOPE_KERNEL(logsumexp_kernel));
  rows<float, double>(t, OpKind::kSoftmax, LAZYSCOPE_KERNEL(softmax_kernel));
  rows<float, double>(t, OpKind::kLogSoftmax, LAZYSCOPE_KERNEL(log_softmax_kernel));
  t.emplace(Key{OpKind::kAny, DType::kBool}, any_kernel);
  t.emplace(Key{OpKind::kAll, DType::kBool}, all_kernel);
  // argmax/argmin write int64 whatever the input: typed by the input inside.
  t.emplace(Key{OpKind::kArgmax, DType::kInt64}, [](const KernelArgs& k) { arg_reduce<true>(k); });
  t.emplace(Key{OpKind::kArgmin, DType::kInt64}, [](const KernelArgs& k) { arg_reduce<false>(k); });
}

}  // namespace lazyscope::cpu
