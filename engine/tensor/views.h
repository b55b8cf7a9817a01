// Views and in-place ops on tensors whose buffers never alias.
//
// Buffers are immutable and lazy values are IR nodes, so an in-place op is
// functional underneath: it computes the new value and rebinds the tensor
// (its TensorImpl, which the Python object and every C++ handle share) to
// it. A view (x[0], x.view(...), x.t(), x.detach(), ...) is a tensor that
// remembers its base, how to regenerate itself from the base and how to
// write a new value of itself back into the base:
//   - a write through a view computes the base's new value (slice_scatter,
//     a reshape back, an inverse permute) and rebinds the base, up the chain;
//   - base and views share a version counter; a view whose base was written
//     since it last looked is regenerated before its next use, so siblings
//     see each other's writes.
// Expanded views refuse writes (several elements would share one location).
// Autograd follows PyTorch: an in-place op on a leaf that requires grad (or
// a view of one) raises while grad mode is on; a saved value changed in
// place makes backward raise (the version counter).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace lazyscope {

struct ViewInfo {
  std::shared_ptr<TensorImpl> base;  // the tensor viewed (itself possibly a view)
  std::function<Tensor(const Tensor& base)> regenerate;
  // The base's new value given the view's; null when the view is read-only.
  std::function<Tensor(const Tensor& base, const Tensor& value)> write_back;
  const char* kind = "view";  // for messages
  bool data_only = false;     // detach()/.data: the data is shared, not the autograd history
  bool grad_mode = true;      // grad mode at creation, restored to regenerate
  uint64_t seen = 0;          // the version the view's value reflects
};

namespace views {

uint64_t version_of(const TensorImpl& t);

// Brings a view whose base was written since up to date (a no-op otherwise).
// ops::apply() and the value reads call it on every operand.
void refresh(const Tensor& t);
inline void refresh_if_view(const Tensor& t) {
  if (t.defined() && t.impl()->view) refresh(t);
}

// Makes `view` (computed from `base`) a view of it: `regenerate` recomputes
// it from the base, `write_back` gives the base's value with the view's
// replaced (null: writes refused). An identity result (the base itself) is
// returned as is: it aliases trivially.
Tensor make_view(const Tensor& base, const Tensor& view, std::function<Tensor(const Tensor&)> regenerate,
                 std::function<Tensor(const Tensor&, const Tensor&)> write_back, const char* kind,
                 bool data_only = false);

// The user-visible views. Each returns a tensor of its own that aliases `a`.
Tensor reshape(const Tensor& a, std::vector<int64_t> shape);
Tensor permute(const Tensor& a, std::vector<int64_t> dims);
Tensor expand(const Tensor& a, std::vector<int64_t> shape);               // read-only
Tensor index(const Tensor& a, const std::vector<ops::IndexItem>& items);  // basic items only
Tensor slice(const Tensor& a, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> steps);
Tensor detach(const Tensor& a);

// Runs `compute` on a snapshot of `self` and rebinds `self` (and, through
// views, its bases) to the result, cast to self's dtype. The result must
// have self's shape; its dtype must be castable (no float into an integer
// tensor, no number into bool), as in PyTorch. `op` names the op in errors
// ("add_"). Returns self.
Tensor inplace(const Tensor& self, const char* op, const std::function<Tensor(const Tensor& before)>& compute);

}  // namespace views
}  // namespace lazyscope
