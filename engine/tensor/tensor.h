// Tensors. A tensor on the eager cpu device always holds a buffer. A tensor
// on a lazy device holds an IR node: a pending computation, or — once a sync
// has run it — a device-data leaf wrapping its buffer.
#pragma once

#include <memory>
#include <vector>

#include "backend/buffer.h"
#include "core/device.h"
#include "ir/node.h"
#include "lazyscope/events.pb.h"

namespace lazyscope {

struct TensorImpl {
  Device device;
  TensorSpec spec;
  BufferPtr buffer;  // set when the value is materialized
  NodePtr ir;        // lazy devices only
  // A Python scalar turned into a 0-d tensor: it promotes like a number, not
  // a tensor (int32 tensor + 5 stays int32; int tensor * 2.5 is float32).
  bool wrapped_number = false;

  bool pending() const { return ir && !ir->is_leaf(); }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A tensor holding `buffer` on `device` (which takes the buffer as is).
  static Tensor wrap(BufferPtr buffer, const Device& device);
  // A tensor whose value is the pending node `ir` on lazy `device`.
  static Tensor lazy(NodePtr ir, const Device& device);

  bool defined() const { return impl_ != nullptr; }
  const Device& device() const { return impl_->device; }
  const Shape& shape() const { return impl_->spec.shape; }
  DType dtype() const { return impl_->spec.dtype; }
  int64_t numel() const { return lazyscope::numel(shape()); }
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

  // The value as a host buffer, running the pending graph it needs (and only
  // that) first; `cause` is recorded with the execution.
  BufferPtr host_buffer(pb::SyncCause cause) const;
  // Copies to `device` (a transfer when either side is lazy). Views are not
  // preserved across devices, as the seeds document.
  Tensor to(const Device& device) const;
  // Converts to `dtype` (a cast op; the same tensor when the dtype matches).
  Tensor to(DType dtype) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace lazyscope
