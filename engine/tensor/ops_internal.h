#pragma once
// Helpers shared by the files that implement tensor/ops.h (ops.cpp, ops_shape.cpp,
// ops_index.cpp, ops_loss.cpp); not part of the engine's interface.

#include <string>
#include <vector>

#include "core/error.h"
#include "core/source_location.h"
#include "ir/op_table.h"
#include "tensor/tensor.h"

namespace lazyscope::ops::detail {

// " (at file:line)" for the user's current line, or nothing when unknown.
inline std::string at_line(const SourceLocation& loc) { return loc.known() ? " (at " + loc.str() + ")" : ""; }

// Shape errors of ops that check before apply(); they name the line too.
template <typename F> auto at_call(F&& f) {
  try {
    return f();
  } catch (const ShapeError& e) {
    throw ShapeError(e.what() + at_line(current_source_location()));
  }
}

// DeviceMismatchError unless all operands of `op` are on one device.
inline void check_same_device(OpKind op, const std::vector<Tensor>& inputs) {
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].device() != inputs[0].device()) {
      throw DeviceMismatchError(std::string(op_name(op)) + ": operands are on different devices, " +
                                inputs[0].device().str() + " and " + inputs[i].device().str() +
                                "; move them to one device with .to(device)" + at_line(current_source_location()));
    }
  }
}

}  // namespace lazyscope::ops::detail
