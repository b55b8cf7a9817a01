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
#include "tensor/grad_fn.h"
#include "tensor/tensor.h"
#include "tensor/upcalls.h"

namespace lazyscope::autograd {

// GradFn, the node every result of a differentiable op holds, is declared in
// tensor/grad_fn.h (views update its saved version); grad mode
// (grad_enabled, NoGradGuard), record() and backward(), which the tensor
// layer calls, in tensor/upcalls.h.

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

}  // namespace lazyscope::autograd
