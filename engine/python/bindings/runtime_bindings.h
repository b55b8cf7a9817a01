#pragma once

#include <pybind11/pybind11.h>

#include "bindings/tensor_caster.h"

namespace lazyscope::python {

// Fallback settings, bf16 mode, scalar logging, metric snapshots, the
// metrics API behind lazyscope.debug.metrics, graph dumps, and the
// data-dependent ops (nonzero, masked_select, unique).
void bind_runtime(pybind11::module_& m);

}  // namespace lazyscope::python
