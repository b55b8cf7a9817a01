// Tensors. A tensor on the eager cpu device always holds a buffer. A tensor
// on a lazy device holds an IR node: a pending computation, or — once a sync
// has run it — a device-data leaf wrapping its buffer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "core/device.h"
#include "ir/node.h"
#include "lazyscope/events.pb.h"

namespace lazyscope {

namespace autograd {
struct GradFn;     // tensor/grad_fn.h
struct GradHooks;  // tensor/grad_fn.h
}  // namespace autograd
struct ViewInfo;  // tensor/views.h

// No place in the step's trace (executor::trace_reused).
inline constexpr size_t kNoTraceSlot = SIZE_MAX;
struct TensorImpl;

// A tensor's place in its lazy device's list of pending tensors (the
// executor's registry, graph_executor.cpp), or in the list of a sync that is
// running its value. The lists link the tensors themselves: registering
// allocates nothing, a tensor that dies unlinks itself (so a sync walks only
// live tensors, not one dead entry per op traced), and its memory goes back
// to the pool at once. Never copied.
struct PendingLink {
  std::atomic<const void*> list{nullptr};  // the list that holds the tensor; null: none
  TensorImpl* prev = nullptr;              // guarded by the device's list lock
  TensorImpl* next = nullptr;
  size_t output = 0;  // in a sync's list: the tensor's place among the graph's outputs
  PendingLink() = default;
  PendingLink(const PendingLink&) {}
  PendingLink& operator=(const PendingLink&) { return *this; }
};

// No enable_shared_from_this: the registry links bare pointers and a sync
// binds its results through them under the registry's lock (a tensor's
// destructor waits for it), never taking a reference. The weak
// self-reference cost every tensor made three atomic operations (set,
// dropped, and its last release kept off the both-counts-one fast path).
struct TensorImpl {
  // User-provided, not `= default`: make_shared value-initializes, which for
  // a defaulted constructor zeroes the whole ~200-byte object first (a `rep
  // stos`, 11% of a replayed 1,000-op step's time) and then stores every
  // member's initializer again. Every member has an initializer instead.
  TensorImpl() {}  // NOLINT(modernize-use-equals-default): see above
  TensorImpl(const TensorImpl&) = default;
  TensorImpl& operator=(const TensorImpl&) = default;
  ~TensorImpl();  // unlinks the tensor from its registry

  Device device;
  TensorSpec spec{};  // dtype 0 (bool) until set, as value-initialization gave
  BufferPtr buffer;   // set when the value is materialized
  NodePtr ir;         // lazy devices only
  // A Python scalar turned into a 0-d tensor: it promotes like a number, not
  // a tensor (int32 tensor + 5 stays int32; int tensor * 2.5 is float32).
  bool wrapped_number = false;

  // Autograd (see autograd/autograd.h). A result of a differentiable op on
  // inputs that require grad holds the node that computed it; a leaf that
  // requires grad holds its .grad and, weakly, its accumulator node.
  bool requires_grad = false;
  std::shared_ptr<autograd::GradFn> grad_fn;
  std::weak_ptr<autograd::GradFn> grad_accumulator;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<autograd::GradHooks> grad_hooks;  // register_hook / retain_grad; null when none

  // In-place ops and views (tensor/views.h). The version counts the in-place
  // writes to the data, shared by a base and its views (null: never written,
  // version 0); autograd compares it with the version it saved. A view knows
  // its base and how to regenerate itself from it and write itself back.
  std::shared_ptr<uint64_t> version;
  std::shared_ptr<ViewInfo> view;

  PendingLink pending_link;

  bool pending() const { return ir && !ir->is_leaf(); }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A tensor holding `buffer` on `device` (which takes the buffer as is).
  static Tensor wrap(BufferPtr buffer, const Device& device);
  // A tensor whose value is the pending node `ir` on lazy `device`;
  // `trace_slot`: executor::trace_reused's slot of the op that made it.
  static Tensor lazy(NodePtr ir, const Device& device, size_t trace_slot = kNoTraceSlot);
  // A tensor on `device` holding a copy of the host data at `data` (`shape`
  // of `dtype`, row-major, contiguous). On a lazy device the bytes are copied
  // once, straight into the device's buffer (a transfer, counted and timed as
  // to()'s), not into a host buffer first and then again by to().
  static Tensor from_host(const void* data, DType dtype, Shape shape, const Device& device);

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

  // Autograd. requires_grad() is true for leaves marked so and for results
  // computed from them; only leaves can be marked (set_requires_grad).
  bool requires_grad() const { return impl_->requires_grad; }
  void set_requires_grad(bool requires_grad);
  bool is_leaf() const { return impl_->grad_fn == nullptr; }
  // The accumulated gradient of a leaf; undefined when none yet.
  Tensor grad() const { return Tensor(impl_->grad); }
  void set_grad(const Tensor& grad);
  // The same value (buffer or IR node shared), cut from the autograd graph.
  Tensor detach() const;
  // Accumulates d(this)/d(leaf) . gradient into every leaf's grad. Without a
  // gradient the tensor must hold one element (the gradient is 1).
  void backward(const Tensor& gradient = {}, bool retain_graph = false, bool create_graph = false) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace lazyscope
