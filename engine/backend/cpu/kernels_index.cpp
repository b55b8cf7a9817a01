// Kernels of the ops that move elements by index (gather, scatter,
// scatter_add, slice_scatter, advanced indexing and index_put), sort order,
// the scans (cumsum, cumprod) and the triangles (tril, triu). An index out of
// range is an IndexError naming the op, the value, the dim and its size; on a
// lazy device it surfaces at the sync that runs the graph.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/thread_scratch.h"
#include "core/error.h"

namespace lazyscope::cpu {
namespace {

constexpr auto kAllTypes = {DType::kBool,    DType::kUInt8,    DType::kInt32,   DType::kInt64,
                            DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

[[noreturn]] void out_of_range(const char* op, int64_t value, int64_t dim, int64_t size) {
  throw IndexError(std::string(op) + ": index " + std::to_string(value) + " is out of bounds for dimension " +
                   std::to_string(dim) + " with size " + std::to_string(size));
}

// Visits every position p of `index_shape` row-major: f(i, offset) with i the
// flat position in the index and offset the flat offset of p, with p[dim]
// dropped, in a tensor of `full` shape (whose dims are at least as large).
template <typename F> void for_each_index_position(const Shape& index_shape, const Shape& full, size_t dim, F&& f) {
  const size_t rank = index_shape.size();
  const auto strides = contiguous_strides(full);
  std::vector<int64_t> pos(rank, 0);
  int64_t offset = 0;
  const int64_t n = numel(index_shape);
  for (int64_t i = 0; i < n; ++i) {
    f(i, offset);
    for (size_t d = rank; d-- > 0;) {
      ++pos[d];
      if (d != dim) offset += strides[d];
      if (pos[d] < index_shape[d]) break;
      if (d != dim) offset -= strides[d] * index_shape[d];
      pos[d] = 0;
    }
  }
}

// A 0-d gather/scatter is over one element: its dim has size 1.
Shape at_least_1d(const Shape& s) { return s.empty() ? Shape{1} : s; }

size_t kernel_dim(const KernelArgs& k, size_t rank) {
  return static_cast<size_t>(wrap_dim(k.attrs.get_int("dim"), std::max<size_t>(rank, 1), "gather"));
}

// Any dtype: out[p] = in[p with p[dim] = index[p]].
void gather_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  const Buffer& index = *k.inputs[1];
  const Shape full = at_least_1d(in.shape());
  const Shape index_shape = at_least_1d(index.shape());
  const size_t dim = kernel_dim(k, in.shape().size());
  const int64_t size = full[dim], stride = contiguous_strides(full)[dim];
  const int64_t* idx = index.as<int64_t>();
  const size_t elem = dtype_size(in.dtype());
  const auto* src = static_cast<const char*>(in.data());
  auto* out = static_cast<char*>(k.out.data());
  for_each_index_position(index_shape, full, dim, [&](int64_t i, int64_t offset) {
    const int64_t v = idx[i];
    if (v < 0 || v >= size) out_of_range("gather", v, static_cast<int64_t>(dim), size);
    std::memcpy(out + static_cast<size_t>(i) * elem, src + static_cast<size_t>(offset + v * stride) * elem, elem);
  });
}

// out = self, then out[p with p[dim] = index[p]] = src[p] (or += when Add).
template <typename T, bool Add> void scatter_kernel(const KernelArgs& k) {
  const Buffer& self = *k.inputs[0];
  const Buffer& index = *k.inputs[1];
  const Buffer& src = *k.inputs[2];
  const Shape full = at_least_1d(self.shape());
  const Shape index_shape = at_least_1d(index.shape());
  const Shape src_shape = at_least_1d(src.shape());
  const size_t dim = kernel_dim(k, self.shape().size());
  const int64_t size = full[dim], stride = contiguous_strides(full)[dim];
  const int64_t src_stride = contiguous_strides(src_shape)[dim];
  T* out = k.out.as<T>();
  if (k.out.bytes()) std::memcpy(out, self.data(), k.out.bytes());
  const int64_t* idx = index.as<int64_t>();
  const T* values = src.as<T>();
  // The source offsets follow src's strides: walk both with the same positions.
  std::vector<int64_t> src_offsets(static_cast<size_t>(numel(index_shape)));
  for_each_index_position(index_shape, src_shape, dim,
                          [&](int64_t i, int64_t offset) { src_offsets[static_cast<size_t>(i)] = offset; });
  std::vector<int64_t> positions(index_shape.size(), 0);
  const auto index_strides = contiguous_strides(index_shape);
  for_each_index_position(index_shape, full, dim, [&](int64_t i, int64_t offset) {
    const int64_t v = idx[i];
    if (v < 0 || v >= size) out_of_range(Add ? "scatter_add" : "scatter", v, static_cast<int64_t>(dim), size);
    const int64_t along = (i / index_strides[dim]) % index_shape[dim];  // p[dim]: src is read at p itself
    const T value = values[src_offsets[static_cast<size_t>(i)] + along * src_stride];
    T& dst = out[offset + v * stride];
    if constexpr (Add) {
      dst = static_cast<T>(dst + value);
    } else {
      dst = value;
    }
  });
}
template <typename T> void scatter_replace_kernel(const KernelArgs& k) { scatter_kernel<T, false>(k); }
template <typename T> void scatter_add_kernel(const KernelArgs& k) { scatter_kernel<T, true>(k); }

template <typename T> void slice_scatter_kernel(const KernelArgs& k) {
  T* out = k.out.as<T>();
  if (k.out.bytes()) std::memcpy(out, k.inputs[0]->data(), k.out.bytes());
  const T* src = k.inputs[1]->as<T>();
  for_each_sliced(k.out.shape(), k.inputs[1]->shape(), k.attrs, [&](int64_t i, int64_t o) { out[o] = src[i]; });
}

// The flat block of self (in units of the trailing block) that position b of
// the index tensors selects; negative indices count from the end.
int64_t advanced_block(const char* op, const Buffer& self, std::span<const Buffer* const> indices, int64_t b,
                       const Attrs& attrs) {
  const auto& dims = attrs.get_ints("dims");
  int64_t block = 0;
  for (size_t j = 0; j < indices.size(); ++j) {
    const int64_t size = self.shape()[j];
    int64_t v = indices[j]->as<int64_t>()[b];
    if (v < -size || v >= size) out_of_range(op, v, j < dims.size() ? dims[j] : static_cast<int64_t>(j), size);
    if (v < 0) v += size;
    block = block * size + v;
  }
  return block;
}

int64_t trailing_block(const Shape& s, size_t k) {
  int64_t inner = 1;
  for (size_t d = k; d < s.size(); ++d) inner *= s[d];
  return inner;
}

void index_kernel(const KernelArgs& k) {
  const Buffer& self = *k.inputs[0];
  const auto indices = k.inputs.subspan(1);
  const int64_t count = indices[0]->numel();
  const auto block = static_cast<size_t>(trailing_block(self.shape(), indices.size())) * dtype_size(self.dtype());
  const auto* src = static_cast<const char*>(self.data());
  auto* out = static_cast<char*>(k.out.data());
  for (int64_t b = 0; b < count; ++b) {
    const int64_t at = advanced_block("index", self, indices, b, k.attrs);
    if (block) std::memcpy(out + static_cast<size_t>(b) * block, src + static_cast<size_t>(at) * block, block);
  }
}

template <typename T> void index_put_kernel(const KernelArgs& k) {
  const Buffer& self = *k.inputs[0];
  const T* values = k.inputs[1]->as<T>();
  const auto indices = k.inputs.subspan(2);
  const bool accumulate = k.attrs.get_bool("accumulate");
  T* out = k.out.as<T>();
  if (k.out.bytes()) std::memcpy(out, self.data(), k.out.bytes());
  const int64_t count = indices[0]->numel();
  const int64_t inner = trailing_block(self.shape(), indices.size());
  for (int64_t b = 0; b < count; ++b) {
    T* dst = out + advanced_block("index_put", self, indices, b, k.attrs) * inner;
    const T* src = values + b * inner;
    for (int64_t i = 0; i < inner; ++i) dst[i] = accumulate ? static_cast<T>(dst[i] + src[i]) : src[i];
  }
}

// Elements before and after `dim`: a line along dim is outer x inner strided.
struct Lines {
  int64_t outer = 1, size = 1, inner = 1;
};
Lines lines_of(const Shape& s, int64_t dim_attr) {
  Lines l;
  if (s.empty()) return l;
  const auto dim = static_cast<size_t>(wrap_dim(dim_attr, s.size(), "dim"));
  for (size_t d = 0; d < s.size(); ++d) {
    if (d < dim) l.outer *= s[d];
    if (d > dim) l.inner *= s[d];
  }
  l.size = s[dim];
  return l;
}

// Integers compare as themselves (no rounding through double); floats as
// doubles with NaN above everything, as PyTorch sorts.
// The sort order as an unsigned key: values by <, every NaN after every
// number (NaNs equal), -0 equal to +0; descending the reverse, NaNs first
// (PyTorch's order). A float's bits with the sign folded (-0 made +0
// first), NaN the largest key; an integer offset by 2^63; descending
// inverts it. Equal keys are told apart by their index, so one std::sort of
// (key, index) pairs is a stable sort both ways, without a stable merge's
// buffer and an indirect key load per comparison (a [1024, 1024] sort
// with std::stable_sort over indices: 4.4x NumPy's time).
template <typename T> uint64_t order_key(T v, bool descending) {
  uint64_t key;
  if constexpr (std::is_integral_v<T>) {
    key = static_cast<uint64_t>(static_cast<int64_t>(v)) ^ (uint64_t{1} << 63);
  } else {
    double d = to_double(v);
    if (std::isnan(d)) {
      key = ~uint64_t{0};
    } else {
      if (d == 0.0) d = 0.0;
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      key = (bits >> 63) ? ~bits : bits | (uint64_t{1} << 63);
    }
  }
  return descending ? ~key : key;
}

struct SortPair {
  uint64_t key;
  int64_t index;
  bool operator<(const SortPair& other) const { return key != other.key ? key < other.key : index < other.index; }
};

template <typename T> void argsort_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  const Lines l = lines_of(in.shape(), k.attrs.get_int("dim"));
  const bool descending = k.attrs.get_bool("descending");
  const T* src = in.as<T>();
  int64_t* out = k.out.as<int64_t>();
  // Lines are independent: split across the pool, each sorted by one thread.
  parallel_for(l.outer * l.inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, l.size)),
               [&](int64_t n0, int64_t n1) {
                 SortPair* pairs = thread_scratch<SortPair>(kScratchSortPairs, static_cast<size_t>(l.size));
                 for (int64_t n = n0; n < n1; ++n) {
                   const int64_t o = n / l.inner, i = n % l.inner;
                   const int64_t base = o * l.size * l.inner + i;
                   for (int64_t j = 0; j < l.size; ++j) pairs[j] = {order_key(src[base + j * l.inner], descending), j};
                   std::sort(pairs, pairs + l.size);
                   for (int64_t j = 0; j < l.size; ++j) out[base + j * l.inner] = pairs[j].index;
                 }
               });
}

