#include "backend/cpu/kernels.h"

#include <cblas.h>

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

// Storage types of the 16-bit floats: kernels convert them through float.
struct Half { uint16_t bits; };
struct BFloat16 { uint16_t bits; };

// Calls f.template operator()<T>() with the C++ type that stores `dtype`.
template <typename F>
void dispatch(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kBool: f.template operator()<bool>(); return;
    case DType::kUInt8: f.template operator()<uint8_t>(); return;
    case DType::kInt32: f.template operator()<int32_t>(); return;
    case DType::kInt64: f.template operator()<int64_t>(); return;
    case DType::kFloat16: f.template operator()<Half>(); return;
    case DType::kBFloat16: f.template operator()<BFloat16>(); return;
    case DType::kFloat32: f.template operator()<float>(); return;
    case DType::kFloat64: f.template operator()<double>(); return;
  }
}

// Conversions between storage types: through double for the wide types,
// through float for the 16-bit ones (so double -> bfloat16 rounds once to
// float first, as PyTorch does). Float to integer truncates toward zero;
// anything to bool is "non-zero".
template <typename T> double to_double(T v) { return static_cast<double>(v); }
template <> double to_double(Half v) { return half_to_float(v.bits); }
template <> double to_double(BFloat16 v) { return bfloat16_to_float(v.bits); }

template <typename To, typename From> To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half{float_to_half(static_cast<float>(to_double(v)))};
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16{float_to_bfloat16(static_cast<float>(to_double(v)))};
  } else if constexpr (std::is_same_v<To, bool>) {
    return to_double(v) != 0.0;
  } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
    return static_cast<To>(v);  // int64 -> int32 wraps, as in PyTorch
  } else if constexpr (std::is_integral_v<To>) {
    // Truncate to int64, then wrap to narrower types (-2.5 -> uint8 254), as
    // PyTorch and NumPy do on x86. Beyond int64 (and NaN) is undefined in C++:
    // give int64's lowest value, as x86 does.
    const double d = to_double(v);
    const bool fits = d >= -0x1p63 && d < 0x1p63;
    return static_cast<To>(fits ? static_cast<int64_t>(d) : std::numeric_limits<int64_t>::lowest());
  } else {
    return static_cast<To>(to_double(v));
  }
}

template <typename Out> void cast_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  Out* out = k.out.as<Out>();
  const int64_t n = in.numel();
  dispatch(in.dtype(), [&]<typename In>() {
    const In* src = in.as<In>();
    for (int64_t i = 0; i < n; ++i) out[i] = convert<Out>(src[i]);
  });
}

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
using Table = std::map<Key, KernelFn>;

template <typename T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, Half>) return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else return DType::kFloat64;
}

// One row per listed type: make.template operator()<T>() is the kernel.
template <typename... Ts, typename Make>
void rows(Table& t, OpKind op, Make make) {
  (t.emplace(Key{op, dtype_of<Ts>()}, make.template operator()<Ts>()), ...);
}

#define LAZYSCOPE_KERNEL(name) []<typename T>() -> KernelFn { return name<T>; }

// The lowering table of the CPU backend. Rows are (op, output dtype).
const Table& kernel_table() {
  static const Table table = [] {
    Table t;
    rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kCast, LAZYSCOPE_KERNEL(cast_kernel));
    // add/mul on bool are "or"/"and", as in PyTorch; bool sub is refused there too.
    rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kAdd, LAZYSCOPE_KERNEL(add_kernel));
    rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kSub, LAZYSCOPE_KERNEL(sub_kernel));
    rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kMul, LAZYSCOPE_KERNEL(mul_kernel));
    rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kRelu, LAZYSCOPE_KERNEL(relu_kernel));
    rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kTranspose, LAZYSCOPE_KERNEL(transpose_kernel));
    rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kMatmul, LAZYSCOPE_KERNEL(matmul_kernel));
    // sum's output dtype: float in, same float out; integers arrive as int64.
    rows<int64_t, float, double>(t, OpKind::kSum, LAZYSCOPE_KERNEL(sum_kernel));
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
