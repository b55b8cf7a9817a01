#pragma once

#include <pybind11/pybind11.h>

#include <optional>

#include "bindings/tensor_caster.h"

namespace lazyscope::python {

// Tensor, dtype and device classes, creation from NumPy, and the ops.
void bind_tensor(pybind11::module_& m);
// Convolution, pooling, normalization, dropout (nn_bindings.cpp).
void bind_nn(pybind11::module_& m);
// The optimizers' per-step updates over all parameters in one call (optim_bindings.cpp).
void bind_optim(pybind11::module_& m);

// An op's other operand as Python gives it: a tensor, or a number that
// becomes a wrapped scalar on `like`'s device (it promotes like a scalar, as
// `t * 0.9` does). try_operand: nullopt for anything else; operand: TypeError.
std::optional<Tensor> try_operand(const Tensor& like, const pybind11::handle& v);
Tensor operand(const Tensor& like, const pybind11::handle& v);

}  // namespace lazyscope::python
