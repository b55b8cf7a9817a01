// The all_reduce kernel: the replica's contribution goes through the
// in-process rendezvous (backend/collective.h), whose last arrival runs the
// reduction below for every replica at once.
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "backend/collective.h"
#include "backend/cpu/kernel_util.h"

namespace lazyscope::cpu {
namespace {

// What the reduction computes in: float for the 16-bit floats, the storage
// type otherwise.
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename C> C combine(ReduceKind kind, C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    // A bool sum/max is "any", a product/min is "all".
    return kind == ReduceKind::kSum || kind == ReduceKind::kMax || kind == ReduceKind::kOr ? (a || b) : (a && b);
  } else {
    switch (kind) {
      case ReduceKind::kSum: return a + b;
      case ReduceKind::kMul: return a * b;
      case ReduceKind::kMin:
      case ReduceKind::kMax: {
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(a)) return a;  // NaN propagates, as torch.minimum/maximum
          if (std::isnan(b)) return b;
        }
        return kind == ReduceKind::kMin ? (b < a ? b : a) : (b > a ? b : a);
      }
      case ReduceKind::kAnd:
      case ReduceKind::kOr: break;  // logical kinds take the bool path
    }
    return a;
  }
}

// Elements reduced in rank order, so every replica (and every run) gets the
// same bits whatever order the replicas arrived in.
template <typename T>
void reduce_arithmetic(ReduceKind kind, double scale, std::span<const Buffer* const> inputs, Buffer& out) {
  using C = Compute<T>;
  T* o = out.as<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    C acc = convert<C>(inputs[0]->as<T>()[i]);
    for (size_t r = 1; r < inputs.size(); ++r) acc = combine<C>(kind, acc, convert<C>(inputs[r]->as<T>()[i]));
    if constexpr (std::is_floating_point_v<C>) {
      if (scale != 1.0) acc = static_cast<C>(acc * static_cast<C>(scale));
    }
    o[i] = convert<T>(acc);
  }
}

void reduce_logical(ReduceKind kind, std::span<const Buffer* const> inputs, Buffer& out) {
  bool* o = out.as<bool>();
  const int64_t n = out.numel();
  dispatch(inputs[0]->dtype(), [&]<typename In>() {
    for (int64_t i = 0; i < n; ++i) {
      bool acc = convert<bool>(inputs[0]->as<In>()[i]);
      for (size_t r = 1; r < inputs.size(); ++r) {
        const bool v = convert<bool>(inputs[r]->as<In>()[i]);
        acc = kind == ReduceKind::kAnd ? (acc && v) : (acc || v);
      }
      o[i] = acc;
    }
  });
}

// attrs reduce (collective::ReduceKind), scale, group (a registered replica group's key).
template <typename T> void all_reduce_kernel(const KernelArgs& k) {
  const int64_t reduce = k.attrs.get_int("reduce");
  const auto kind = static_cast<ReduceKind>(reduce);
  const double scale = k.attrs.get_double("scale");
  const std::string op = std::string("all_reduce(") + std::string(reduce_name(kind)) + ")";
  collective::rendezvous(op, k.attrs.get_int("group"), reduce, *k.inputs[0], k.out,
                         [&](std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs) {
                           Buffer& first = *outputs[0];
                           if (is_logical(kind)) {
                             reduce_logical(kind, inputs, first);
                           } else {
                             reduce_arithmetic<T>(kind, scale, inputs, first);
                           }
                           for (size_t r = 1; r < outputs.size(); ++r) {
                             std::memcpy(outputs[r]->data(), first.data(), first.bytes());
                           }
                         });
}

}  // namespace

void add_collective_kernels(Table& t) {
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kAllReduce,
                                                                       LAZYSCOPE_KERNEL(all_reduce_kernel));
}

}  // namespace lazyscope::cpu
