// The ops users call. Each checks its operands' devices, infers the output
// spec at the call (so shape errors name the user's line), then runs at once
// on the cpu device or records an IR node on a lazy device.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace lazyscope::ops {

// Elementwise ops promote mixed operand dtypes as PyTorch does, inserting
// cast ops; see Promote in ir/op_table.h.
Tensor cast(const Tensor& a, DType dtype);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
// 2-D transpose.
Tensor t(const Tensor& a);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor relu(const Tensor& a);
// dims empty = all dims.
Tensor sum(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);

// A Python scalar as a 0-d tensor of `dtype` on `device`. On a lazy device it
// becomes a graph input, not a constant, so a changing learning rate does not
// recompile.
Tensor scalar(double value, DType dtype, const Device& device);
// A Python number as a "wrapped number": a 0-d float64, int64 or bool tensor
// that promotes like a scalar (int32 tensor + 5 is int32, int tensor * 2.5 is
// float32) and is converted on the host, never by a cast node.
Tensor wrapped_float(double value, const Device& device);
Tensor wrapped_int(int64_t value, const Device& device);
Tensor wrapped_bool(bool value, const Device& device);

// Generic entry used by the named ops above.
Tensor apply(OpKind op, std::vector<Tensor> inputs, Attrs attrs = {});

}  // namespace lazyscope::ops
