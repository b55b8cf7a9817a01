// Layout kernels (reshape, permute, expand) and matmul. Layout ops copy:
// buffers are always row-major and contiguous, so a reshape is a memcpy and
// a permute or expand is a gather over input strides.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>

#include "backend/cpu/fusion.h"
#include "backend/cpu/gemm_dnnl.h"
#include "backend/cpu/kernel_util.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"

namespace lazyscope::cpu {
namespace {

template <typename T> void reshape_kernel(const KernelArgs& k) {
  if (k.out.bytes()) std::memcpy(k.out.data(), k.inputs[0]->data(), k.out.bytes());
}

// A permute as a copy over merged dims: output dims that are adjacent and
// in order in the input too collapse into one (a [B,T,H,D] -> [B,H,T,D]
// permute is a 4-dim copy; a batch of matrix transposes a 3-dim one). Then
// either the innermost output dim is the input's innermost (each output row
// is one contiguous block: memcpy), or it is a transpose of two dims, done
// in cache-sized square tiles so both the reads and the writes stay within
// a few cache lines. Parts are split over output rows/tile rows, threaded.
struct PermutePlan {
  Shape shape;                   // merged output shape
  std::vector<int64_t> strides;  // input stride of each merged output dim
};

PermutePlan plan_permute(const Shape& in_shape, const std::vector<int64_t>& dims_attr) {
  const size_t rank = in_shape.size();
  const auto in_strides = contiguous_strides(in_shape);
  PermutePlan p;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = dims_attr[i] < 0 ? dims_attr[i] + static_cast<int64_t>(rank) : dims_attr[i];
    const int64_t size = in_shape[static_cast<size_t>(d)], stride = in_strides[static_cast<size_t>(d)];
    if (size == 1) continue;  // a unit dim moves nothing
    // Merge with the previous output dim when it sits right outside this
    // one in the input.
    if (!p.shape.empty() && p.strides.back() == stride * size) {
      p.shape.back() *= size;
      p.strides.back() = stride;
      continue;
    }
    p.shape.push_back(size);
    p.strides.push_back(stride);
  }
  if (p.shape.empty()) {
    p.shape = {1};
    p.strides = {1};
  }
  return p;
}

template <typename T> void permute_kernel(const KernelArgs& k) {
  const PermutePlan p = plan_permute(k.inputs[0]->shape(), k.attrs.get_ints("dims"));
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  const int64_t n = k.out.numel();
  if (n == 0) return;
  const size_t rank = p.shape.size();
  const int64_t inner = p.shape.back();
  // Offset into the input of output element `flat` (a multiple of the
  // dims after `upto`), walking the merged dims before `upto`.
  const auto input_offset = [&](int64_t flat, size_t upto) {
    int64_t off = 0;
    for (size_t d = upto; d-- > 0;) {
      off += (flat % p.shape[d]) * p.strides[d];
      flat /= p.shape[d];
    }
    return off;
  };
  if (p.strides.back() == 1) {
    // Contiguous output rows: one block copy each.
    const int64_t rows = n / inner;
    parallel_for(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        std::memcpy(out + r * inner, src + input_offset(r, rank - 1), static_cast<size_t>(inner) * sizeof(T));
      }
    });
    return;
  }
  // The output dim q whose input stride is 1 (merged dims keep exactly one);
  // output element (.., i_q, .., j) reads src[base + i_q + j * stride_last].
  size_t q = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (p.strides[d] == 1) q = d;
  }
  int64_t after_q = 1;  // output elements per step of dim q
  for (size_t d = q + 1; d < rank; ++d) after_q *= p.shape[d];
  const int64_t rows_q = p.shape[q], mid = after_q / inner;  // dims strictly between q and the last
  const int64_t outer = n / (rows_q * after_q);
  constexpr int64_t kTile = 64 / sizeof(T) < 8 ? 8 : 64 / sizeof(T) * 2;  // two cache lines of T per tile side
  const int64_t tiles_i = (rows_q + kTile - 1) / kTile, tiles_j = (inner + kTile - 1) / kTile;
  const int64_t planes = outer * mid, tiles = planes * tiles_i * tiles_j;
  const int64_t sl = p.strides.back();
  parallel_for(tiles, std::max<int64_t>(1, 4096 / (kTile * kTile)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t plane = t / (tiles_i * tiles_j), ti = t / tiles_j % tiles_i, tj = t % tiles_j;
      const int64_t o = plane / mid, m = plane % mid;
      // Output offset and input offset of (o, i=0, m, j=0).
      const int64_t out_base = o * rows_q * after_q + m * inner;
      int64_t in_base = input_offset(o, q);
      {
        int64_t rest = m;  // the dims between q and the last
        for (size_t d = rank - 1; d-- > q + 1;) {
          in_base += (rest % p.shape[d]) * p.strides[d];
          rest /= p.shape[d];
        }
      }
      const int64_t i0 = ti * kTile, i1 = std::min(rows_q, i0 + kTile);
      const int64_t j0 = tj * kTile, j1 = std::min(inner, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        T* dst = out + out_base + i * after_q;
        const T* from = src + in_base + i;
        for (int64_t j = j0; j < j1; ++j) dst[j] = from[j * sl];
      }
    }
  });
}

template <typename T> void expand_kernel(const KernelArgs& k) {
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for_each_broadcast<1>(k.out.shape(), {&k.inputs[0]->shape()},
                        [&](int64_t i, const std::array<int64_t, 1>& o) { out[i] = src[o[0]]; });
}

// Elements before and after `dim` of `shape`, as block counts for memcpy.
std::pair<int64_t, int64_t> outer_inner(const Shape& shape, size_t dim) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  return {outer, inner};
}

// Any dtype: contiguous blocks of each operand in turn, per outer index.
void cat_kernel(const KernelArgs& k) {
  const Shape& os = k.out.shape();
  const auto dim = static_cast<size_t>(wrap_dim(k.attrs.get_int("dim"), os.size(), "cat"));
  const auto [outer, inner] = outer_inner(os, dim);
  const size_t elem = dtype_size(k.out.dtype());
  auto* out = static_cast<char*>(k.out.data());
  const auto out_block = static_cast<size_t>(os[dim] * inner) * elem;
  size_t offset = 0;
  for (const Buffer* in : k.inputs) {
    const auto block = static_cast<size_t>(in->shape()[dim] * inner) * elem;
    const auto* src = static_cast<const char*>(in->data());
    for (int64_t o = 0; o < outer && block; ++o) {
      std::memcpy(out + static_cast<size_t>(o) * out_block + offset, src + static_cast<size_t>(o) * block, block);
    }
    offset += block;
  }
}

template <typename T> void slice_kernel(const KernelArgs& k) {
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for_each_sliced(k.inputs[0]->shape(), k.out.shape(), k.attrs, [&](int64_t i, int64_t o) { out[i] = src[o]; });
}

