// Reverse-mode autograd on both devices. The graph is built at the call:
// ops::apply() records a GradFn for every differentiable op whose inputs
// require grad. Gradient rules are one table, OpKind -> rule, written in the
// engine's own ops (gradients.cpp), so a backward pass over lazy tensors is
// traced like any other code and becomes part of the step's graph.
#pragma once

#include <memory>
#include <vector>

#include "ir/attrs.h"
#include "ir/op_table.h"
#include "tensor/tensor.h"

namespace lazyscope::autograd {

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

  bool is_accumulator() const { return leaf != nullptr; }
};

// Which saved values a rule reads: the inputs (bit i for input i) and the
// output. An in-place change to a saved value that the rule does not read
// (add's inputs, say) is no error. Declared in each rule's row (gradients.cpp).
struct SavedUse {
  uint32_t inputs;
  bool output;
  bool reads_input(size_t i) const { return i < 32 && (inputs >> i & 1u); }
};

// What a gradient rule sees of the forward call. Saved values are read
// through input() and output(), which throw for a value the rule's row does
// not declare: backward checks only declared values for in-place changes, so
// an undeclared read would silently skip that check. Shapes are always free.
struct SavedContext {
  OpKind op;
  SavedUse use;
  const std::vector<Tensor>& saved_inputs;
  const Tensor& saved_output;
  const std::vector<Shape>& input_shapes;
  const Attrs& attrs;
  const std::vector<bool>& needs_grad;  // per input

  const Tensor& input(size_t i) const;
  const Tensor& output() const;
  const Shape& shape(size_t i) const { return input_shapes[i]; }
  size_t num_inputs() const { return input_shapes.size(); }
  bool needs(size_t i) const { return needs_grad[i]; }
};

// Gradients with respect to each input, given the gradient of the output.
// An entry may be undefined (no gradient needed) or of the output's shape:
// the engine sums broadcast dims back down to the input's shape.
using GradRule = std::vector<Tensor> (*)(const SavedContext& ctx, const Tensor& grad);

// The rule of `op`; nullptr when the op is not differentiable (comparisons,
// argmax, any/all, logical ops).
GradRule grad_rule(OpKind op);

// The saved values op's gradient rule reads (its row in gradients.cpp).
SavedUse saved_use(OpKind op);

// Called by ops::apply() after every op: when grad mode is on, the op is
// differentiable, the result is floating and an input requires grad, gives
// `out` a GradFn.
void record(OpKind op, const std::vector<Tensor>& inputs, const Attrs& attrs, const Tensor& out);

// Runs the graph behind `root` in reverse topological order, accumulating
// into the .grad of every leaf that requires grad. `gradient` undefined:
// root must hold one element. Without retain_graph the saved tensors are
// freed, and a second backward through them is an error.
void backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace lazyscope::autograd
