// Helpers shared by the CPU kernel files: storage types of the 16-bit
// floats, dispatch over dtypes, conversions, the N-ary broadcast iterator and
// the kernel-table builder. Internal to backend/cpu.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "ir/attrs.h"

namespace lazyscope::cpu {

// Storage types of the 16-bit floats: kernels convert them through float.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// Calls f.template operator()<T>() with the C++ type that stores `dtype`.
template <typename F> void dispatch(DType dtype, F&& f) {
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
template <> inline double to_double(Half v) { return half_to_float(v.bits); }
template <> inline double to_double(BFloat16 v) { return bfloat16_to_float(v.bits); }

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

// Visits every output element of a broadcast N-ary op: f(i, offsets) with
// i the flat output index and offsets[j] the flat offset into input j.
// Inputs of the output's shape take the fast path.
template <size_t N, typename F>
void for_each_broadcast(const Shape& out, const std::array<const Shape*, N>& in, F&& f) {
  const int64_t n = numel(out);
  std::array<int64_t, N> offset{};
  bool all_same = true;
  for (const Shape* s : in) all_same = all_same && *s == out;
  if (all_same) {
    for (int64_t i = 0; i < n; ++i) {
      offset.fill(i);
      f(i, offset);
    }
    return;
  }
  const size_t rank = out.size();
  std::array<std::vector<int64_t>, N> strides;
  for (size_t j = 0; j < N; ++j) {
    strides[j].assign(rank, 0);
    const auto own = contiguous_strides(*in[j]);
    const size_t lead = rank - in[j]->size();
    for (size_t d = 0; d < in[j]->size(); ++d) strides[j][lead + d] = (*in[j])[d] == 1 ? 0 : own[d];
  }
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, offset);
    for (size_t d = rank; d-- > 0;) {  // odometer increment, innermost first
      ++index[d];
      for (size_t j = 0; j < N; ++j) offset[j] += strides[j][d];
      if (index[d] < out[d]) break;
      for (size_t j = 0; j < N; ++j) offset[j] -= strides[j][d] * out[d];
      index[d] = 0;
    }
  }
}

// Visits the slice's elements: f(i, offset) with i the flat index into the
// slice and offset the flat index into the full tensor of `full`. Rows of
// the last dim run as a strided loop, and rows split across the pool
// (parallel_for), so `f` is called from several threads at once: each i
// (and each offset) once, so writes to out[i] or out[offset] never meet. A
// per-element odometer on one thread made `x[:, ::2]` 6-8x NumPy's time.
template <typename F> void for_each_sliced(const Shape& full, const Shape& sliced, const Attrs& attrs, F&& f) {
  const auto& starts = attrs.get_ints("starts");
  const auto& steps = attrs.get_ints("steps");
  const auto strides = contiguous_strides(full);
  const size_t rank = full.size();
  int64_t first = 0;
  for (size_t d = 0; d < rank; ++d) first += starts[d] * strides[d];
  if (rank == 0) {
    f(int64_t{0}, first);
    return;
  }
  const int64_t run = sliced[rank - 1], run_step = steps[rank - 1] * strides[rank - 1];
  const int64_t n = numel(sliced);
  if (run == 0 || n == 0) return;
  const int64_t rows = n / run;
  parallel_for(rows, std::max<int64_t>(1, 16384 / run), [&](int64_t r0, int64_t r1) {
    // The offset of row r0: its index over the leading dims, innermost last.
    std::vector<int64_t> index(rank, 0);
    int64_t o = first;
    for (int64_t rest = r0, d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      const auto du = static_cast<size_t>(d);
      index[du] = rest % sliced[du];
      rest /= sliced[du];
      o += index[du] * steps[du] * strides[du];
    }
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i = r * run;
      for (int64_t j = 0; j < run; ++j) f(i + j, o + j * run_step);
      for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {  // the next row: odometer, innermost first
        const auto du = static_cast<size_t>(d);
        ++index[du];
        o += steps[du] * strides[du];
        if (index[du] < sliced[du]) break;
        o -= steps[du] * strides[du] * sliced[du];
        index[du] = 0;
      }
    }
  });
}

using Key = std::pair<OpKind, DType>;
using Table = std::map<Key, KernelFn>;

template <typename T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>)
    return DType::kBool;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::kUInt8;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::kInt64;
  else if constexpr (std::is_same_v<T, Half>)
    return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, float>)
    return DType::kFloat32;
  else
    return DType::kFloat64;
}

// One row per listed type: make.template operator()<T>() is the kernel.
template <typename... Ts, typename Make> void rows(Table& t, OpKind op, Make make) {
  (t.emplace(Key{op, dtype_of<Ts>()}, make.template operator()<Ts>()), ...);
}

#define LAZYSCOPE_KERNEL(name) []<typename T>() -> KernelFn { return name<T>; }

// Each kernel file adds its rows.
void add_elementwise_kernels(Table& t);
void add_reduction_kernels(Table& t);
void add_layout_kernels(Table& t);
void add_nn_kernels(Table& t);
// Convolution, pooling, normalization, dropout
void add_conv_kernels(Table& t);
void add_pool_kernels(Table& t);
void add_spatial3d_kernels(Table& t);  // conv3d and the 3-D pools (kernels_spatial3d.cpp)
void add_random_kernels(Table& t);
void add_index_kernels(Table& t);
void add_collective_kernels(
    Table& t);  // all_reduce (kernels_collective.cpp)  // gather/scatter, advanced indexing, sort, scans, triangles
void add_linalg_kernels(Table& t);  // LAPACK: solve, inv, slogdet, cholesky, eigh, qr, svd (kernels_linalg.cpp)

// Sets OpenBLAS's process-wide thread count where it differs
// (kernels_layout.cpp): the pool's parts and LAPACK calls hold it at one.
void set_blas_threads(int n);

}  // namespace lazyscope::cpu