template <typename T> void slice_backward_kernel(const KernelArgs& k) {
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  std::fill(out, out + k.out.numel(), convert<T>(0.0));
  for_each_sliced(k.out.shape(), k.inputs[0]->shape(), k.attrs, [&](int64_t i, int64_t o) { out[o] = src[i]; });
}

constexpr const char* kSplitNames[] = {"auto", "rows", "columns", "blas", "legacy", "dnnl", "dnnl-rows", "openblas"};
constexpr const char* kSplitList = "auto, rows, columns, blas, legacy, dnnl, dnnl-rows or openblas";

std::atomic<int>& gemm_split_mode() {
  static std::atomic<int> mode{[] {
    const char* env = std::getenv("LAZYSCOPE_GEMM_SPLIT");
    if (!env || !*env) return static_cast<int>(GemmSplit::kAuto);
    for (int i = 0; i < static_cast<int>(std::size(kSplitNames)); ++i) {
      if (std::string(env) == kSplitNames[i]) return i;
    }
    throw EngineError(std::string("LAZYSCOPE_GEMM_SPLIT=") + env + ": expected " + kSplitList);
  }()};
  return mode;
}

GemmSplit current_split() { return static_cast<GemmSplit>(gemm_split_mode().load(std::memory_order_relaxed)); }

// Whether a single-threaded float product of op(A) [m,k] x op(B) [k,n] (a
// pool part, a whole small product) is oneDNN's rather than OpenBLAS's.
// auto (and rows, columns): oneDNN where k and n are at least 128 and the
// part has 128 rows (or 32, when n is at least 512), and only where oneDNN
// runs its AVX-512 kernels. gemm_shapes on this AVX-512 machine: oneDNN 5-15% faster on one
// thread on the models' large products, and the pool's split with oneDNN
// parts 1.05-1.23x faster than with OpenBLAS's (the MLP's 128-row products
// split in 64-row parts included); 8-20% slower on skinny and small
// products (the MLP's 10-wide output layer, the transformer's 65-wide head,
// 64^3 attention products) and ~5% on 64-row parts of 256 columns (the
// MLP's second layer forward). Limited to AVX2, oneDNN lost to OpenBLAS on
// half the models' products (benchmarks/README.md).
bool use_dnnl(GemmSplit mode, int64_t m, int64_t k, int64_t n) {
  switch (mode) {
    case GemmSplit::kDnnl:
    case GemmSplit::kDnnlRows: return true;
    case GemmSplit::kAuto:
    case GemmSplit::kRows:
    case GemmSplit::kColumns: return k >= 128 && n >= 128 && m >= (n >= 512 ? 32 : 128) && dnnl_gemm_avx512();
    default: return false;
  }
}

// One op(A) [m,k] x op(B) [k,n] product at the given pointers, op being a
// transpose where ta/tb say so (A then stored [k,m], B [n,k]): a transpose
// feeding a matmul is a BLAS flag, not a copy. oneDNN or OpenBLAS for
// floats (by the split mode), OpenBLAS for doubles; a plain loop for
// integers, which no training step multiplies at scale. Single-threaded
// (the pool's parts call it) unless `threads` > 1: then one call on that
// many of the library's own threads.
template <typename T>
void gemm_ld(const T* a, int64_t lda, bool ta, const T* b, int64_t ldb, bool tb, T* out, int64_t ldc, int64_t m,
             int64_t kk, int64_t n, int threads = 1) {
  if (m == 0 || n == 0) return;
  if (kk == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(out + i * ldc, out + i * ldc + n, T(0));
    return;
  }
  // BLAS reports a leading dimension shorter than its row through xerbla,
  // which prints (or, with NumPy's in the process, sets a Python error from
  // inside the engine: "SystemError ... returned a result with an exception
  // set") and leaves `out` unwritten. A layout that makes one is the
  // engine's bug: refuse it here, by name, before any part is written.
  if (lda < std::max<int64_t>(1, ta ? m : kk) || ldb < std::max<int64_t>(1, tb ? kk : n) ||
      ldc < std::max<int64_t>(1, n)) {
    throw EngineError("matmul: leading dimensions " + std::to_string(lda) + ", " + std::to_string(ldb) + ", " +
                      std::to_string(ldc) + " shorter than the rows of a " + std::to_string(m) + "x" +
                      std::to_string(kk) + "x" + std::to_string(n) + " product");
  }
  const CBLAS_TRANSPOSE fa = ta ? CblasTrans : CblasNoTrans, fb = tb ? CblasTrans : CblasNoTrans;
  const auto i32 = [](int64_t v) { return static_cast<int>(v); };
  if constexpr (std::is_same_v<T, float>) {
    if (use_dnnl(current_split(), m, kk, n)) {
      dnnl_gemm(a, lda, ta, b, ldb, tb, out, ldc, m, kk, n, threads);
      return;
    }
    cblas_sgemm(CblasRowMajor, fa, fb, i32(m), i32(n), i32(kk), 1.0f, a, i32(lda), b, i32(ldb), 0.0f, out, i32(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, fa, fb, i32(m), i32(n), i32(kk), 1.0, a, i32(lda), b, i32(ldb), 0.0, out, i32(ldc));
  } else {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < kk; ++p) {
          const T x = ta ? a[p * lda + i] : a[i * lda + p];
          const T y = tb ? b[j * ldb + p] : b[p * ldb + j];
          acc = static_cast<T>(acc + x * y);
        }
        out[i * ldc + j] = acc;
      }
    }
  }
}

// One product split across the pool. How (LAZYSCOPE_GEMM_SPLIT,
// set_gemm_split; benchmarks/gemm_shapes.cpp measures each per shape):
//  - by output rows: each part packs all of B again (K*N per extra part);
//  - by output columns: each part packs all of A again (M*K per extra part);
//  - one call on the library's own threads (OpenBLAS's for `blas`,
//    oneDNN's OpenMP threads for `dnnl`): one packing of each operand,
//    shared, the pool's workers parked meanwhile;
//  - auto (default): rows unless there are too few (then columns), each
//    part single-threaded oneDNN or OpenBLAS by its shape (use_dnnl), with
//    OpenBLAS held at one thread inside the parts, and a batch of rows
//    times one matrix stacked into one product (matmul_typed). `openblas`
//    is the same with OpenBLAS in every part (auto before), `dnnl-rows`
//    with oneDNN in every part.
// Each part is a single-threaded GEMM on its own block of the output.
// `epilogue` (or nullptr) runs on each row part as soon as it is written,
// on the thread that wrote it; after a one-call product or a column split,
// split over the pool.
// Parts per thread of a split product (LAZYSCOPE_GEMM_PARTS_PER_THREAD;
// default 1; set_gemm_parts_per_thread). More parts than threads are claimed
// dynamically, so a descheduled worker holds up a smaller part; each part is
// one more OpenBLAS call packing its share of the other operand again.
std::atomic<int>& gemm_parts() {
  static std::atomic<int> parts{[] {
    const char* env = std::getenv("LAZYSCOPE_GEMM_PARTS_PER_THREAD");
    return std::clamp(env ? std::atoi(env) : 1, 1, 16);
  }()};
  return parts;
}
int gemm_parts_per_thread() { return gemm_parts().load(std::memory_order_relaxed); }

