// Elementwise kernels: unary ops over contiguous buffers, binary and ternary
// ops through the broadcast iterator. Operands arrive promoted to one dtype
// (ops.cpp casts them), so each kernel is typed by its output, except the
// comparisons, which are typed by their operands and write bool.
#include <cmath>
#include <string>
#include <type_traits>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"

namespace lazyscope::cpu {
namespace {

// Elements below which a loop stays on one thread: waking the pool costs a
// few microseconds, the time of some 16K simple float operations.
constexpr int64_t kGrain = 16384;

template <typename T, typename Op> void unary(const KernelArgs& k, Op op) {
  const T* in = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  parallel_for(k.out.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = op(in[i]);
  });
}

template <typename Out, typename In, typename Op> void binary_as(const KernelArgs& k, Op op) {
  const In* a = k.inputs[0]->as<In>();
  const In* b = k.inputs[1]->as<In>();
  Out* out = k.out.as<Out>();
  if (k.inputs[0]->shape() == k.out.shape() && k.inputs[1]->shape() == k.out.shape()) {
    parallel_for(k.out.numel(), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = op(a[i], b[i]);
    });
    return;
  }
  for_each_broadcast<2>(k.out.shape(), {&k.inputs[0]->shape(), &k.inputs[1]->shape()},
                        [&](int64_t i, const std::array<int64_t, 2>& o) { out[i] = op(a[o[0]], b[o[1]]); });
}

template <typename T, typename Op> void binary(const KernelArgs& k, Op op) { binary_as<T, T>(k, op); }

template <typename T> void add_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return static_cast<T>(x + y); });
}
template <typename T> void sub_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return static_cast<T>(x - y); });
}
template <typename T> void mul_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return static_cast<T>(x * y); });
}
template <typename T> void div_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return x / y; });
}

template <typename T> T int_pow(T base, T exponent) {
  if (exponent < 0) throw EngineError("pow: integers to negative integer powers are not allowed");
  T result = 1;
  while (exponent) {  // square and multiply
    if (exponent & 1) result = static_cast<T>(result * base);
    base = static_cast<T>(base * base);
    exponent >>= 1;
  }
  return result;
}

template <typename T> void pow_kernel(const KernelArgs& k) {
  if constexpr (std::is_floating_point_v<T>) {
    // x ** 2 squares (correctly rounded; pow is within an ulp or so), as
    // the fused row does, and as NumPy and PyTorch do.
    binary<T>(k, [](T x, T y) { return y == T(2) ? x * x : std::pow(x, y); });
  } else {
    binary<T>(k, [](T x, T y) { return int_pow(x, y); });
  }
}

// maximum/minimum propagate NaN, as PyTorch's do.
template <typename T> void maximum_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return x != x ? x : (y != y ? y : std::max(x, y)); });
}
template <typename T> void minimum_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return x != x ? x : (y != y ? y : std::min(x, y)); });
}

// Comparisons: typed by the promoted operands, the output is bool.
template <typename Cmp> void compare(const KernelArgs& k, Cmp cmp) {
  dispatch(k.inputs[0]->dtype(), [&]<typename In>() {
    if constexpr (std::is_arithmetic_v<In>) {
      binary_as<bool, In>(k, cmp);
    } else {
      binary_as<bool, In>(k, [&](In x, In y) { return cmp(to_double(x), to_double(y)); });
    }
  });
}
void eq_kernel(const KernelArgs& k) {
  compare(k, [](auto x, auto y) { return x == y; });
}
void ne_kernel(const KernelArgs& k) {
  compare(k, [](auto x, auto y) { return x != y; });
}
void lt_kernel(const KernelArgs& k) {
  compare(k, [](auto x, auto y) { return x < y; });
}
void le_kernel(const KernelArgs& k) {
  compare(k, [](auto x, auto y) { return x <= y; });
}
void gt_kernel(const KernelArgs& k) {
  compare(k, [](auto x, auto y) { return x > y; });
}
void ge_kernel(const KernelArgs& k) {
  compare(k, [](auto x, auto y) { return x >= y; });
}

void logical_and_kernel(const KernelArgs& k) {
  binary<bool>(k, [](bool x, bool y) { return x && y; });
}
void logical_or_kernel(const KernelArgs& k) {
  binary<bool>(k, [](bool x, bool y) { return x || y; });
}
void logical_not_kernel(const KernelArgs& k) {
  unary<bool>(k, [](bool x) { return !x; });
}

