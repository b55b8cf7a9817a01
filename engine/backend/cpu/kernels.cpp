#include "backend/cpu/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

namespace lazyscope::cpu {
namespace {

// Visits every output element of a broadcast binary op, giving the flat
// offsets into each input. Inputs of the output's shape take the fast path.
template <typename F>
void for_each_broadcast(const Shape& out, const Shape& a, const Shape& b, F&& f) {
  const int64_t n = numel(out);
  if (a == out && b == out) {
    for (int64_t i = 0; i < n; ++i) f(i, i, i);
    return;
  }
  const size_t rank = out.size();
  auto broadcast_strides = [&](const Shape& s) {
    std::vector<int64_t> strides(rank, 0);
    const auto own = contiguous_strides(s);
    const size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) strides[offset + i] = s[i] == 1 ? 0 : own[i];
    return strides;
  };
  const auto sa = broadcast_strides(a);
  const auto sb = broadcast_strides(b);
  std::vector<int64_t> index(rank, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, ia, ib);
    for (size_t d = rank; d-- > 0;) {  // odometer increment, innermost first
      ++index[d];
      ia += sa[d];
      ib += sb[d];
      if (index[d] < out[d]) break;
      ia -= sa[d] * out[d];
      ib -= sb[d] * out[d];
      index[d] = 0;
    }
  }
}

template <typename T, typename Op>
void binary(const KernelArgs& k, Op op) {
  const T* a = k.inputs[0]->as<T>();
  const T* b = k.inputs[1]->as<T>();
  T* out = k.out.as<T>();
  for_each_broadcast(k.out.shape(), k.inputs[0]->shape(), k.inputs[1]->shape(),
                     [&](int64_t i, int64_t ia, int64_t ib) { out[i] = op(a[ia], b[ib]); });
}

template <typename T> void add_kernel(const KernelArgs& k) { binary<T>(k, [](T x, T y) { return static_cast<T>(x + y); }); }
template <typename T> void sub_kernel(const KernelArgs& k) { binary<T>(k, [](T x, T y) { return static_cast<T>(x - y); }); }
template <typename T> void mul_kernel(const KernelArgs& k) { binary<T>(k, [](T x, T y) { return static_cast<T>(x * y); }); }

template <typename T> void relu_kernel(const KernelArgs& k) {
  const T* in = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  const int64_t n = k.out.numel();
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] > T(0) ? in[i] : T(0);
}

template <typename T> void transpose_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  const int64_t rows = in.shape()[0], cols = in.shape()[1];
  const T* src = in.as<T>();
  T* out = k.out.as<T>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[j * rows + i] = src[i * cols + j];
}

// Accumulates in double (floats) or int64 (integers) to keep long sums exact
// enough; the output offset of each input element follows strides that are
// zero on the reduced dimensions.
template <typename T> void sum_kernel(const KernelArgs& k) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  const Buffer& in = *k.inputs[0];
  const Shape& s = in.shape();
  const auto& dims = k.attrs.get_ints("dims");
  std::vector<bool> reduced(s.size(), dims.empty());
  for (int64_t d : dims) reduced[static_cast<size_t>(d < 0 ? d + static_cast<int64_t>(s.size()) : d)] = true;
  Shape kept(s.size());
  for (size_t i = 0; i < s.size(); ++i) kept[i] = reduced[i] ? 1 : s[i];
  auto out_strides = contiguous_strides(kept);
  for (size_t i = 0; i < s.size(); ++i) if (reduced[i]) out_strides[i] = 0;

  std::vector<Acc> acc(static_cast<size_t>(k.out.numel()), Acc(0));
  const auto* src = in.as<std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>();
  std::vector<int64_t> index(s.size(), 0);
  int64_t o = 0;
  const int64_t n = in.numel();
  for (int64_t i = 0; i < n; ++i) {
    acc[static_cast<size_t>(o)] += static_cast<Acc>(src[i]);
    for (size_t d = s.size(); d-- > 0;) {
      ++index[d];
      o += out_strides[d];
      if (index[d] < s[d]) break;
      o -= out_strides[d] * s[d];
      index[d] = 0;
    }
  }
  using Out = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  Out* out = k.out.as<Out>();
  for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<Out>(acc[i]);
}