// OpenBLAS's thread count is process-wide, and a library beside the engine
// (NumPy, PyTorch, a benchmark) may have raised it: a GEMM part called from
// each pool thread would then start OpenBLAS's threads too, two callers
// queueing on one OpenBLAS worker that spins in sched_yield afterwards.
// Checked per product (a read of a global), set only when it differs.
}  // namespace

void set_blas_threads(int n) {
  if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

namespace {

template <typename T>
void parallel_gemm(const T* a, bool ta, const T* b, bool tb, T* out, int64_t m, int64_t kk, int64_t n,
                   const Epilogue* epilogue) {
  const int64_t lda = ta ? m : kk, ldb = tb ? kk : n;
  constexpr int64_t kMinFlopsPerPart = 1 << 16;
  int nth = num_threads();
  const int64_t flops = m * n * kk;
  if (flops / kMinFlopsPerPart < nth) nth = static_cast<int>(std::max<int64_t>(1, flops / kMinFlopsPerPart));
  const GemmSplit mode = current_split();
  // One call on the library's threads only for products of at least 2^22
  // multiply-adds (~80 us on one thread): below that its hand-off costs
  // more than the pool's (gemm_shapes: the MLP's 128x256x10 output layer 26
  // us on OpenBLAS's 2 threads, 7 on the pool). Not from inside a region (a
  // pool worker would start a team of its own).
  constexpr int64_t kMinOneCallFlops = int64_t{1} << 22;
  const bool one_call_mode = mode == GemmSplit::kBlas || (mode == GemmSplit::kDnnl && std::is_same_v<T, float>);
  if (one_call_mode && nth > 1 && flops >= kMinOneCallFlops && std::is_floating_point_v<T> && !in_parallel_region()) {
    park_workers();
    if (mode == GemmSplit::kBlas) {
      set_blas_threads(nth);
      gemm_ld(a, lda, ta, b, ldb, tb, out, n, m, kk, n);
      set_blas_threads(1);
    } else {
      gemm_ld(a, lda, ta, b, ldb, tb, out, n, m, kk, n, nth);
    }
    if (epilogue) parallel_for(m * n, 2048, [&](int64_t b0, int64_t b1) { (*epilogue)(b0, b1); });
    return;
  }
  if (mode != GemmSplit::kLegacy) set_blas_threads(1);
  bool by_rows = true;
  switch (mode) {
    case GemmSplit::kLegacy: by_rows = m >= n || m >= 16 * nth; break;
    case GemmSplit::kRows: by_rows = m >= 16 * nth || m >= n; break;
    case GemmSplit::kColumns: by_rows = n < 64 * nth; break;
    default:
      // auto: rows, unless too few to share (then columns). Columns would
      // pack the smaller operand again where M < N (the MLP's forward
      // products), but measured no faster in CPU time (gemm_shapes), and an
      // epilogue then runs row by row over each column part: the MLP's
      // epilogues (relu backward, SGD update) cost more than the packing saved.
      by_rows = m >= n || m >= 16 * nth;
      // Except a float product of few rows times a wide transposed B
      // (x @ W^T of a linear layer's forward, W the larger operand): row
      // parts each pack all of W^T, column parts each their half of it and
      // all of the smaller x. On the MLP's first layer (128x784 @ 784x512^T)
      // two 64-row parts took 1.10x the CPU of two 256-column parts
      // (oneDNN, one thread each; 1.05x on the second layer), and when W
      // comes from memory each thread reads half of it instead of all.
      // The epilogue (bias, activation) then runs after the region (below).
      if (by_rows && std::is_same_v<T, float> && tb && m < n && kk >= 128 && n >= 128 * nth) by_rows = false;
      break;
  }
  if (nth > 1) {
    // At least 16 rows or 64 columns per part (an OpenBLAS call on fewer
    // spends its time packing).
    const int64_t most = by_rows ? m / 16 : n / 64;
    nth = static_cast<int>(std::max<int64_t>(nth, std::min<int64_t>(most, int64_t{nth} * gemm_parts_per_thread())));
  }
  // Column parts: the epilogue runs after the region over flat element
  // ranges, a few calls, instead of once per row of each part: a call of a
  // fused epilogue costs ~470 instructions before its first element, more
  // with scalars (each filled into a tile per call: an SGD update has
  // three). Callgrind, the MLP step: 512 calls of 128-256 elements on its
  // two forward products, 0.24 M instructions per step; the product,
  // 128-256 KiB, is still in the two cores' caches.
  const bool epilogue_after = epilogue && !by_rows;
  auto body = [&](int ith, int parts) {
    if (by_rows) {
      const auto [r0, r1] = split(m, ith, parts, 4);
      if (r0 < r1) {
        gemm_ld(a + (ta ? r0 : r0 * lda), lda, ta, b, ldb, tb, out + r0 * n, n, r1 - r0, kk, n);
        if (epilogue) (*epilogue)(r0 * n, r1 * n);
      }
    } else {
      const auto [c0, c1] = split(n, ith, parts, 16);
      if (c0 < c1) {
        gemm_ld(a, lda, ta, b + (tb ? c0 * ldb : c0), ldb, tb, out + c0, n, m, kk, c1 - c0);
        if (epilogue && !epilogue_after) {
          for (int64_t r = 0; r < m; ++r) (*epilogue)(r * n + c0, r * n + c1);
        }
      }
    }
  };
  if (nth <= 1) {
    body(0, 1);
  } else {
    parallel_region(nth, RegionBody(body));
  }
  if (epilogue_after) parallel_for(m * n, 2048, [&](int64_t b0, int64_t b1) { (*epilogue)(b0, b1); });
}

// Whether a batch of small float products op(A) [m,k] x op(B) [k,n] runs as
// oneDNN matmul primitives (its brgemm kernels), one per part of the batch,
// rather than one OpenBLAS call per product (LAZYSCOPE_GEMM_BATCHED_DNNL,
// set_gemm_batched_dnnl; default on). Only B transposed and A not (an
// attention's q k^T and do v^T): there, on one thread, the transformer's
// 64 products of 64x64x64 took 331 us against OpenBLAS's 415 (1.25x);
// every other combination of flags was 8-18% slower on oneDNN (OpenBLAS's
// small-matrix kernels run those at ~113 GFLOP/s, this core's peak), so
// they stay on OpenBLAS. And only where oneDNN runs AVX-512, in the auto
// split and its rows/columns variants (openblas, dnnl-rows, legacy... keep
// their per-product calls).
std::atomic<bool>& batched_dnnl_flag() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("LAZYSCOPE_GEMM_BATCHED_DNNL");
    return !env || !*env || std::string(env) != "0";
  }()};
  return on;
}

