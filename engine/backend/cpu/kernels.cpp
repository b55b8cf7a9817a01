// The CPU kernel table, the 16-bit float conversions and the cast kernels.
// The other kernels live in kernels_{elementwise,reduce,layout}.cpp.
#include "backend/cpu/kernels.h"

#include <array>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/fusion.h"
#include "backend/cpu/kernel_util.h"

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

// The lowering table of the CPU backend. Rows are (op, output dtype).
const Table& kernel_table() {
  static const Table table = [] {
    Table t;
    rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kCast,
                                                                         LAZYSCOPE_KERNEL(cast_kernel));
    add_elementwise_kernels(t);
    add_layout_kernels(t);
    add_reduction_kernels(t);
    add_nn_kernels(t);
    add_linalg_kernels(t);
    // Convolution, pooling, normalization, dropout
    add_conv_kernels(t);
    add_pool_kernels(t);
    add_spatial3d_kernels(t);
    add_random_kernels(t);
    add_index_kernels(t);
    add_collective_kernels(t);
    return t;
  }();
  return table;
}

#undef LAZYSCOPE_KERNEL

bool is_16_bit_float(DType d) { return d == DType::kFloat16 || d == DType::kBFloat16; }

KernelFn table_kernel(OpKind op, DType dtype) {
  const auto it = kernel_table().find(Key{op, dtype});
  return it == kernel_table().end() ? nullptr : it->second;
}

void cast_into(const Buffer& in, Buffer& out) {
  const Buffer* operand = &in;
  table_kernel(OpKind::kCast, out.dtype())(KernelArgs{std::span<const Buffer* const>(&operand, 1), out, Attrs{}});
}

// The 16-bit floats compute in float32 and round once at the end, as
// PyTorch's CPU kernels do: an op with a 16-bit output and no row of its own
// widens its 16-bit operands to float32, runs the float32 row and narrows the
// result. One instantiation per op, since a KernelFn carries no state.
template <size_t Op> void widened_kernel(const KernelArgs& k) {
  constexpr auto op = static_cast<OpKind>(Op);
  std::vector<BufferPtr> wide;
  std::vector<const Buffer*> operands;
  for (const Buffer* in : k.inputs) {
    if (!is_16_bit_float(in->dtype())) {
      operands.push_back(in);
      continue;
    }
    wide.push_back(Buffer::allocate(DType::kFloat32, in->shape()));
    cast_into(*in, *wide.back());
    operands.push_back(wide.back().get());
  }
  const BufferPtr out = Buffer::allocate(DType::kFloat32, k.out.shape());
  table_kernel(op, DType::kFloat32)(KernelArgs{operands, *out, k.attrs});
  cast_into(*out, k.out);
}

template <size_t... Ops> constexpr auto widened_kernels(std::index_sequence<Ops...>) {
  return std::array<KernelFn, sizeof...(Ops)>{&widened_kernel<Ops>...};
}

// float32 ops with a fused row run through its tile function (see
// run_as_row), the table's kernel otherwise.
template <size_t Op> void row_kernel(const KernelArgs& k) {
  constexpr auto op = static_cast<OpKind>(Op);
  if (!run_as_row(op, k)) table_kernel(op, DType::kFloat32)(k);
}

template <size_t... Ops> constexpr auto row_kernels(std::index_sequence<Ops...>) {
  return std::array<KernelFn, sizeof...(Ops)>{&row_kernel<Ops>...};
}

bool has_float_row(OpKind op) {
  const DType f[3] = {DType::kFloat32, DType::kFloat32, DType::kFloat32};
  for (size_t arity = 1; arity <= 3; ++arity) {
    if (fused_row(op, DType::kFloat32, std::span<const DType>(f, arity)) >= 0) return true;
  }
  return false;
}

}  // namespace

KernelFn find_kernel(OpKind op, DType dtype) {
  // Asked on every op call on a lazy device (does the backend lower it, or
  // does it fall back?), so a flat array indexed by (op, dtype), built once
  // from the table, rather than a map search.
  using Flat = std::array<std::array<KernelFn, kNumDTypes>, static_cast<size_t>(OpKind::kNumOps)>;
  static const Flat flat = [] {
    Flat f{};
    for (const auto& [key, fn] : kernel_table())
      f[static_cast<size_t>(key.first)][static_cast<size_t>(key.second)] = fn;
    constexpr auto widened = widened_kernels(std::make_index_sequence<static_cast<size_t>(OpKind::kNumOps)>());
    constexpr auto via_rows = row_kernels(std::make_index_sequence<static_cast<size_t>(OpKind::kNumOps)>());
    for (size_t o = 0; o < f.size(); ++o) {
      auto& slot = f[o][static_cast<size_t>(DType::kFloat32)];
      if (slot != nullptr && has_float_row(static_cast<OpKind>(o))) slot = via_rows[o];
    }
    for (size_t o = 0; o < f.size(); ++o) {
      if (f[o][static_cast<size_t>(DType::kFloat32)] == nullptr) continue;
      for (DType d : {DType::kFloat16, DType::kBFloat16}) {
        if (f[o][static_cast<size_t>(d)] == nullptr) f[o][static_cast<size_t>(d)] = widened[o];
      }
    }
    return f;
  }();
  const auto o = static_cast<size_t>(op);
  const auto d = static_cast<size_t>(dtype);
  return o < flat.size() && d < flat[o].size() ? flat[o][d] : nullptr;
}

}  // namespace lazyscope::cpu
