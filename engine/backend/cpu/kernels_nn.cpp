// Kernels of the neural-network ops that read integer data: one_hot and
// nll_loss. Out-of-range class values are an IndexError naming the op and
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

}  // namespace

void add_nn_kernels(Table& t) {
  t.emplace(Key{OpKind::kOneHot, DType::kInt64}, one_hot_kernel);
  rows<float, double>(t, OpKind::kNllLoss, LAZYSCOPE_KERNEL(nll_loss_kernel));
}

}  // namespace lazyscope::cpu