template <typename T> void where_kernel(const KernelArgs& k) {
  const bool* c = k.inputs[0]->as<bool>();
  const T* x = k.inputs[1]->as<T>();
  const T* y = k.inputs[2]->as<T>();
  T* out = k.out.as<T>();
  for_each_broadcast<3>(k.out.shape(), {&k.inputs[0]->shape(), &k.inputs[1]->shape(), &k.inputs[2]->shape()},
                        [&](int64_t i, const std::array<int64_t, 3>& o) { out[i] = c[o[0]] ? x[o[1]] : y[o[2]]; });
}

template <typename T> void neg_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return static_cast<T>(-x); });
}
template <typename T> void abs_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return x < T(0) ? static_cast<T>(-x) : x; });
}
template <typename T> void relu_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return x > T(0) ? x : T(0); });
}

template <typename T> void exp_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::exp(x); });
}
template <typename T> void log_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::log(x); });
}
template <typename T> void log1p_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::log1p(x); });
}
template <typename T> void sqrt_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::sqrt(x); });
}
template <typename T> void rsqrt_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return T(1) / std::sqrt(x); });
}
template <typename T> void sin_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::sin(x); });
}
template <typename T> void cos_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::cos(x); });
}
template <typename T> void tanh_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::tanh(x); });
}
template <typename T> void erf_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::erf(x); });
}
template <typename T> void atan_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::atan(x); });
}
template <typename T> void asin_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::asin(x); });
}
template <typename T> void acos_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return std::acos(x); });
}
template <typename T> void atan2_kernel(const KernelArgs& k) {
  binary<T>(k, [](T y, T x) { return std::atan2(y, x); });
}
template <typename T> void bitwise_and_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return static_cast<T>(x & y); });
}
template <typename T> void bitwise_or_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return static_cast<T>(x | y); });
}
template <typename T> void bitwise_xor_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return static_cast<T>(x ^ y); });
}
// Shifts in the unsigned type (no undefined behaviour for negative values
// or counts past the width): a count outside [0, bits) gives 0 to the left
// and the sign fill to the right, as NumPy.
template <typename T> void shift_left_kernel(const KernelArgs& k) {
  using U = std::make_unsigned_t<T>;
  binary<T>(k, [](T x, T n) {
    return n < T(0) || n >= T(sizeof(T) * 8) ? T(0) : static_cast<T>(static_cast<U>(static_cast<U>(x) << n));
  });
}
template <typename T> void shift_right_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T n) {
    if (n < T(0) || n >= T(sizeof(T) * 8)) return x < T(0) ? static_cast<T>(-1) : T(0);
    return static_cast<T>(x >> n);  // arithmetic for signed T (C++20)
  });
}

// Euclid on the magnitudes in the unsigned type: |INT64_MIN| has no signed
// value (PyTorch's abs wraps it; the cast back here does the same).
template <typename T> void gcd_kernel(const KernelArgs& k) {
  using U = std::make_unsigned_t<T>;
  binary<T>(k, [](T x, T y) {
    auto magnitude = [](T v) { return v < 0 ? static_cast<U>(U(0) - static_cast<U>(v)) : static_cast<U>(v); };
    U a = magnitude(x), b = magnitude(y);
    while (a != 0) {
      const U c = a;
      a = static_cast<U>(b % a);
      b = c;
    }
    return static_cast<T>(b);
  });
}
template <typename T> void nextafter_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) { return std::nextafter(x, y); });
}
template <typename T> void frexp_mantissa_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) {
    int e = 0;
    return std::isfinite(x) ? std::frexp(x, &e) : x;
  });
}
template <typename T> void frexp_exponent_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) {
    int e = 0;
    if (std::isfinite(x)) std::frexp(x, &e);
    return static_cast<T>(e);
  });
}
template <typename T> void sigmoid_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return T(1) / (T(1) + std::exp(-x)); });
}
template <typename T> void silu_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return x / (T(1) + std::exp(-x)); });
}
// gelu(x) = x * Phi(x), the exact (erf) form.
template <typename T> void gelu_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2))); });
}
// softplus(x) = log(1 + exp(beta x)) / beta, linear where beta x > threshold.
template <typename T> void softplus_kernel(const KernelArgs& k) {
  const auto beta = static_cast<T>(k.attrs.get_double("beta"));
  const auto threshold = static_cast<T>(k.attrs.get_double("threshold"));
  unary<T>(k, [&](T x) { return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta; });
}
template <typename T> void leaky_relu_kernel(const KernelArgs& k) {
  const auto slope = static_cast<T>(k.attrs.get_double("negative_slope"));
  unary<T>(k, [&](T x) { return x > T(0) ? x : x * slope; });
}
// Bounds are doubles, +-inf when absent; NaN stays NaN.
template <typename T> void clamp_kernel(const KernelArgs& k) {
  const double lo = k.attrs.get_double("min");
  const double hi = k.attrs.get_double("max");
  unary<T>(k, [&](T x) {
    const auto v = static_cast<double>(x);
    if (v < lo) return static_cast<T>(lo);
    if (v > hi) return static_cast<T>(hi);
    return x;
  });
}

