// A thin callable around each binding that turns pybind11's argument-type
// errors into PyTorch-worded ones (see lazyscope/_signatures.py), at the cost
// of one C call on the success path (a Python wrapper function cost ~0.5 us
// per call, a fifth of a small eager op).
#pragma once

#include <pybind11/pybind11.h>

namespace lazyscope::python {

// Adds _C._clean_errors(fn, name, method, formatter): a callable that calls fn
// and, when fn raises pybind11's "incompatible function arguments" TypeError
// or "Unable to cast Python instance" error, raises formatter(name, fn, method,
// args, kwargs, message) instead. With method=True it binds like a function
// (obj.name(...) passes obj first).
void bind_arg_errors(pybind11::module_& m);

}  // namespace lazyscope::python