// Accumulates in double for floats and in the type itself for integers (int64 here).
template <typename T, bool Product> void scan_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  const Lines l = lines_of(in.shape(), k.attrs.get_int("dim"));
  const T* src = in.as<T>();
  T* out = k.out.as<T>();
  using Acc = std::conditional_t<std::is_integral_v<T>, T, double>;
  for (int64_t o = 0; o < l.outer; ++o) {
    for (int64_t i = 0; i < l.inner; ++i) {
      const int64_t base = o * l.size * l.inner + i;
      Acc acc = Product ? Acc(1) : Acc(0);
      for (int64_t j = 0; j < l.size; ++j) {
        const T x = src[base + j * l.inner];
        const Acc v = std::is_integral_v<T> ? static_cast<Acc>(x) : static_cast<Acc>(to_double(x));
        acc = Product ? static_cast<Acc>(acc * v) : static_cast<Acc>(acc + v);
        out[base + j * l.inner] = convert<T>(acc);
      }
    }
  }
}
template <typename T> void cumsum_kernel(const KernelArgs& k) { scan_kernel<T, false>(k); }
template <typename T> void cumprod_kernel(const KernelArgs& k) { scan_kernel<T, true>(k); }

// Keeps element (r, c) of each matrix when c - r is on the kept side of the diagonal.
template <typename T, bool Lower> void triangle_kernel(const KernelArgs& k) {
  const Shape& s = k.inputs[0]->shape();
  const int64_t rows = s[s.size() - 2], cols = s.back();
  const int64_t diagonal = k.attrs.get_int("diagonal");
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  const int64_t n = k.out.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = i % cols, r = (i / cols) % rows;
    const bool keep = Lower ? c - r <= diagonal : c - r >= diagonal;
    out[i] = keep ? src[i] : convert<T>(0.0);
  }
}
template <typename T> void tril_kernel(const KernelArgs& k) { triangle_kernel<T, true>(k); }
template <typename T> void triu_kernel(const KernelArgs& k) { triangle_kernel<T, false>(k); }

}  // namespace