bool use_batched_dnnl(bool ta, bool tb, int64_t m, int64_t k, int64_t n) {
  const GemmSplit mode = current_split();
  return batched_dnnl_flag().load(std::memory_order_relaxed) && tb && !ta && m <= 256 && k <= 256 && n <= 256 &&
         (mode == GemmSplit::kAuto || mode == GemmSplit::kRows || mode == GemmSplit::kColumns) && dnnl_gemm_avx512();
}

// The batch of products at layouts la, lb, lo (as stored; ta/tb say which
// are transposed) on oneDNN when use_batched_dnnl says so: the batch split
// over its first dim across the pool, every part one primitive call over
// the rest of the batch (parts of one size share one primitive). The
// epilogue runs on each part's products (a contiguous range of out) after
// it, on the same thread. False, having run nothing, where not taken or
// where oneDNN has no brgemm kernel for these layouts.
bool batched_dnnl(const float* a, const MatrixLayout& la, bool ta, const float* b, const MatrixLayout& lb, bool tb,
                  float* out, const MatrixLayout& lo, int64_t m, int64_t kk, int64_t n, const Epilogue* epilogue) {
  const size_t rank = lo.shape.size();
  if (!use_batched_dnnl(ta, tb, m, kk, n) || rank < 3 || m == 0 || n == 0 || kk == 0) return false;
  std::vector<int64_t> batch(lo.shape.begin(), lo.shape.end() - 2);
  for (int64_t d : batch) {
    if (d == 0) return false;
  }
  // Strides as the product reads each operand: a transpose swaps the last two.
  const auto read = [&](const MatrixLayout& l, bool t) {
    std::vector<int64_t> s = l.strides;
    if (t) std::swap(s[rank - 2], s[rank - 1]);
    return s;
  };
  const std::vector<int64_t> sa = read(la, ta), sb = read(lb, tb), so = lo.strides;
  // Rows overlapping their neighbours are the engine's bug: left to
  // gemm_ld, which refuses them by name.
  if (la.strides[rank - 2] < la.shape[rank - 1] || lb.strides[rank - 2] < lb.shape[rank - 1] ||
      lo.strides[rank - 2] < lo.shape[rank - 1]) {
    return false;
  }
  const int64_t outer = batch[0], inner = numel(Shape(batch.begin() + 1, batch.end()));
  // Each thread's share in up to 4 parts, as parallel_for splits, of whole
  // steps of the first batch dim (at least one per thread, else OpenBLAS's
  // calls split the batch better). Parts have at most two sizes, each one
  // primitive, made (or found) here before the region: where oneDNN would
  // not take one, nothing has run yet.
  const int threads = num_threads();
  if (outer < threads) return false;
  const int parts = static_cast<int>(std::min<int64_t>(outer, int64_t{4} * threads));
  for (int64_t size : {outer / parts, (outer + parts - 1) / parts}) {
    batch[0] = size;
    if (size > 0 && !dnnl_batched_gemm(nullptr, sa, nullptr, sb, nullptr, so, batch, m, kk, n)) return false;
  }
  auto body = [&](int ith, int nth) {
    const auto [q0, q1] = split(outer, ith, nth);
    if (q0 >= q1) return;
    std::vector<int64_t> part = batch;
    part[0] = q1 - q0;
    dnnl_batched_gemm(a + q0 * sa[0], sa, b + q0 * sb[0], sb, out + q0 * so[0], so, part, m, kk, n);
    if (epilogue) (*epilogue)(q0 * inner * m * n, q1 * inner * m * n);
  };
  parallel_region(parts, RegionBody(body));
  return true;
}

template <typename T>
void matmul_typed(const Buffer& ab, bool ta, const Buffer& bb, bool tb, Buffer& ob,
                  const Epilogue* epilogue = nullptr) {
  const Shape& as = ab.shape();
  const Shape& bs = bb.shape();
  const Shape& os = ob.shape();
  const size_t ar = as.size(), br = bs.size();
  const int64_t m = ta ? as[ar - 1] : as[ar - 2], kk = ta ? as[ar - 2] : as[ar - 1];
  const int64_t n = tb ? bs[br - 2] : bs[br - 1];
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2), o_batch(os.begin(), os.end() - 2);
  const T* a = ab.as<T>();
  const T* b = bb.as<T>();
  T* out = ob.as<T>();
  const int64_t batches = numel(o_batch);
  const bool legacy = gemm_split_mode().load(std::memory_order_relaxed) == static_cast<int>(GemmSplit::kLegacy);
  if (batches > 1 && numel(b_batch) == 1 && numel(a_batch) == batches && !ta && !legacy) {
    // A batch of rows times one matrix (a linear layer on a [B, T, C]
    // input): the batch's rows stacked are one [B*m, k] operand, so one
    // product of B*m rows instead of B products that each pack B again.
    parallel_gemm(a, false, b, tb, out, batches * m, kk, n, epilogue);
    return;
  }
  if (batches >= num_threads() && batches > 1) {
    // Many small products (attention heads): whole products per thread.
    if constexpr (std::is_same_v<T, float>) {
      if (a_batch == o_batch && b_batch == o_batch) {
        const auto layout = [](const Shape& s) { return MatrixLayout{s, contiguous_strides(s)}; };
        if (batched_dnnl(a, layout(as), ta, b, layout(bs), tb, out, layout(os), m, kk, n, epilogue)) return;
      }
    }
    set_blas_threads(1);
    std::vector<std::array<int64_t, 2>> offsets(static_cast<size_t>(batches));
    for_each_broadcast<2>(o_batch, {&a_batch, &b_batch},
                          [&](int64_t i, const std::array<int64_t, 2>& o) { offsets[static_cast<size_t>(i)] = o; });
    parallel_for(batches, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const auto& o = offsets[static_cast<size_t>(i)];
        gemm_ld(a + o[0] * m * kk, ta ? m : kk, ta, b + o[1] * kk * n, tb ? kk : n, tb, out + i * m * n, n, m, kk, n);
        if (epilogue) (*epilogue)(i * m * n, (i + 1) * m * n);
      }
    });
    return;
  }
  if (batches == 1) {
    parallel_gemm(a, ta, b, tb, out, m, kk, n, epilogue);
    return;
  }
  for_each_broadcast<2>(o_batch, {&a_batch, &b_batch}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    parallel_gemm(a + o[0] * m * kk, ta, b + o[1] * kk * n, tb, out + i * m * n, m, kk, n, nullptr);
  });
  if (epilogue) parallel_for(ob.numel(), 2048, [&](int64_t b0, int64_t b1) { (*epilogue)(b0, b1); });
}

