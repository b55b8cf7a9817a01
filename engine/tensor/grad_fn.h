// The autograd graph's node, declared in the tensor layer because tensors
// own it (TensorImpl::grad_fn) and in-place ops on views update the version
// it saved (views.cpp); autograd (autograd/autograd.h), a layer above,
// creates and runs it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "ir/attrs.h"
#include "ir/op_table.h"
#include "tensor/tensor.h"

namespace lazyscope::autograd {

// One node of the autograd graph: an op that ran (or, for a leaf that
// requires grad, the accumulator into its .grad). It owns what its rule
// needs and the edges to the nodes of its inputs. Ownership runs from
// outputs to inputs only: a result's TensorImpl owns its GradFn, which owns
// the input tensors and the input GradFns; the result itself is saved
// detached (output), so there is no cycle.
struct GradFn {
  OpKind op = OpKind::kDeviceData;
  Attrs attrs;
  std::vector<Tensor> inputs;  // the operands as the op saw them (after promotion)
  Tensor output;               // the result, detached
  // The live result, when still alive: once a sync has materialized it,
  // the rule reads its buffer instead of re-tracing `output`'s node.
  std::weak_ptr<TensorImpl> live_output;
  // The data versions of the inputs and the output when saved: backward
  // refuses to use a saved value that an in-place op has changed since.
  std::vector<uint64_t> input_versions;
  uint64_t output_version = 0;
  std::vector<Shape> input_shapes;
  std::vector<DType> input_dtypes;
  // Per input: the GradFn its gradient flows to (null: no gradient needed).
  std::vector<std::shared_ptr<GradFn>> next;
  // Accumulators only: the leaf whose .grad receives the gradient.
  std::shared_ptr<TensorImpl> leaf;
  bool released = false;  // saved tensors freed by a backward without retain_graph
  // The hooks registered on the result (register_hook), shared with its
  // TensorImpl: they run on the gradient reaching this node even when the
  // caller dropped the result (autograd.Function's outputs, a hooked
  // intermediate nobody holds), as PyTorch keeps tensor hooks on the node.
  std::shared_ptr<struct GradHooks> hooks;

  bool is_accumulator() const { return leaf != nullptr; }
};

// What a tensor asks of the gradient that reaches it (Tensor.register_hook,
// retain_grad): hooks run in registration order on that gradient, each
// given the previous one's result (an undefined result keeps the gradient);
// for a leaf before it is accumulated into .grad, for any other tensor
// before it flows on. `retain` keeps a non-leaf's gradient in its .grad.
// Held by the TensorImpl (null for the tensors that ask nothing).
struct GradHooks {
  using Hook = std::function<Tensor(const Tensor&)>;
  std::vector<std::pair<uint64_t, Hook>> hooks;
  uint64_t next_id = 1;
  bool retain = false;
};

}  // namespace lazyscope::autograd
