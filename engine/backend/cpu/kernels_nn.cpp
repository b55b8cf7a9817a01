// Kernels of the neural-network ops that read integer data: one_hot,
// nll_loss and its gradient. Out-of-range class values are an IndexError naming the op and
// the value; on a lazy device they surface at the sync that runs the graph.
#include <string>

#include "backend/cpu/kernel_util.h"
#include "core/error.h"

namespace lazyscope::cpu {
namespace {

void one_hot_kernel(const KernelArgs& k) {
  const int64_t classes = k.attrs.get_int("num_classes");
  int64_t* out = k.out.as<int64_t>();
  std::fill(out, out + k.out.numel(), int64_t{0});
  const Buffer& in = *k.inputs[0];
  const int64_t n = in.numel();
  dispatch(in.dtype(), [&]<typename T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* src = in.as<T>();
      for (int64_t i = 0; i < n; ++i) {
        const auto v = static_cast<int64_t>(src[i]);
        if (v < 0 || v >= classes) {
          throw IndexError("one_hot: class value " + std::to_string(v) + " is out of range for num_classes " +
                           std::to_string(classes) + " (element " + std::to_string(i) + ")");
        }
        out[i * classes + v] = 1;
      }
    } else {
      throw EngineError("one_hot: expected an integer tensor");
    }
  });
}

// reduction: 0 none, 1 mean (over the targets not ignored), 2 sum.
template <typename T> void nll_loss_kernel(const KernelArgs& k) {
  const Buffer& x = *k.inputs[0];
  const int64_t* target = k.inputs[1]->as<int64_t>();
  const int64_t n = x.shape()[0], classes = x.shape()[1];
  const int64_t reduction = k.attrs.get_int("reduction");
  const int64_t ignore = k.attrs.get_int("ignore_index");
  const T* src = x.as<T>();
  T* out = k.out.as<T>();
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = target[i];
    double loss = 0;
    if (t != ignore) {
      if (t < 0 || t >= classes) {
        throw IndexError("nll_loss: target " + std::to_string(t) + " is out of bounds for " + std::to_string(classes) +
                         " classes (sample " + std::to_string(i) + ")");
      }
      loss = -static_cast<double>(src[i * classes + t]);
      ++count;
    }
    if (reduction == 0) out[i] = static_cast<T>(loss);
    total += loss;
  }
  if (reduction == 1) out[0] = static_cast<T>(total / static_cast<double>(count));  // none counted: NaN, as PyTorch
  if (reduction == 2) out[0] = static_cast<T>(total);
}

// nll_loss's gradient: out[i, c] = -(p * scale_i), p = 1 where c is sample
// i's target and it is not ignored, else 0; scale_i = grad[i] (none), grad
// (sum) or grad / the count of targets kept (mean), all in T. The same
// operations, in the same dtype, as the composite it replaces (ne, where,
// one_hot, cast, mul by the mask, div by its sum, mul, neg): the same bits,
// -0 and NaN (0 * inf when every target is ignored) included.
template <typename T> void nll_loss_backward_kernel(const KernelArgs& k) {
  const T* grad = k.inputs[0]->as<T>();
  const int64_t* target = k.inputs[1]->as<int64_t>();
  const int64_t n = k.inputs[1]->numel(), classes = k.attrs.get_int("classes");
  const int64_t reduction = k.attrs.get_int("reduction");
  const int64_t ignore = k.attrs.get_int("ignore_index");
  T count = 0;  // summed in T, as the composite's sum of the float mask
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = target[i];
    if (t == ignore) continue;
    if (t < 0 || t >= classes) {
      throw IndexError("nll_loss_backward: target " + std::to_string(t) + " is out of bounds for " +
                       std::to_string(classes) + " classes (sample " + std::to_string(i) + ")");
    }
    count = static_cast<T>(count + T(1));
  }
  T* out = k.out.as<T>();
  const T shared = reduction == 1 ? static_cast<T>(grad[0] / count) : grad[0];
  for (int64_t i = 0; i < n; ++i) {
    const T scale = reduction == 0 ? grad[i] : shared;
    const T zero = static_cast<T>(-(T(0) * scale)), one = static_cast<T>(-(T(1) * scale));
    T* row = out + i * classes;
    std::fill(row, row + classes, zero);
    if (target[i] != ignore) row[target[i]] = one;
  }
}