// Each batch's product at its operands' strides (matmul_strided): whole
// products per thread, as the batched path above, each GEMM reading its
// rows through a leading dimension.
template <typename T>
void matmul_strided_typed(const T* a, const MatrixLayout& la, bool ta, const T* b, const MatrixLayout& lb, bool tb,
                          T* out, const MatrixLayout& lo, const Epilogue* epilogue) {
  const size_t rank = lo.shape.size();
  const int64_t m = lo.shape[rank - 2], n = lo.shape[rank - 1];
  const int64_t kk = ta ? la.shape[rank - 2] : la.shape[rank - 1];
  const int64_t batches = numel(Shape(lo.shape.begin(), lo.shape.end() - 2));
  const auto offset = [&](const MatrixLayout& l, int64_t batch) {
    int64_t off = 0;
    for (size_t d = rank - 2; d-- > 0;) {
      off += batch % l.shape[d] * l.strides[d];
      batch /= l.shape[d];
    }
    return off;
  };
  if constexpr (std::is_same_v<T, float>) {
    if (batched_dnnl(a, la, ta, b, lb, tb, out, lo, m, kk, n, epilogue)) return;
  }
  set_blas_threads(1);
  parallel_for(batches, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      gemm_ld(a + offset(la, i), la.strides[rank - 2], ta, b + offset(lb, i), lb.strides[rank - 2], tb,
              out + offset(lo, i), lo.strides[rank - 2], m, kk, n);
      if (epilogue) (*epilogue)(i * m * n, (i + 1) * m * n);
    }
  });
}

// [..., m, k] x [..., k, n]: the batch dims broadcast, each batch is one gemm.
template <typename T> void matmul_kernel(const KernelArgs& k) {
  matmul_typed<T>(*k.inputs[0], false, *k.inputs[1], false, k.out);
}

// Scaled dot-product attention, one pass per block of query rows of one
// (batch, head) while the block's scores stay in L1/L2: S = q k^T (one
// GEMM), scaled and masked in place, softmax rows into P, then P v (one
// GEMM) written at the output's strides. q, k, v and the output are
// [N, L, H, D] (heads interleaved, a projection's layout): a head's rows
// are read through a leading dimension H*D (3*H*D packed), so no permute
// is copied. P is kept in the output's tail ([O | P]: one op, one output);
// the backward reads it and runs the four gradient GEMMs per block: dP =
// dO v^T, dS = P (dP - rowsum(P dP)) * scale, dV += P^T dO, dQ = dS k,
// dK += dS^T q. (Recomputing P there cost a GEMM, a softmax and a
// transpose per block: ~25% more time, ARCHITECTURE.md.)
// Query rows per block: 16 x Lk scores. Smaller blocks stop nearer each
// block's last attended key (a causal mask: 62.5% of the products' work
// at L = 64 in blocks of 16, 75% in blocks of 32), at some GEMM efficiency.
constexpr int64_t kAttentionRows = 16;

// The mask's element (n, h, i, j) through broadcast strides of [N, H, Lq, Lk].
struct AttentionMask {
  const Buffer* buffer = nullptr;
  std::array<int64_t, 4> strides{};
  int64_t row(int64_t n, int64_t h, int64_t i) const { return n * strides[0] + h * strides[1] + i * strides[2]; }
};

AttentionMask attention_mask(const KernelArgs& k, size_t operand, const std::array<int64_t, 4>& scores) {
  AttentionMask m;
  if (k.inputs.size() <= operand) return m;
  m.buffer = k.inputs[operand];
  const Shape& s = m.buffer->shape();
  int64_t stride = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t d = 3 - i;
    const int64_t size = s[s.size() - 1 - i];
    m.strides[d] = size == 1 && scores[d] != 1 ? 0 : stride;
    stride *= size;
  }
  return m;
}

template <typename T> void softmax_block(T* out, const T* in, int64_t rows, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    softmax_rows()(out, in, rows, n, false);
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      const T* x = in + r * n;
      T* o = out + r * n;
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
      if (std::isinf(m)) m = 0;
      T sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += (o[j] = std::exp(x[j] - m));
      for (int64_t j = 0; j < n; ++j) o[j] /= sum;
    }
  }
}

// The operands' geometry. q, k, v are [N, L, H, D] each, or heads of one
// packed [N, L, 3, H, D] value (a self-attention's single in-projection:
// q, k, v at element offsets 0, H*D, 2*H*D of each row of 3*H*D); their
// rows are read (and their gradients written) at row strides ldq, ldk,
// ldv, and the output and its gradient at ldo = H*Dv.
struct AttentionGeometry {
  int64_t batch, lq, lk, heads, d, dv;
  int64_t ldq, ldk, ldv, ldo;
  int64_t k_offset, v_offset;  // of k and v from operand 0's first element (packed), else 0
  double scale;
  bool causal, packed;
  size_t next_operand;  // the first operand after q, k, v: the gradient (backward) or the mask
};

AttentionGeometry attention_geometry(const KernelArgs& k) {
  const Shape& q = k.inputs[0]->shape();
  AttentionGeometry g{};
  g.packed = q.size() == 5;
  g.batch = q[0];
  g.lq = q[1];
  if (g.packed) {
    g.heads = q[3];
    g.d = g.dv = q[4];
    g.lk = g.lq;
    g.ldq = g.ldk = g.ldv = 3 * g.heads * g.d;
    g.k_offset = g.heads * g.d;
    g.v_offset = 2 * g.heads * g.d;
    g.next_operand = 1;
  } else {
    g.heads = q[2];
    g.d = q[3];
    g.lk = k.inputs[1]->shape()[1];
    g.dv = k.inputs[2]->shape()[3];
    g.ldq = g.ldk = g.heads * g.d;
    g.ldv = g.heads * g.dv;
    g.next_operand = 3;
  }
  g.ldo = g.heads * g.dv;
  g.scale = k.attrs.get_double("scale");
  g.causal = k.attrs.get_int("causal") != 0;
  return g;
}

// The block's elementwise rows, compiled per instruction set (GCC's
// target_clones, never -march=native; the rest of this file is baseline
// x86-64): the scores scaled and masked, and dS from P and dP. Selects
// are bit masks, so every loop vectorises (a conditional store of -inf
// was a branch per element).
#define LAZYSCOPE_ATTENTION_ROWS(T, Bits)                                                                              \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void scale_keep_row(                                    \
      T* __restrict row, const uint8_t* __restrict keep, int64_t n, T scale) {                                         \
    const Bits ninf = std::bit_cast<Bits>(-std::numeric_limits<T>::infinity());                                        \
    for (int64_t j = 0; j < n; ++j) {                                                                                  \
      const Bits m = Bits(0) - static_cast<Bits>(keep[j] != 0);                                                        \
      row[j] = std::bit_cast<T>((std::bit_cast<Bits>(row[j] * scale) & m) | (ninf & ~m));                              \
    }                                                                                                                  \
  }                                                                                                                    \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void scale_add_row(                                     \
      T* __restrict row, const T* __restrict add, int64_t step, int64_t n, T scale) {                                  \
    if (step == 1) {                                                                                                   \
      for (int64_t j = 0; j < n; ++j) row[j] = row[j] * scale + add[j];                                                \
    } else {                                                                                                           \
      for (int64_t j = 0; j < n; ++j) row[j] = row[j] * scale + add[j * step];                                         \
    }                                                                                                                  \
  }                                                                                                                    \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void scale_row(T* __restrict row, int64_t n, T scale) { \
    for (int64_t j = 0; j < n; ++j) row[j] *= scale;                                                                   \
  }                                                                                                                    \
  /* dr = P (dP - sum_j P dP) * scale; the sum in 8 double lanes. */                                                   \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void softmax_grad_row(                                  \
      T* __restrict dr, const T* __restrict pr, int64_t n, T scale) {                                                  \
    double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                                        \
    int64_t j = 0;                                                                                                     \
    for (; j + 8 <= n; j += 8) {                                                                                       \
      for (int l = 0; l < 8; ++l) lanes[l] += static_cast<double>(pr[j + l]) * static_cast<double>(dr[j + l]);         \
    }                                                                                                                  \
    double dot = 0;                                                                                                    \
    for (double l : lanes) dot += l;                                                                                   \
    for (; j < n; ++j) dot += static_cast<double>(pr[j]) * static_cast<double>(dr[j]);                                 \
    const T rowsum = static_cast<T>(dot);                                                                              \
    for (j = 0; j < n; ++j) dr[j] = pr[j] * (dr[j] - rowsum) * scale;                                                  \
  }
