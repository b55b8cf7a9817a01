#include "backend/cpu/kernels.h"

#include <cblas.h>

#include "backend/cpu/kernel_util.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "core/error.h"

namespace lazyscope::cpu {

// IEEE binary16 and bfloat16 as stored bits. Conversions from float round to
// nearest, ties to even, as PyTorch's do; NaN stays NaN.
uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x47800000u) return sign | 0x7c00u;  // >= 2^16, or inf: inf
  if (a <= 0x33000000u) return sign;            // <= 2^-25: rounds to zero (2^-25 is a tie, to even)
  const int e = static_cast<int>(a >> 23) - 127;
  // Normal halves keep 10 of the 23 fraction bits; subnormal ones (e < -14)
  // hold the significand, implicit bit included, shifted down further.
  const uint32_t mant = e < -14 ? ((a & 0x7fffffu) | 0x800000u) : (a & 0x7fffffu);
  const int shift = e < -14 ? -e - 1 : 13;
  const uint32_t base = e < -14 ? 0 : static_cast<uint32_t>(e + 15) << 10;
  uint32_t r = mant >> shift;
  const uint32_t dropped = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (dropped > half || (dropped == half && (r & 1u))) ++r;  // a carry moves into the exponent
  return static_cast<uint16_t>(sign | (base + r));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  uint32_t bits;
  if (e == 0x1f) {
    bits = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);  // subnormal or zero, exact
    return sign ? -v : v;
  } else {
    bits = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {

template <typename Out> void cast_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  Out* out = k.out.as<Out>();
  const int64_t n = in.numel();
  dispatch(in.dtype(), [&]<typename In>() {
    const In* src = in.as<In>();
    for (int64_t i = 0; i < n; ++i) out[i] = convert<Out>(src[i]);
  });
}

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

template <typename T> void transpose_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  const int64_t rows = in.shape()[0], cols = in.shape()[1];
  const T* src = in.as<T>();
  T* out = k.out.as<T>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[j * rows + i] = src[i * cols + j];
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

// The lowering table of the CPU backend. Rows are (op, output dtype).
const Table& kernel_table() {
  static const Table table = [] {
    Table t;
    rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kCast, LAZYSCOPE_KERNEL(cast_kernel));
    add_elementwise_kernels(t);
    rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kTranspose, LAZYSCOPE_KERNEL(transpose_kernel));
    rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kMatmul, LAZYSCOPE_KERNEL(matmul_kernel));
    add_reduction_kernels(t);
    return t;
  }();
  return table;
}

#undef LAZYSCOPE_KERNEL

}  // namespace

KernelFn find_kernel(OpKind op, DType dtype) {
  const auto& table = kernel_table();
  auto it = table.find({op, dtype});
  return it == table.end() ? nullptr : it->second;
}

}  // namespace lazyscope::cpu