// Rounding: integers are their own rounding. std::nearbyint rounds half to
// even in the default rounding mode, as PyTorch's round does.
template <typename T> void sign_kernel(const KernelArgs& k) {
  unary<T>(k, [](T x) { return static_cast<T>((T(0) < x) - (x < T(0))); });
}
template <typename T, typename F> void round_with(const KernelArgs& k, F f) {
  if constexpr (std::is_floating_point_v<T>) {
    unary<T>(k, f);
  } else {
    unary<T>(k, [](T x) { return x; });
  }
}
template <typename T> void floor_kernel(const KernelArgs& k) {
  round_with<T>(k, [](T x) { return std::floor(x); });
}
template <typename T> void ceil_kernel(const KernelArgs& k) {
  round_with<T>(k, [](T x) { return std::ceil(x); });
}
template <typename T> void round_kernel(const KernelArgs& k) {
  round_with<T>(k, [](T x) { return std::nearbyint(x); });
}
template <typename T> void trunc_kernel(const KernelArgs& k) {
  round_with<T>(k, [](T x) { return std::trunc(x); });
}

// Integer division by zero: PyTorch's CPU kernels raise "ZeroDivisionError".
template <typename T> void check_divisor(const char* op, T y) {
  if constexpr (!std::is_floating_point_v<T>) {
    if (y == 0) throw EngineError(std::string(op) + ": ZeroDivisionError (integer division by zero)");
  }
}

// The quotient rounded toward -inf. Floats follow PyTorch's div_floor_floating
// (fmod-based, so that floor(a / b) rounding errors do not leak in).
template <typename T> T floor_div(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b == 0) return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return std::copysign(T(0), a / b);
    T floored = std::floor(div);
    if (div - floored > T(0.5)) floored += 1;
    return floored;
  } else if constexpr (std::is_unsigned_v<T>) {
    return static_cast<T>(a / b);
  } else {
    const T q = static_cast<T>(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  }
}
template <typename T> T python_mod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    T mod = std::fmod(a, b);
    if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
    return mod;
  } else if constexpr (std::is_unsigned_v<T>) {
    return static_cast<T>(a % b);
  } else {
    T mod = static_cast<T>(a % b);
    if (mod != 0 && (b < 0) != (mod < 0)) mod = static_cast<T>(mod + b);
    return mod;
  }
}
template <typename T> T c_fmod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    return static_cast<T>(a % b);
  }
}
template <typename T> void floor_divide_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) {
    check_divisor("floor_divide", y);
    return floor_div(x, y);
  });
}
template <typename T> void remainder_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) {
    check_divisor("remainder", y);
    return python_mod(x, y);
  });
}
template <typename T> void fmod_kernel(const KernelArgs& k) {
  binary<T>(k, [](T x, T y) {
    check_divisor("fmod", y);
    return c_fmod(x, y);
  });
}

}  // namespace