LAZYSCOPE_ATTENTION_ROWS(float, uint32_t)
LAZYSCOPE_ATTENTION_ROWS(double, uint64_t)
#undef LAZYSCOPE_ATTENTION_ROWS

// out [cols, rows] = in [rows, cols]^T (in's row stride ld), in 8x8 tiles.
// OpenBLAS (0.3.21, SkylakeX kernels) sends a row-major product with B
// transposed (q k^T, dO v^T) of more than 1200 outputs to its packing path,
// ~2x its small-matrix kernel's time at 64^3: B transposed first is a small
// part of that. (A transposed, P^T dO and dS^T q, it keeps small.)
template <typename T>
void transpose_block(T* __restrict out, const T* __restrict in, int64_t rows, int64_t cols, int64_t ld) {
  constexpr int64_t kTile = 8;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) out[c * rows + r] = in[r * ld + c];
      }
    }
  }
}

// Asks for `rows` rows of `cols` elements at row stride ld to be brought
// into the cache: the next block's operands while this block computes.
// Each (batch, head) block's rows are 1/H of every row of the [N, L, H, D]
// operands, which in a step come back from memory (written kernels
// before), and strided, so the hardware prefetchers do not run ahead
// (gemm_shapes "attention op", operands evicted: 5-10% less time).
template <typename T> void prefetch_rows(const T* base, int64_t rows, int64_t cols, int64_t ld) {
  constexpr int64_t kLine = 64 / sizeof(T);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; c += kLine) __builtin_prefetch(base + r * ld + c, 0, 2);
  }
}

// How many leading keys rows [i0, i0 + rows) of (n, h) attend: past the
// last key any of them keeps, every score is masked out (a causal mask's
// upper triangle), so the block's products and softmax stop there. Where
// a row keeps no key at all, the whole width (the row's NaNs, as the
// composed softmax gives them).
int64_t attended_keys(const AttentionGeometry& g, const AttentionMask& mask, int64_t n, int64_t h, int64_t i0,
                      int64_t rows) {
  int64_t width = g.causal ? std::min(g.lk, i0 + rows) : g.lk;
  if (mask.buffer && mask.buffer->dtype() == DType::kBool && mask.strides[3] == 1) {
    int64_t last = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* keep = mask.buffer->as<uint8_t>() + mask.row(n, h, i0 + r);
      int64_t j = width;
      while (j > 0 && keep[j - 1] == 0) --j;
      if (j == 0) return g.lk;
      last = std::max(last, j);
    }
    width = last;
  }
  return width;
}

// Rows [i0, i0 + rows) of (n, h)'s scores over the first `width` keys into
// p (row stride width): q k^T, scaled, masked (-inf where masked out),
// softmax; s is scratch of the same size, left holding the masked scores;
// kt holds (n, h)'s k^T [D, Lk] (transpose_block). The keys past `width`
// are masked out for every row (attended_keys): their probabilities are
// exactly 0, and the sums over the rest are the same.
template <typename T>
void attention_probs(const AttentionGeometry& g, const AttentionMask& mask, const T* q, const T* kt, int64_t n,
                     int64_t h, int64_t i0, int64_t rows, int64_t width, T* s, T* p) {
  gemm_ld(q + (n * g.lq + i0) * g.ldq + h * g.d, g.ldq, false, kt, g.lk, false, s, width, rows, g.d, width);
  const T scale = static_cast<T>(g.scale), ninf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    T* row = s + r * width;
    const int64_t i = i0 + r;
    if (!mask.buffer) {
      scale_row(row, width, scale);
    } else if (mask.buffer->dtype() == DType::kBool) {
      const uint8_t* keep = mask.buffer->as<uint8_t>() + mask.row(n, h, i);
      if (mask.strides[3] == 1) {
        scale_keep_row(row, keep, width, scale);
      } else {
        for (int64_t j = 0; j < width; ++j) row[j] = keep[0] != 0 ? row[j] * scale : ninf;
      }
    } else {
      scale_add_row(row, mask.buffer->as<T>() + mask.row(n, h, i), mask.strides[3], width, scale);
    }
    if (g.causal) {
      for (int64_t j = i + 1; j < width; ++j) row[j] = ninf;
    }
  }
  softmax_block(p, s, rows, width);
}

// Per-thread scratch, grown once: a kernel run allocates nothing after the first.
template <typename T> T* attention_scratch(int64_t elements) {
  thread_local std::vector<T> scratch;
  if (static_cast<int64_t>(scratch.size()) < elements) scratch.resize(static_cast<size_t>(elements));
  return scratch.data();
}

