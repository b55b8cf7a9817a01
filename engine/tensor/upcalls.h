// The calls the tensor layer makes to the layers above it (ARCHITECTURE.md,
// "Engine layers"). Tensors and their ops sit below the executor and
// autograd, which both work on tensors; yet a pending lazy tensor is
// registered with its device's step, reading a value runs the graph, an op
// the backend does not lower runs on the host, and a differentiable op
// records its autograd node. Those calls are declared here, in the tensor
// layer, and defined by the layer their namespace names (executor/
// graph_executor.cpp and fallback.cpp, autograd/autograd.cpp); the engine is
// one shared library, so the linker joins them. This keeps every include
// pointing down (scripts/dev/check_layers.py) and lists the upward calls in
// one place: a new one is a declaration here, visible in review.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/buffer.h"
#include "core/device.h"
#include "ir/attrs.h"
#include "ir/op_table.h"
#include "lazyscope/events.pb.h"
#include "tensor/tensor.h"

namespace lazyscope::executor {

// --- executor/graph_executor.cpp ---

// Called for every lazy tensor created with a pending IR node (and again
// when a tensor is rebound in place to a new pending value: it moves to the
// end of the list, where its latest value was traced).
// `trace_slot`: the tensor's node is the one traced at that place of the
// step (trace_reused's slot), for the next step to reuse.
void register_pending(const std::shared_ptr<TensorImpl>& tensor, size_t trace_slot = kNoTraceSlot);
// Called by a registered tensor's destructor: it leaves the list.
void unregister_pending(TensorImpl& tensor) noexcept;

// Trace replay (settings::reuse_ir_nodes): the ops of apply()'s direct path
// take consecutive places (slots) in their device's step. Gives the op its
// slot (`*slot`; kNoTraceSlot when nothing is recorded). When the previous
// step traced the same op there, with equal attributes, the same source
// line and scope, on the very same operand nodes (the same value), and the
// device still runs it, sets `out` to a new tensor of that node, registered
// under the same lock: true. Else false: build a node and pass the slot on
// (Tensor::lazy).
bool trace_reused(const Device& device, OpKind op, std::span<const Node* const> operands, const Attrs& attrs,
                  const SourceLocation& source, const std::string* scope, size_t* slot, Tensor& out);

// Runs what `targets` need (all pending tensors of the device when empty)
// and binds the results. `cause` and the caller's source line are recorded.
// Returns how many computed (non-input) nodes the execution ran.
int64_t sync(const Device& device, const std::vector<std::shared_ptr<TensorImpl>>& targets, pb::SyncCause cause);

// Transfers are part of a step's time breakdown; tensor.cpp reports them.
void note_transfer(const Device& device, bool to_device, int64_t start_ns, int64_t duration_ns, int64_t bytes);

// --- executor/fallback.cpp: CPU fallbacks ---
// An op that a lazy device's backend does not lower (or that the user forced
// off the device, or whose output shape depends on values) runs on the host.
// Its operands are synced — which cuts the pending graph there — downloaded,
// computed by a host function, and the results uploaded as device data. Each
// fallback is counted per op ("Fallback.<op>"), timed ("FallbackTime.<op>"),
// and published as a FallbackEvent with the user's line.

// Why `op` producing `dtype` must leave the device: FORCED (named in
// LAZYSCOPE_FORCE_FALLBACK), NOT_LOWERED (the device's backend does not list
// it), or UNSPECIFIED when it runs on the device.
pb::FallbackReason fallback_reason(OpKind op, DType dtype);

// Computes outputs from host copies of the inputs (same order).
using HostFn = std::function<std::vector<BufferPtr>(const std::vector<const Buffer*>& inputs)>;

// Runs `fn` on the host for `inputs` on one lazy device and returns its
// results as tensors on that device. `dtype` is what the event reports.
std::vector<Tensor> run_on_host(std::string_view op, pb::FallbackReason reason, DType dtype,
                                const std::vector<Tensor>& inputs, const HostFn& fn);

}  // namespace lazyscope::executor

namespace lazyscope::autograd {

// --- autograd/autograd.cpp ---

// Grad mode is per thread, like PyTorch's: off, ops record nothing.
bool grad_enabled();
void set_grad_enabled(bool enabled);

class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Called by ops::apply() after every op: when grad mode is on, the op is
// differentiable, the result is floating and an input requires grad, gives
// `out` a GradFn.
void record(OpKind op, const std::vector<Tensor>& inputs, const Attrs& attrs, const Tensor& out);

// Runs the graph behind `root` in reverse topological order, accumulating
// into the .grad of every leaf that requires grad. `gradient` undefined:
// root must hold one element. Without retain_graph the saved tensors are
// freed, and a second backward through them is an error. With
// create_graph the pass itself is recorded (grad mode on while the rules
// run), so the gradients it leaves have a graph of their own: higher-order
// gradients (a gradient op without a rule of its own is then an error
// naming it).
void backward(const Tensor& root, const Tensor& gradient, bool retain_graph, bool create_graph = false);

// torch.autograd.grad: the gradients of the outputs (seeded with
// grad_outputs, or ones for one-element outputs) with respect to `inputs`,
// returned, no .grad written anywhere. An input the outputs do not depend
// on is an error, or undefined with allow_unused. create_graph as backward.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                         const std::vector<Tensor>& inputs, bool retain_graph, bool allow_unused,
                         bool create_graph = false);

// Whether a backward pass with create_graph is running on this thread (the
// rules then compose differentiable ops where they would call a gradient
// kernel that has no rule of its own).
bool building_higher_order();

}  // namespace lazyscope::autograd
