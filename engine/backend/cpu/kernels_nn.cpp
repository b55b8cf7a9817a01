// Kernels of the neural-network ops that read integer data: one_hot,
// nll_loss and its gradient. Out-of-range class values are an IndexError naming the op and
// the value; on a lazy device they surface at the sync that runs the graph.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/thread_scratch.h"
#include "core/error.h"

namespace lazyscope::cpu {
namespace {

void one_hot_kernel(const KernelArgs& k) {
  const int64_t classes = k.attrs.get_int("num_classes");
  int64_t* out = k.out.as<int64_t>();
  std::fill(out, out + k.out.numel(), int64_t{0});
  const Buffer& in = *k.inputs[0];
  const int64_t n = in.numel();
  dispatch(in.dtype(), [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* src = in.as<T>();
      for (int64_t i = 0; i < n; ++i) {
        const auto v = static_cast<int64_t>(src[i]);
        if (v < 0 || v >= classes) {
          throw IndexError("one_hot: class value " + std::to_string(v) + " is out of range for num_classes " +
                           std::to_string(classes) + " (element " + std::to_string(i) + ")");
        }
        out[i * classes + v] = 1;
      }
    } else {
      throw EngineError("one_hot: expected an integer tensor");
    }
  });
}

// reduction: 0 none, 1 mean (over the targets not ignored), 2 sum.
template <typename T> void nll_loss_kernel(const KernelArgs& k) {
  const Buffer& x = *k.inputs[0];
  const int64_t* target = k.inputs[1]->as<int64_t>();
  const int64_t n = x.shape()[0], classes = x.shape()[1];
  const int64_t reduction = k.attrs.get_int("reduction");
  const int64_t ignore = k.attrs.get_int("ignore_index");
  const T* src = x.as<T>();
  T* out = k.out.as<T>();
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = target[i];
    double loss = 0;
    if (t != ignore) {
      if (t < 0 || t >= classes) {
        throw IndexError("nll_loss: target " + std::to_string(t) + " is out of bounds for " + std::to_string(classes) +
                         " classes (sample " + std::to_string(i) + ")");
      }
      loss = -static_cast<double>(src[i * classes + t]);
      ++count;
    }
    if (reduction == 0) out[i] = static_cast<T>(loss);
    total += loss;
  }
  if (reduction == 1) out[0] = static_cast<T>(total / static_cast<double>(count));  // none counted: NaN, as PyTorch
  if (reduction == 2) out[0] = static_cast<T>(total);
}

// nll_loss's gradient: out[i, c] = -(p * scale_i), p = 1 where c is sample
// i's target and it is not ignored, else 0; scale_i = grad[i] (none), grad
// (sum) or grad / the count of targets kept (mean), all in T. The same
// operations, in the same dtype, as the composite it replaces (ne, where,
// one_hot, cast, mul by the mask, div by its sum, mul, neg): the same bits,
// -0 and NaN (0 * inf when every target is ignored) included.
template <typename T> void nll_loss_backward_kernel(const KernelArgs& k) {
  const T* grad = k.inputs[0]->as<T>();
  const int64_t* target = k.inputs[1]->as<int64_t>();
  const int64_t n = k.inputs[1]->numel(), classes = k.attrs.get_int("classes");
  const int64_t reduction = k.attrs.get_int("reduction");
  const int64_t ignore = k.attrs.get_int("ignore_index");
  T count = 0;  // summed in T, as the composite's sum of the float mask
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = target[i];
    if (t == ignore) continue;
    if (t < 0 || t >= classes) {
      throw IndexError("nll_loss_backward: target " + std::to_string(t) + " is out of bounds for " +
                       std::to_string(classes) + " classes (sample " + std::to_string(i) + ")");
    }
    count = static_cast<T>(count + T(1));
  }
  T* out = k.out.as<T>();
  const T shared = reduction == 1 ? static_cast<T>(grad[0] / count) : grad[0];
  for (int64_t i = 0; i < n; ++i) {
    const T scale = reduction == 0 ? grad[i] : shared;
    const T zero = static_cast<T>(-(T(0) * scale)), one = static_cast<T>(-(T(1) * scale));
    T* row = out + i * classes;
    std::fill(row, row + classes, zero);
    if (target[i] != ignore) row[target[i]] = one;
  }
}

