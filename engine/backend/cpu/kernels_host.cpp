// Host kernels of the data-dependent ops: their output shape depends on the
// values, so they are no op-table rows, never enter a graph, and always run
// on the host (a lazy device reaches them through a counted fallback).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/cpu/kernel_util.h"

namespace lazyscope::cpu {
namespace {

// Non-zero as a flag per element, whatever the dtype ("non-zero" as convert<bool>).
std::vector<int64_t> true_positions(const Buffer& in) {
  std::vector<int64_t> out;
  dispatch(in.dtype(), [&]<typename T>() {
    const T* p = in.as<T>();
    for (int64_t i = 0; i < in.numel(); ++i) {
      if (convert<bool>(p[i])) out.push_back(i);
    }
  });
  return out;
}

// Comparison key: the 16-bit floats compare through double, the rest natively.
template <typename T> auto key(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return to_double(v);
  } else {
    return v;
  }
}

template <typename K> bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

}  // namespace

BufferPtr flat_nonzero_indices(const Buffer& in) {
  const std::vector<int64_t> pos = true_positions(in);
  BufferPtr out = Buffer::allocate(DType::kInt64, {static_cast<int64_t>(pos.size())});
  std::copy(pos.begin(), pos.end(), out->as<int64_t>());
  return out;
}

BufferPtr nonzero_indices(const Buffer& in) {
  const std::vector<int64_t> pos = true_positions(in);
  const Shape& shape = in.shape();
  const auto rank = static_cast<int64_t>(shape.size());
  BufferPtr out = Buffer::allocate(DType::kInt64, {static_cast<int64_t>(pos.size()), rank});
  const std::vector<int64_t> strides = contiguous_strides(shape);
  int64_t* o = out->as<int64_t>();
  for (int64_t flat : pos) {
    for (int64_t d = 0; d < rank; ++d) {
      *o++ = flat / strides[static_cast<size_t>(d)];
      flat %= strides[static_cast<size_t>(d)];
    }
  }
  return out;
}

UniqueResult unique_values(const Buffer& in) {
  UniqueResult r;
  const int64_t n = in.numel();
  dispatch(in.dtype(), [&]<typename T>() {
    const T* p = in.as<T>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    // Ascending, NaNs last (each NaN its own value, as in PyTorch and NumPy's
    // equal_nan=False).
    std::stable_sort(order.begin(), order.end(), [p](int64_t a, int64_t b) {
      const auto ka = key(p[a]), kb = key(p[b]);
      if (is_nan(ka) || is_nan(kb)) return !is_nan(ka) && is_nan(kb);
      return ka < kb;
    });
    std::vector<int64_t> first_of_group;  // index into `order` where each distinct value starts
    std::vector<int64_t> inverse(static_cast<size_t>(n));
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || !(key(p[order[i]]) == key(p[order[i - 1]]))) first_of_group.push_back(static_cast<int64_t>(i));
      inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(first_of_group.size()) - 1;
    }
    const auto k = static_cast<int64_t>(first_of_group.size());
    r.values = Buffer::allocate(in.dtype(), {k});
    r.counts = Buffer::allocate(DType::kInt64, {k});
    for (int64_t g = 0; g < k; ++g) {
      const int64_t begin = first_of_group[static_cast<size_t>(g)];
      const int64_t end = g + 1 < k ? first_of_group[static_cast<size_t>(g + 1)] : n;
      r.values->as<T>()[g] = p[order[static_cast<size_t>(begin)]];
      r.counts->as<int64_t>()[g] = end - begin;
    }
    r.inverse = Buffer::allocate(DType::kInt64, in.shape());
    std::copy(inverse.begin(), inverse.end(), r.inverse->as<int64_t>());
  });
  return r;
}

}  // namespace lazyscope::cpu
