#pragma once

#include <pybind11/pybind11.h>

#include "bindings/tensor_caster.h"

namespace lazyscope::python {

// Tensor, dtype and device classes, creation from NumPy, and the ops.
void bind_tensor(pybind11::module_& m);
// Convolution, pooling, normalization, dropout (nn_bindings.cpp).
void bind_nn(pybind11::module_& m);

}  // namespace lazyscope::python