// layer_norm over rows of n elements (the trailing `dims` dims), rows on
// the pool: each row's mean and biased variance (two passes over the row in
// L1), then (x - mean) * rstd, times weight, plus bias, in T. The backward
// recomputes the statistics rather than keeping them from the forward: no
// saved values beyond x. The row loops of one instruction set: cloned per
// set (as the reductions'), for float and double.
//
// A row's sums are taken in T over blocks of 256 elements (64 lanes adding
// 4 values each: T's rounding stays near an ulp of each block's sum), the
// blocks' sums added in double: a conversion to double per element (then
// 8 lanes of double: their adds' latency) bound the statistics, 3x the
// time of the rest of the forward.
constexpr int kLnLanes = 64;
constexpr int64_t kLnBlock = 256;
// The lanes' total: 8 columns of 8 (one vector add each), then a tree of
// the 8 (64 sequential adds would each wait on the last; a halving loop was
// left a loop, most of a 256-float row's time).
[[gnu::always_inline]] inline double lanes_total(const double* l) {
  double t[8];
  for (int k = 0; k < 8; ++k) {
    t[k] = l[k];
    for (int r = 1; r < kLnLanes / 8; ++r) t[k] += l[r * 8 + k];
  }
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}
// totals[s] = the sum over j in [0, n) of what add(j, part[s][k]) adds
// (f(j, part, k) adds each of the kSums terms of element j to part[s][k]).
template <typename T, int kSums, typename F>
[[gnu::always_inline]] inline void blocked_sums(int64_t n, F&& f, double* totals) {
  double acc[kSums][kLnLanes] = {};
  const int64_t groups = n / kLnLanes;
  for (int64_t g0 = 0; g0 < groups; g0 += kLnBlock / kLnLanes) {
    T part[kSums][kLnLanes] = {};
    const int64_t g1 = std::min(groups, g0 + kLnBlock / kLnLanes);
    for (int64_t g = g0; g < g1; ++g)
      for (int k = 0; k < kLnLanes; ++k) f(g * kLnLanes + k, part, k);
    for (int s = 0; s < kSums; ++s)
      for (int k = 0; k < kLnLanes; ++k) acc[s][k] += static_cast<double>(part[s][k]);
  }
  for (int s = 0; s < kSums; ++s) totals[s] = lanes_total(acc[s]);
  for (int64_t j = groups * kLnLanes; j < n; ++j) {
    T one[kSums][kLnLanes];
    for (int s = 0; s < kSums; ++s) one[s][0] = T(0);
    f(j, one, 0);
    for (int s = 0; s < kSums; ++s) totals[s] += static_cast<double>(one[s][0]);
  }
}
#define LAZYSCOPE_LAYER_NORM_ROWS(T)                                                                                 \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void layer_norm_stats(                                \
      const T* __restrict x, int64_t n, double eps, double* mean_out, double* rstd_out) {                            \
    double sum = 0, sq = 0;                                                                                          \
    blocked_sums<T, 1>(                                                                                              \
        n, [&](int64_t j, T(&part)[1][kLnLanes], int k) { part[0][k] += x[j]; }, &sum);                              \
    const double mean = sum / static_cast<double>(n);                                                                \
    const T m = static_cast<T>(mean);                                                                                \
    blocked_sums<T, 1>(                                                                                              \
        n,                                                                                                           \
        [&](int64_t j, T(&part)[1][kLnLanes], int k) {                                                               \
          const T d = static_cast<T>(x[j] - m);                                                                      \
          part[0][k] += static_cast<T>(d * d);                                                                       \
        },                                                                                                           \
        &sq);                                                                                                        \
    *mean_out = mean;                                                                                                \
    *rstd_out = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);                                                  \
  }                                                                                                                  \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void layer_norm_row(                                  \
      T* __restrict o, const T* __restrict x, const T* __restrict w, const T* __restrict b, int64_t n, T mean,       \
      T rstd) {                                                                                                      \
    for (int64_t j = 0; j < n; ++j) o[j] = static_cast<T>((x[j] - mean) * rstd);                                     \
    if (w)                                                                                                           \
      for (int64_t j = 0; j < n; ++j) o[j] = static_cast<T>(o[j] * w[j]);                                            \
    if (b)                                                                                                           \
      for (int64_t j = 0; j < n; ++j) o[j] = static_cast<T>(o[j] + b[j]);                                            \
  }                                                                                                                  \
  /* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w: the sums blocked as the statistics'. */          \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void layer_norm_backward_row(                         \
      T* __restrict dx, const T* __restrict dy, const T* __restrict x, const T* __restrict w,                        \
      const T* __restrict residual, int64_t n, T mean, T rstd) {                                                     \
    double sums[2];                                                                                                  \
    blocked_sums<T, 2>(                                                                                              \
        n,                                                                                                           \
        [&](int64_t j, T(&part)[2][kLnLanes], int k) {                                                               \
          const T g = w ? static_cast<T>(dy[j] * w[j]) : dy[j];                                                      \
          const T xhat = static_cast<T>((x[j] - mean) * rstd);                                                       \
          part[0][k] += g;                                                                                           \
          part[1][k] += static_cast<T>(g * xhat);                                                                    \
        },                                                                                                           \
        sums);                                                                                                       \
    const double sum_g = sums[0], sum_gx = sums[1];                                                                  \
    const T a = static_cast<T>(sum_g / static_cast<double>(n)), c = static_cast<T>(sum_gx / static_cast<double>(n)); \
    for (int64_t j = 0; j < n; ++j) {                                                                                \
      const T g = w ? static_cast<T>(dy[j] * w[j]) : dy[j];                                                          \
      const T xhat = static_cast<T>((x[j] - mean) * rstd);                                                           \
      const T v = static_cast<T>(rstd * (g - a - xhat * c));                                                         \
      dx[j] = residual ? static_cast<T>(v + residual[j]) : v;                                                        \
    }                                                                                                                \
  }                                                                                                                  \
  /* Adds one row's grad * xhat and grad to the column sums (double). */                                             \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void layer_norm_param_row(                            \
      double* __restrict sum_gx, double* __restrict sum_g, const T* __restrict dy, const T* __restrict x, int64_t n, \
      T mean, T rstd) {                                                                                              \
    for (int64_t j = 0; j < n; ++j) {                                                                                \
      const T xhat = static_cast<T>((x[j] - mean) * rstd);                                                           \
      sum_gx[j] += static_cast<double>(static_cast<T>(dy[j] * xhat));                                                \
      sum_g[j] += static_cast<double>(dy[j]);                                                                        \
    }                                                                                                                \
  }