void add_index_kernels(Table& t) {
  for (DType d : kAllTypes) {
    t.emplace(Key{OpKind::kGather, d}, gather_kernel);
    t.emplace(Key{OpKind::kIndex, d}, index_kernel);
  }
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kScatter,
                                                                       LAZYSCOPE_KERNEL(scatter_replace_kernel));
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kSliceScatter,
                                                                       LAZYSCOPE_KERNEL(slice_scatter_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kScatterAdd, LAZYSCOPE_KERNEL(scatter_add_kernel));
  // index_put: replacing works for any dtype; accumulating needs arithmetic (bool adds as "or").
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kIndexPut, LAZYSCOPE_KERNEL(index_put_kernel));
  // Sort order for every dtype; the output is int64 whatever the input, so the row is keyed by the input's
  // dtype through a dispatching kernel.
  t.emplace(Key{OpKind::kArgsort, DType::kInt64},
            [](const KernelArgs& k) { dispatch(k.inputs[0]->dtype(), [&]<typename T>() { argsort_kernel<T>(k); }); });
  rows<int64_t, float, double>(t, OpKind::kCumsum, LAZYSCOPE_KERNEL(cumsum_kernel));
  rows<int64_t, float, double>(t, OpKind::kCumprod, LAZYSCOPE_KERNEL(cumprod_kernel));
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kTril, LAZYSCOPE_KERNEL(tril_kernel));
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kTriu, LAZYSCOPE_KERNEL(triu_kernel));
}

}  // namespace lazyscope::cpu