template <typename T> void attention_kernel(const KernelArgs& k) {
  const AttentionGeometry g = attention_geometry(k);
  const AttentionMask mask = attention_mask(k, g.next_operand, {g.batch, g.heads, g.lq, g.lk});
  const T* q = k.inputs[0]->as<T>();
  const T* kp = g.packed ? q + g.k_offset : k.inputs[1]->as<T>();
  const T* v = g.packed ? q + g.v_offset : k.inputs[2]->as<T>();
  T* out = k.out.as<T>();
  T* saved = out + g.batch * g.lq * g.ldo;  // P [N, H, Lq, Lk], for the gradient
  const int64_t blocks = (g.lq + kAttentionRows - 1) / kAttentionRows;
  set_blas_threads(1);
  parallel_for(g.batch * g.heads * blocks, 1, [&](int64_t begin, int64_t end) {
    T* s = attention_scratch<T>(2 * kAttentionRows * g.lk + g.lk * g.d);
    T *p = s + kAttentionRows * g.lk, *kt = p + kAttentionRows * g.lk;
    int64_t kt_of = -1;  // the (n, h) whose k^T kt holds
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / (g.heads * blocks), h = t / blocks % g.heads, i0 = t % blocks * kAttentionRows;
      const int64_t rows = std::min(kAttentionRows, g.lq - i0);
      if (kt_of != t / blocks) {
        transpose_block(kt, kp + n * g.lk * g.ldk + h * g.d, g.lk, g.d, g.ldk);
        kt_of = t / blocks;
      }
      if (t + 1 < end) {  // the next block's operands
        const int64_t n1 = (t + 1) / (g.heads * blocks), h1 = (t + 1) / blocks % g.heads;
        const int64_t i1 = (t + 1) % blocks * kAttentionRows;
        prefetch_rows(q + (n1 * g.lq + i1) * g.ldq + h1 * g.d, std::min(kAttentionRows, g.lq - i1), g.d, g.ldq);
        if ((t + 1) / blocks != t / blocks) {
          prefetch_rows(kp + n1 * g.lk * g.ldk + h1 * g.d, g.lk, g.d, g.ldk);
          prefetch_rows(v + n1 * g.lk * g.ldv + h1 * g.dv, g.lk, g.dv, g.ldv);
        }
      }
      const int64_t width = attended_keys(g, mask, n, h, i0, rows);
      attention_probs(g, mask, q, kt, n, h, i0, rows, width, s, p);
      gemm_ld(p, width, false, v + n * g.lk * g.ldv + h * g.dv, g.ldv, false, out + (n * g.lq + i0) * g.ldo + h * g.dv,
              g.ldo, rows, width, g.dv);
      T* keep = saved + ((n * g.heads + h) * g.lq + i0) * g.lk;
      for (int64_t r = 0; r < rows; ++r) {
        std::copy(p + r * width, p + (r + 1) * width, keep + r * g.lk);
        std::fill(keep + r * g.lk + width, keep + (r + 1) * g.lk, T(0));
      }
    }
  });
}

// out [m, n] (row stride ldc) += op(a) b, a stored [k, m] when ta: the
// gradients of k and v summed over the blocks of query rows (BLAS's beta
// of 1; OpenBLAS's small-matrix kernels take it at these sizes).
void gemm_add(const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, float* out, int64_t ldc, int64_t m,
              int64_t kk, int64_t n) {
  if (m == 0 || n == 0 || kk == 0) return;
  const auto i32 = [](int64_t v) { return static_cast<int>(v); };
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, CblasNoTrans, i32(m), i32(n), i32(kk), 1.0f, a, i32(lda),
              b, i32(ldb), 1.0f, out, i32(ldc));
}
void gemm_add(const double* a, int64_t lda, bool ta, const double* b, int64_t ldb, double* out, int64_t ldc, int64_t m,
              int64_t kk, int64_t n) {
  if (m == 0 || n == 0 || kk == 0) return;
  const auto i32 = [](int64_t v) { return static_cast<int>(v); };
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, CblasNoTrans, i32(m), i32(n), i32(kk), 1.0, a, i32(lda), b,
              i32(ldb), 1.0, out, i32(ldc));
}

// The keys rows [0, rows) of a block of P (row stride ld) give weight to:
// past the last non-zero column every probability is 0 (masked out, or
// under flow), so dS and the block's share of dV and dK are 0 there.
template <typename T> int64_t weighted_keys(const T* p, int64_t rows, int64_t lk, int64_t ld) {
  int64_t width = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t j = lk;
    while (j > width && p[r * ld + j - 1] == T(0)) --j;
    width = std::max(width, j);
  }
  return width;
}

template <typename T> void attention_backward_kernel(const KernelArgs& k) {
  const AttentionGeometry g = attention_geometry(k);
  const T* q = k.inputs[0]->as<T>();
  const T* kp = g.packed ? q + g.k_offset : k.inputs[1]->as<T>();
  const T* v = g.packed ? q + g.v_offset : k.inputs[2]->as<T>();
  // O's gradient and the forward's P (the tail of its output).
  const T* dout = k.inputs[g.next_operand]->as<T>();
  const T* saved = k.inputs[g.next_operand + 1]->as<T>() + g.batch * g.lq * g.ldo;
  // The gradients in their operands' layouts: packed as q, k, v are, else
  // one after the other.
  T* dq = k.out.as<T>();
  T* dk = g.packed ? dq + g.k_offset : dq + g.batch * g.lq * g.ldq;
  T* dv = g.packed ? dq + g.v_offset : dk + g.batch * g.lk * g.ldk;
  const T scale = static_cast<T>(g.scale);
  set_blas_threads(1);
  // One (n, h) per task: dk and dv sum over every block of query rows.
  parallel_for(g.batch * g.heads, 1, [&](int64_t begin, int64_t end) {
    T* dp = attention_scratch<T>(kAttentionRows * g.lk + g.lk * g.dv);
    T* vt = dp + kAttentionRows * g.lk;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / g.heads, h = t % g.heads;
      const T* kh = kp + n * g.lk * g.ldk + h * g.d;
      const T* vh = v + n * g.lk * g.ldv + h * g.dv;
      const T* ph = saved + t * g.lq * g.lk;
      transpose_block(vt, vh, g.lk, g.dv, g.ldv);
      T* dkh = dk + n * g.lk * g.ldk + h * g.d;
      T* dvh = dv + n * g.lk * g.ldv + h * g.dv;
      for (int64_t j = 0; j < g.lk; ++j) {
        std::fill(dkh + j * g.ldk, dkh + j * g.ldk + g.d, T(0));
        std::fill(dvh + j * g.ldv, dvh + j * g.ldv + g.dv, T(0));
      }
      if (t + 1 < end) {  // the next (n, h)'s operands
        const int64_t n1 = (t + 1) / g.heads, h1 = (t + 1) % g.heads;
        prefetch_rows(q + n1 * g.lq * g.ldq + h1 * g.d, g.lq, g.d, g.ldq);
        prefetch_rows(kp + n1 * g.lk * g.ldk + h1 * g.d, g.lk, g.d, g.ldk);
        prefetch_rows(v + n1 * g.lk * g.ldv + h1 * g.dv, g.lk, g.dv, g.ldv);
        prefetch_rows(dout + n1 * g.lq * g.ldo + h1 * g.dv, g.lq, g.dv, g.ldo);
        prefetch_rows(ph + g.lq * g.lk, g.lq, g.lk, g.lk);
      }
      for (int64_t i0 = 0; i0 < g.lq; i0 += kAttentionRows) {
        const int64_t rows = std::min(kAttentionRows, g.lq - i0);
        const T* qb = q + (n * g.lq + i0) * g.ldq + h * g.d;
        const T* dob = dout + (n * g.lq + i0) * g.ldo + h * g.dv;
        const T* p = ph + i0 * g.lk;
        const int64_t width = weighted_keys(p, rows, g.lk, g.lk);
        // dV[:width] += P^T dO.
        gemm_add(p, g.lk, true, dob, g.ldo, dvh, g.ldv, width, rows, g.dv);
        // dP = dO v^T, then dS in place: P (dP - rowsum(P dP)) * scale.
        gemm_ld(dob, g.ldo, false, vt, g.lk, false, dp, width, rows, g.dv, width);
        for (int64_t r = 0; r < rows; ++r) softmax_grad_row(dp + r * width, p + r * g.lk, width, scale);
        // dQ = dS k (its own rows), dK[:width] += dS^T q.
        gemm_ld(dp, width, false, kh, g.ldk, false, dq + (n * g.lq + i0) * g.ldq + h * g.d, g.ldq, rows, width, g.d);
        gemm_add(dp, width, true, qb, g.ldq, dkh, g.ldk, width, rows, g.d);
      }
    }
  });
}

}  // namespace