// [m,k] x [k,n]. OpenBLAS for floating types; a plain loop for integers,
// which no training step multiplies at scale.
template <typename T> void matmul_kernel(const KernelArgs& k) {
  const Buffer& a = *k.inputs[0];
  const Buffer& b = *k.inputs[1];
  const int64_t m = a.shape()[0], kk = a.shape()[1], n = b.shape()[1];
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(kk), 1.0f, a.as<float>(), static_cast<int>(kk), b.as<float>(),
                static_cast<int>(n), 0.0f, k.out.as<float>(), static_cast<int>(n));
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(kk), 1.0, a.as<double>(), static_cast<int>(kk), b.as<double>(),
                static_cast<int>(n), 0.0, k.out.as<double>(), static_cast<int>(n));
  } else {
    const T* pa = a.as<T>();
    const T* pb = b.as<T>();
    T* out = k.out.as<T>();
    std::fill(out, out + m * n, T(0));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < kk; ++p)
        for (int64_t j = 0; j < n; ++j) out[i * n + j] += pa[i * kk + p] * pb[p * n + j];
  }
}

using Key = std::pair<OpKind, DType>;

// The lowering table of the CPU backend. Rows are (op, output dtype).
const std::map<Key, KernelFn>& kernel_table() {
  static const std::map<Key, KernelFn> table = [] {
    std::map<Key, KernelFn> t;
    t[{OpKind::kAdd, DType::kFloat32}] = add_kernel<float>;
    t[{OpKind::kAdd, DType::kFloat64}] = add_kernel<double>;
    t[{OpKind::kAdd, DType::kInt64}] = add_kernel<int64_t>;
    t[{OpKind::kAdd, DType::kInt32}] = add_kernel<int32_t>;
    t[{OpKind::kSub, DType::kFloat32}] = sub_kernel<float>;
    t[{OpKind::kSub, DType::kFloat64}] = sub_kernel<double>;
    t[{OpKind::kSub, DType::kInt64}] = sub_kernel<int64_t>;
    t[{OpKind::kSub, DType::kInt32}] = sub_kernel<int32_t>;
    t[{OpKind::kTranspose, DType::kFloat32}] = transpose_kernel<float>;
    t[{OpKind::kTranspose, DType::kFloat64}] = transpose_kernel<double>;
    t[{OpKind::kTranspose, DType::kInt64}] = transpose_kernel<int64_t>;
    t[{OpKind::kMul, DType::kFloat32}] = mul_kernel<float>;
    t[{OpKind::kMul, DType::kFloat64}] = mul_kernel<double>;
    t[{OpKind::kMul, DType::kInt64}] = mul_kernel<int64_t>;
    t[{OpKind::kMul, DType::kInt32}] = mul_kernel<int32_t>;
    t[{OpKind::kRelu, DType::kFloat32}] = relu_kernel<float>;
    t[{OpKind::kRelu, DType::kFloat64}] = relu_kernel<double>;
    t[{OpKind::kRelu, DType::kInt64}] = relu_kernel<int64_t>;
    t[{OpKind::kMatmul, DType::kFloat32}] = matmul_kernel<float>;
    t[{OpKind::kMatmul, DType::kFloat64}] = matmul_kernel<double>;
    t[{OpKind::kMatmul, DType::kInt64}] = matmul_kernel<int64_t>;
    // sum's output dtype: float in, same float out; integers sum to int64.
    t[{OpKind::kSum, DType::kFloat32}] = sum_kernel<float>;
    t[{OpKind::kSum, DType::kFloat64}] = sum_kernel<double>;
    t[{OpKind::kSum, DType::kInt64}] = sum_kernel<int64_t>;
    return t;
  }();
  return table;
}

}  // namespace

KernelFn find_kernel(OpKind op, DType dtype) {
  const auto& table = kernel_table();
  auto it = table.find({op, dtype});
  return it == table.end() ? nullptr : it->second;
}

}  // namespace lazyscope::cpu