// Reads index[k] for a dim of `size`; an IndexError names the op and value.
int64_t checked_index(const char* op, const int64_t* index, int64_t k, int64_t size, size_t dim) {
  const int64_t v = index[k];
  if (v < 0 || v >= size) {
    throw IndexError(std::string(op) + ": index " + std::to_string(v) + " is out of range for dimension " +
                     std::to_string(dim) + " of size " + std::to_string(size));
  }
  return v;
}

struct IndexPlan {
  size_t dim;
  int64_t outer, inner, size, count;  // size: the indexed dim of the full tensor; count: of the index
};

IndexPlan index_plan(const Shape& full, const Attrs& attrs, int64_t count) {
  IndexPlan p{static_cast<size_t>(wrap_dim(attrs.get_int("dim"), full.size(), "index")), 1, 1, 0, count};
  for (size_t d = 0; d < full.size(); ++d) {
    if (d < p.dim) p.outer *= full[d];
    if (d > p.dim) p.inner *= full[d];
  }
  p.size = full[p.dim];
  return p;
}

// Any dtype: memcpy of the selected inner blocks.
void index_select_kernel(const KernelArgs& k) {
  const Buffer& in = *k.inputs[0];
  const int64_t* index = k.inputs[1]->as<int64_t>();
  const IndexPlan p = index_plan(in.shape(), k.attrs, k.inputs[1]->numel());
  const size_t block = static_cast<size_t>(p.inner) * dtype_size(in.dtype());
  const auto* src = static_cast<const char*>(in.data());
  auto* out = static_cast<char*>(k.out.data());
  for (int64_t j = 0; j < p.count; ++j) checked_index("index_select", index, j, p.size, p.dim);
  if (!block) return;
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t j = 0; j < p.count; ++j) {
      std::memcpy(out + static_cast<size_t>(o * p.count + j) * block,
                  src + static_cast<size_t>(o * p.size + index[j]) * block, block);
    }
  }
}

template <typename T> void index_add_kernel(const KernelArgs& k) {
  const Buffer& self = *k.inputs[0];
  const int64_t* index = k.inputs[1]->as<int64_t>();
  const T* source = k.inputs[2]->as<T>();
  const IndexPlan p = index_plan(self.shape(), k.attrs, k.inputs[1]->numel());
  T* out = k.out.as<T>();
  if (k.out.bytes()) std::memcpy(out, self.data(), k.out.bytes());
  for (int64_t j = 0; j < p.count; ++j) checked_index("index_add", index, j, p.size, p.dim);
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t j = 0; j < p.count; ++j) {
      T* dst = out + (o * p.size + index[j]) * p.inner;
      const T* src = source + (o * p.count + j) * p.inner;
      for (int64_t i = 0; i < p.inner; ++i) dst[i] = static_cast<T>(dst[i] + src[i]);
    }
  }
}

}  // namespace

void add_nn_kernels(Table& t) {
  t.emplace(Key{OpKind::kOneHot, DType::kInt64}, one_hot_kernel);
  rows<float, double>(t, OpKind::kNllLoss, LAZYSCOPE_KERNEL(nll_loss_kernel));
  rows<float, double>(t, OpKind::kNllLossBackward, LAZYSCOPE_KERNEL(nll_loss_backward_kernel));
  for (DType d : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat32, DType::kFloat64}) {
    t.emplace(Key{OpKind::kIndexSelect, d}, index_select_kernel);
  }
  rows<uint8_t, int32_t, int64_t, float, double>(t, OpKind::kIndexAdd, LAZYSCOPE_KERNEL(index_add_kernel));
}

}  // namespace lazyscope::cpu