LAZYSCOPE_LAYER_NORM_ROWS(float)
LAZYSCOPE_LAYER_NORM_ROWS(double)
#undef LAZYSCOPE_LAYER_NORM_ROWS

// The rows (elements per row, row count) a layer_norm's `dims` attr makes of x.
std::pair<int64_t, int64_t> layer_norm_rows(const Shape& x, const Attrs& attrs) {
  int64_t n = 1;
  for (size_t d = x.size() - static_cast<size_t>(attrs.get_int("dims")); d < x.size(); ++d) n *= x[d];
  return {n, n ? numel(x) / n : 0};
}

template <typename T> void layer_norm_kernel(const KernelArgs& k) {
  const auto [n, rows] = layer_norm_rows(k.inputs[0]->shape(), k.attrs);
  const bool has_w = k.attrs.get_bool("weight"), has_b = k.attrs.get_bool("bias");
  const T* x = k.inputs[0]->as<T>();
  const T* w = has_w ? k.inputs[1]->as<T>() : nullptr;
  const T* b = has_b ? k.inputs[has_w ? 2 : 1]->as<T>() : nullptr;
  const double eps = k.attrs.get_double("eps");
  T* out = k.out.as<T>();
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, n)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      double mean = 0, rstd = 0;
      layer_norm_stats(x + r * n, n, eps, &mean, &rstd);
      layer_norm_row(out + r * n, x + r * n, w, b, n, static_cast<T>(mean), static_cast<T>(rstd));
    }
  });
}

template <typename T> void layer_norm_backward_kernel(const KernelArgs& k) {
  const auto [n, rows] = layer_norm_rows(k.inputs[1]->shape(), k.attrs);
  const T* dy = k.inputs[0]->as<T>();
  const T* x = k.inputs[1]->as<T>();
  const bool has_w = k.attrs.get_bool("weight");
  const T* w = has_w ? k.inputs[2]->as<T>() : nullptr;
  // A gradient it is added to (fold_residual_into_layer_norm_backward): a
  // last operand beyond (grad, x [, weight]).
  const T* residual = k.inputs.size() > (has_w ? 3u : 2u) ? k.inputs.back()->as<T>() : nullptr;
  const double eps = k.attrs.get_double("eps");
  T* dx = k.out.as<T>();
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, n)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      double mean = 0, rstd = 0;
      layer_norm_stats(x + r * n, n, eps, &mean, &rstd);
      layer_norm_backward_row(dx + r * n, dy + r * n, x + r * n, w, residual ? residual + r * n : nullptr, n,
                              static_cast<T>(mean), static_cast<T>(rstd));
    }
  });
}

