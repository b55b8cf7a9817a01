// Layout kernels (reshape, permute, expand) and matmul. Layout ops copy:
// buffers are always row-major and contiguous, so a reshape is a memcpy and
// a permute or expand is a gather over input strides.
#include <cblas.h>

#include <algorithm>

#include "backend/cpu/kernel_util.h"

namespace lazyscope::cpu {
namespace {

template <typename T> void reshape_kernel(const KernelArgs& k) {
  if (k.out.bytes()) std::memcpy(k.out.data(), k.inputs[0]->data(), k.out.bytes());
}

// Walks the output row-major while following the input strides of the
// permuted dims.
template <typename T> void permute_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  const auto& dims = k.attrs.get_ints("dims");
  const auto in_strides = contiguous_strides(in.shape());
  const Shape& out_shape = k.out.shape();
  const size_t rank = out_shape.size();
  std::vector<int64_t> strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = dims[i] < 0 ? dims[i] + static_cast<int64_t>(rank) : dims[i];
    strides[i] = in_strides[static_cast<size_t>(d)];
  }
  const T* src = in.as<T>();
  T* out = k.out.as<T>();
  std::vector<int64_t> index(rank, 0);
  int64_t o = 0;
  const int64_t n = k.out.numel();
  for (int64_t i = 0; i < n; ++i) {
    out[i] = src[o];
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      o += strides[d];
      if (index[d] < out_shape[d]) break;
      o -= strides[d] * out_shape[d];
      index[d] = 0;
    }
  }
}

template <typename T> void expand_kernel(const KernelArgs& k) {
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for_each_broadcast<1>(k.out.shape(), {&k.inputs[0]->shape()},
                        [&](int64_t i, const std::array<int64_t, 1>& o) { out[i] = src[o[0]]; });
}

// Elements before and after `dim` of `shape`, as block counts for memcpy.
std::pair<int64_t, int64_t> outer_inner(const Shape& shape, size_t dim) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  return {outer, inner};
}

// Any dtype: contiguous blocks of each operand in turn, per outer index.
void cat_kernel(const KernelArgs& k) {
  const Shape& os = k.out.shape();
  const auto dim = static_cast<size_t>(wrap_dim(k.attrs.get_int("dim"), os.size(), "cat"));
  const auto [outer, inner] = outer_inner(os, dim);
  const size_t elem = dtype_size(k.out.dtype());
  auto* out = static_cast<char*>(k.out.data());
  const auto out_block = static_cast<size_t>(os[dim] * inner) * elem;
  size_t offset = 0;
  for (const Buffer* in : k.inputs) {
    const auto block = static_cast<size_t>(in->shape()[dim] * inner) * elem;
    const auto* src = static_cast<const char*>(in->data());
    for (int64_t o = 0; o < outer && block; ++o) {
      std::memcpy(out + static_cast<size_t>(o) * out_block + offset, src + static_cast<size_t>(o) * block, block);
    }
    offset += block;
  }
}

template <typename T> void slice_kernel(const KernelArgs& k) {
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for_each_sliced(k.inputs[0]->shape(), k.out.shape(), k.attrs, [&](int64_t i, int64_t o) { out[i] = src[o]; });
}

template <typename T> void slice_backward_kernel(const KernelArgs& k) {
  const T* src = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  std::fill(out, out + k.out.numel(), convert<T>(0.0));
  for_each_sliced(k.out.shape(), k.inputs[0]->shape(), k.attrs, [&](int64_t i, int64_t o) { out[o] = src[i]; });
}

// One [m,k] x [k,n] product at the given pointers. OpenBLAS for floating
// types; a plain loop for integers, which no training step multiplies at scale.
template <typename T> void gemm(const T* a, const T* b, T* out, int64_t m, int64_t kk, int64_t n) {
  if (kk == 0) {
    std::fill(out, out + m * n, T(0));
    return;
  }
  if (m == 0 || n == 0) return;
  const int mi = static_cast<int>(m), ki = static_cast<int>(kk), ni = static_cast<int>(n);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0f, a, ki, b, ni, 0.0f, out, ni);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0, a, ki, b, ni, 0.0, out, ni);
  } else {
    std::fill(out, out + m * n, T(0));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < kk; ++p)
        for (int64_t j = 0; j < n; ++j) out[i * n + j] = static_cast<T>(out[i * n + j] + a[i * kk + p] * b[p * n + j]);
  }
}

// [..., m, k] x [..., k, n]: the batch dims broadcast, each batch is one gemm.
template <typename T> void matmul_kernel(const KernelArgs& k) {
  const Shape& as = k.inputs[0]->shape();
  const Shape& bs = k.inputs[1]->shape();
  const Shape& os = k.out.shape();
  const int64_t m = as[as.size() - 2], kk = as.back(), n = bs.back();
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2), o_batch(os.begin(), os.end() - 2);
  const T* a = k.inputs[0]->as<T>();
  const T* b = k.inputs[1]->as<T>();
  T* out = k.out.as<T>();
  for_each_broadcast<2>(o_batch, {&a_batch, &b_batch}, [&](int64_t i, const std::array<int64_t, 2>& o) {
    gemm(a + o[0] * m * kk, b + o[1] * kk * n, out + i * m * n, m, kk, n);
  });
}

}  // namespace

void add_layout_kernels(Table& t) {
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kReshape, LAZYSCOPE_KERNEL(reshape_kernel));
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kPermute, LAZYSCOPE_KERNEL(permute_kernel));
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kExpand, LAZYSCOPE_KERNEL(expand_kernel));
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kMatmul, LAZYSCOPE_KERNEL(matmul_kernel));
  for (DType d : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat32, DType::kFloat64}) {
    t.emplace(Key{OpKind::kCat, d}, cat_kernel);
  }
  rows<bool, uint8_t, int32_t, int64_t, Half, BFloat16, float, double>(t, OpKind::kSlice, LAZYSCOPE_KERNEL(slice_kernel));
  rows<bool, uint8_t, int32_t, int64_t, float, double>(t, OpKind::kSliceBackward, LAZYSCOPE_KERNEL(slice_backward_kernel));
}

}  // namespace lazyscope::cpu