void add_elementwise_kernels(Table& t) {
  // add/mul on bool are "or"/"and", as in PyTorch; bool sub is refused there too.
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kAdd, LAZYSCOPE_KERNEL(add_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kSub, LAZYSCOPE_KERNEL(sub_kernel));
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kMul, LAZYSCOPE_KERNEL(mul_kernel));
  rows<float, double>(t, OpKind::kDiv, LAZYSCOPE_KERNEL(div_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kPow, LAZYSCOPE_KERNEL(pow_kernel));
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kMaximum, LAZYSCOPE_KERNEL(maximum_kernel));
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kMinimum, LAZYSCOPE_KERNEL(minimum_kernel));
  t.emplace(Key{OpKind::kEq, DType::kBool}, eq_kernel);
  t.emplace(Key{OpKind::kNe, DType::kBool}, ne_kernel);
  t.emplace(Key{OpKind::kLt, DType::kBool}, lt_kernel);
  t.emplace(Key{OpKind::kLe, DType::kBool}, le_kernel);
  t.emplace(Key{OpKind::kGt, DType::kBool}, gt_kernel);
  t.emplace(Key{OpKind::kGe, DType::kBool}, ge_kernel);
  t.emplace(Key{OpKind::kLogicalAnd, DType::kBool}, logical_and_kernel);
  t.emplace(Key{OpKind::kLogicalOr, DType::kBool}, logical_or_kernel);
  t.emplace(Key{OpKind::kLogicalNot, DType::kBool}, logical_not_kernel);
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kWhere,
                                                                       LAZYSCOPE_KERNEL(where_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kNeg, LAZYSCOPE_KERNEL(neg_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kAbs, LAZYSCOPE_KERNEL(abs_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kRelu, LAZYSCOPE_KERNEL(relu_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kClamp, LAZYSCOPE_KERNEL(clamp_kernel));
  rows<float, double>(t, OpKind::kExp, LAZYSCOPE_KERNEL(exp_kernel));
  rows<float, double>(t, OpKind::kLog, LAZYSCOPE_KERNEL(log_kernel));
  rows<float, double>(t, OpKind::kLog1p, LAZYSCOPE_KERNEL(log1p_kernel));
  rows<float, double>(t, OpKind::kSqrt, LAZYSCOPE_KERNEL(sqrt_kernel));
  rows<float, double>(t, OpKind::kRsqrt, LAZYSCOPE_KERNEL(rsqrt_kernel));
  rows<float, double>(t, OpKind::kSin, LAZYSCOPE_KERNEL(sin_kernel));
  rows<float, double>(t, OpKind::kCos, LAZYSCOPE_KERNEL(cos_kernel));
  rows<float, double>(t, OpKind::kTanh, LAZYSCOPE_KERNEL(tanh_kernel));
  rows<float, double>(t, OpKind::kErf, LAZYSCOPE_KERNEL(erf_kernel));
  rows<float, double>(t, OpKind::kAtan, LAZYSCOPE_KERNEL(atan_kernel));
  rows<float, double>(t, OpKind::kAsin, LAZYSCOPE_KERNEL(asin_kernel));
  rows<float, double>(t, OpKind::kAcos, LAZYSCOPE_KERNEL(acos_kernel));
  rows<float, double>(t, OpKind::kAtan2, LAZYSCOPE_KERNEL(atan2_kernel));
  rows<bool, uint8_t, int32_t, int64_t>(t, OpKind::kBitwiseAnd, LAZYSCOPE_KERNEL(bitwise_and_kernel));
  rows<bool, uint8_t, int32_t, int64_t>(t, OpKind::kBitwiseOr, LAZYSCOPE_KERNEL(bitwise_or_kernel));
  rows<bool, uint8_t, int32_t, int64_t>(t, OpKind::kBitwiseXor, LAZYSCOPE_KERNEL(bitwise_xor_kernel));
  rows<uint8_t, int32_t, int64_t>(t, OpKind::kShiftLeft, LAZYSCOPE_KERNEL(shift_left_kernel));
  rows<uint8_t, int32_t, int64_t>(t, OpKind::kShiftRight, LAZYSCOPE_KERNEL(shift_right_kernel));
  rows<uint8_t, int32_t, int64_t>(t, OpKind::kGcd, LAZYSCOPE_KERNEL(gcd_kernel));
  rows<float, double>(t, OpKind::kNextafter, LAZYSCOPE_KERNEL(nextafter_kernel));
  rows<float, double>(t, OpKind::kFrexpMantissa, LAZYSCOPE_KERNEL(frexp_mantissa_kernel));
  rows<float, double>(t, OpKind::kFrexpExponent, LAZYSCOPE_KERNEL(frexp_exponent_kernel));
  rows<float, double>(t, OpKind::kSigmoid, LAZYSCOPE_KERNEL(sigmoid_kernel));
  rows<float, double>(t, OpKind::kSilu, LAZYSCOPE_KERNEL(silu_kernel));
  rows<float, double>(t, OpKind::kGelu, LAZYSCOPE_KERNEL(gelu_kernel));
  rows<float, double>(t, OpKind::kSoftplus, LAZYSCOPE_KERNEL(softplus_kernel));
  rows<float, double>(t, OpKind::kLeakyRelu, LAZYSCOPE_KERNEL(leaky_relu_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kSign, LAZYSCOPE_KERNEL(sign_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kFloor, LAZYSCOPE_KERNEL(floor_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kCeil, LAZYSCOPE_KERNEL(ceil_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kRound, LAZYSCOPE_KERNEL(round_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kTrunc, LAZYSCOPE_KERNEL(trunc_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kFloorDivide, LAZYSCOPE_KERNEL(floor_divide_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kRemainder, LAZYSCOPE_KERNEL(remainder_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kFmod, LAZYSCOPE_KERNEL(fmod_kernel));
}

}  // namespace lazyscope::cpu