void add_layout_kernels(Table& t) {
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kReshape,
                                                                       LAZYSCOPE_KERNEL(reshape_kernel));
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kPermute,
                                                                       LAZYSCOPE_KERNEL(permute_kernel));
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kExpand,
                                                                       LAZYSCOPE_KERNEL(expand_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kMatmul, LAZYSCOPE_KERNEL(matmul_kernel));
  rows<float, double>(t, OpKind::kAttention, LAZYSCOPE_KERNEL(attention_kernel));
  rows<float, double>(t, OpKind::kAttentionBackward, LAZYSCOPE_KERNEL(attention_backward_kernel));
  for (DType d : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat32, DType::kFloat64}) {
    t.emplace(Key{OpKind::kCat, d}, cat_kernel);
  }
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kSlice,
                                                                       LAZYSCOPE_KERNEL(slice_kernel));
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kSliceBackward,
                                                       LAZYSCOPE_KERNEL(slice_backward_kernel));
}

}  // namespace lazyscope::cpu

namespace lazyscope::cpu {

void matmul_into(const Buffer& a, bool transpose_a, const Buffer& b, bool transpose_b, Buffer& out,
                 const Epilogue* epilogue) {
  if (epilogue && out.dtype() != DType::kFloat32 && out.dtype() != DType::kFloat64) {
    throw EngineError("matmul: an epilogue needs a floating-point product");
  }
  switch (out.dtype()) {
    case DType::kFloat32: matmul_typed<float>(a, transpose_a, b, transpose_b, out, epilogue); return;
    case DType::kFloat64: matmul_typed<double>(a, transpose_a, b, transpose_b, out, epilogue); return;
    case DType::kUInt8: matmul_typed<uint8_t>(a, transpose_a, b, transpose_b, out); return;
    case DType::kInt32: matmul_typed<int32_t>(a, transpose_a, b, transpose_b, out); return;
    case DType::kInt64: matmul_typed<int64_t>(a, transpose_a, b, transpose_b, out); return;
    default: throw EngineError("matmul: no kernel for " + std::string(dtype_name(out.dtype())));
  }
}

void matmul_strided(const Buffer& a, const MatrixLayout& la, bool transpose_a, const Buffer& b, const MatrixLayout& lb,
                    bool transpose_b, Buffer& out, const MatrixLayout& lo, const Epilogue* epilogue) {
  const size_t rank = lo.shape.size();
  const auto valid = [&](const MatrixLayout& l, const Buffer& buffer) {
    if (l.shape.size() != rank || l.strides.size() != rank || l.strides.back() != 1) return false;
    int64_t last = 0;  // the furthest element addressed must lie in the buffer
    for (size_t d = 0; d < rank; ++d) {
      if (l.shape[d] == 0) return true;
      last += (l.shape[d] - 1) * l.strides[d];
    }
    return last < buffer.numel();
  };
  const int64_t m = lo.shape[rank - 2], n = lo.shape[rank - 1];
  const int64_t kk = transpose_a ? la.shape[rank - 2] : la.shape[rank - 1];
  bool ok = rank >= 3 && valid(la, a) && valid(lb, b) && valid(lo, out) && a.dtype() == out.dtype() &&
            b.dtype() == out.dtype() && (out.dtype() == DType::kFloat32 || out.dtype() == DType::kFloat64);
  ok = ok && (transpose_a ? la.shape[rank - 1] : la.shape[rank - 2]) == m &&
       (transpose_b ? lb.shape[rank - 1] : lb.shape[rank - 2]) == kk &&
       (transpose_b ? lb.shape[rank - 2] : lb.shape[rank - 1]) == n;
  for (size_t d = 0; ok && d + 2 < rank; ++d) ok = la.shape[d] == lo.shape[d] && lb.shape[d] == lo.shape[d];
  // The epilogue walks the product's elements in order: a contiguous out only.
  ok = ok && (!epilogue || lo.strides == contiguous_strides(lo.shape));
  if (!ok) {
    throw EngineError("matmul: strided operands " + shape_str(la.shape) + " and " + shape_str(lb.shape) +
                      " do not make " + shape_str(lo.shape) + " in buffers of " + std::to_string(a.numel()) + ", " +
                      std::to_string(b.numel()) + " and " + std::to_string(out.numel()) + " elements");
  }
  if (out.dtype() == DType::kFloat32) {
    matmul_strided_typed(a.as<float>(), la, transpose_a, b.as<float>(), lb, transpose_b, out.as<float>(), lo, epilogue);
  } else {
    matmul_strided_typed(a.as<double>(), la, transpose_a, b.as<double>(), lb, transpose_b, out.as<double>(), lo,
                         epilogue);
  }
}

int set_gemm_parts_per_thread(int parts) { return gemm_parts().exchange(std::clamp(parts, 1, 16)); }

bool set_gemm_batched_dnnl(bool on) { return batched_dnnl_flag().exchange(on); }

GemmSplit set_gemm_split(GemmSplit mode) {
  return static_cast<GemmSplit>(gemm_split_mode().exchange(static_cast<int>(mode)));
}

GemmSplit gemm_split_from_name(const std::string& name) {
  for (int i = 0; i < static_cast<int>(std::size(kSplitNames)); ++i) {
    if (name == kSplitNames[i]) return static_cast<GemmSplit>(i);
  }
  throw EngineError("gemm split '" + name + "': expected " + kSplitList);
}

const char* gemm_split_name(GemmSplit mode) { return kSplitNames[static_cast<int>(mode)]; }

void matmul_stacked_rows(const Buffer& a, const Buffer& b, Buffer& out, const Epilogue* epilogue) {
  const int64_t k = a.shape().empty() ? 1 : a.shape().back(), n = b.shape().empty() ? 1 : b.shape().back();
  const int64_t rows = k ? a.numel() / k : 0;
  if ((n ? b.numel() / n : 0) != rows || out.numel() != k * n || a.dtype() != out.dtype() || b.dtype() != out.dtype()) {
    throw EngineError("matmul: stacked rows of " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                      " do not make " + shape_str(out.shape()));
  }
  switch (out.dtype()) {
    case DType::kFloat32:
      parallel_gemm(a.as<float>(), true, b.as<float>(), false, out.as<float>(), k, rows, n, epilogue);
      return;
    case DType::kFloat64:
      if (epilogue) throw EngineError("matmul: a stacked-rows epilogue is float32 only");
      parallel_gemm(a.as<double>(), true, b.as<double>(), false, out.as<double>(), k, rows, n, nullptr);
      return;
    default: throw EngineError("matmul: no stacked-rows kernel for " + std::string(dtype_name(out.dtype())));
  }
}

}  // namespace lazyscope::cpu