// The weight's and bias's gradients: column sums over rows of grad * xhat
// and grad, in double. Rows in fixed chunks (~16K elements), each chunk's
// sums in per-thread scratch, then added up in chunk order: the same bits
// on any number of threads.
template <typename T> void layer_norm_param_grads_kernel(const KernelArgs& k) {
  const auto [n, rows] = layer_norm_rows(k.inputs[1]->shape(), k.attrs);
  const T* dy = k.inputs[0]->as<T>();
  const T* x = k.inputs[1]->as<T>();
  const double eps = k.attrs.get_double("eps");
  T* out = k.out.as<T>();
  const int64_t per_chunk = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n));
  const int64_t chunks = std::max<int64_t>(1, (rows + per_chunk - 1) / per_chunk);
  double* parts = thread_scratch<double>(kScratchLayerNormParts, static_cast<size_t>(chunks * 2 * n));
  std::fill(parts, parts + chunks * 2 * n, 0.0);
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double* sum_gx = parts + c * 2 * n;
      for (int64_t r = c * per_chunk; r < std::min(rows, (c + 1) * per_chunk); ++r) {
        double mean = 0, rstd = 0;
        layer_norm_stats(x + r * n, n, eps, &mean, &rstd);
        layer_norm_param_row(sum_gx, sum_gx + n, dy + r * n, x + r * n, n, static_cast<T>(mean), static_cast<T>(rstd));
      }
    }
  });
  for (int64_t c = 1; c < chunks; ++c) {
    for (int64_t j = 0; j < 2 * n; ++j) parts[j] += parts[c * 2 * n + j];
  }
  for (int64_t j = 0; j < 2 * n; ++j) out[j] = static_cast<T>(parts[j]);
}

// Reads index[k] for a dim of `size`; an IndexError names the op and value.
int64_t checked_index(const char* op, const int64_t* index, int64_t k, int64_t size, size_t dim) {
  const int64_t v = index[k];
  if (v < 0 || v >= size) {
    throw IndexError(std::string(op) + ": index " + std::to_string(v) + " is out of range for dimension " +
                     std::to_string(dim) + " of size " + std::to_string(size));
  }
  return v;
}

struct IndexPlan {
  size_t dim;
  int64_t outer, inner, size, count;  // size: the indexed dim of the full tensor; count: of the index
};

IndexPlan index_plan(const Shape& full, const Attrs& attrs, int64_t count) {
  IndexPlan p{static_cast<size_t>(wrap_dim(attrs.get_int("dim"), full.size(), "index")), 1, 1, 0, count};
  for (size_t d = 0; d < full.size(); ++d) {
    if (d < p.dim) p.outer *= full[d];
    if (d > p.dim) p.inner *= full[d];
  }
  p.size = full[p.dim];
  return p;
}

// Any dtype: memcpy of the selected inner blocks.
void index_select_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  const int64_t* index = k.inputs[1]->as<int64_t>();
  const IndexPlan p = index_plan(in.shape(), k.attrs, k.inputs[1]->numel());
  const size_t block = static_cast<size_t>(p.inner) * dtype_size(in.dtype());
  const auto* src = static_cast<const char*>(in.data());
  auto* out = static_cast<char*>(k.out.data());
  for (int64_t j = 0; j < p.count; ++j) checked_index("index_select", index, j, p.size, p.dim);
  if (!block) return;
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t j = 0; j < p.count; ++j) {
      std::memcpy(out + static_cast<size_t>(o * p.count + j) * block,
                  src + static_cast<size_t>(o * p.size + index[j]) * block, block);
    }
  }
}

template <typename T> void index_add_kernel(const KernelArgs& k) {
  const Buffer& self = *k.inputs[0];
  const int64_t* index = k.inputs[1]->as<int64_t>();
  const T* source = k.inputs[2]->as<T>();
  const IndexPlan p = index_plan(self.shape(), k.attrs, k.inputs[1]->numel());
  T* out = k.out.as<T>();
  if (k.out.bytes()) std::memcpy(out, self.data(), k.out.bytes());
  for (int64_t j = 0; j < p.count; ++j) checked_index("index_add", index, j, p.size, p.dim);
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t j = 0; j < p.count; ++j) {
      T* dst = out + (o * p.size + index[j]) * p.inner;
      const T* src = source + (o * p.count + j) * p.inner;
      for (int64_t i = 0; i < p.inner; ++i) dst[i] = static_cast<T>(dst[i] + src[i]);
    }
  }
}

}  // namespace

void add_nn_kernels(Table& t) {
  t.emplace(Key{OpKind::kOneHot, DType::kInt64}, one_hot_kernel);
  rows<float, double>(t, OpKind::kNllLoss, LAZYSCOPE_KERNEL(nll_loss_kernel));
  rows<float, double>(t, OpKind::kNllLossBackward, LAZYSCOPE_KERNEL(nll_loss_backward_kernel));
  rows<float, double>(t, OpKind::kLayerNorm, LAZYSCOPE_KERNEL(layer_norm_kernel));
  rows<float, double>(t, OpKind::kLayerNormBackward, LAZYSCOPE_KERNEL(layer_norm_backward_kernel));
  rows<float, double>(t, OpKind::kLayerNormParamGrads, LAZYSCOPE_KERNEL(layer_norm_param_grads_kernel));
  for (DType d : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat32, DType::kFloat64}) {
    t.emplace(Key{OpKind::kIndexSelect, d}, index_select_kernel);
  }
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kIndexAdd, LAZYSCOPE_KERNEL(index_add_kernel));
}

}  // namespace lazyscope::cpu
