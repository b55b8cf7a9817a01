// CPU kernels: one table from (op, output dtype) to a function. The eager
// cpu device and the CPU backend's compiled programs call the same kernels,
// so lazy and eager results agree by construction.
#pragma once

#include <span>

#include "backend/buffer.h"
#include "ir/attrs.h"
#include "ir/op_table.h"

namespace lazyscope::cpu {

struct KernelArgs {
  std::span<const Buffer* const> inputs;  // already cast to the kernel's dtype where the op needs it
  Buffer& out;                            // allocated with the inferred shape and dtype
  const Attrs& attrs;
};

using KernelFn = void (*)(const KernelArgs&);

// nullptr when the CPU has no kernel for this op and dtype.
KernelFn find_kernel(OpKind op, DType dtype);

// The 16-bit float conversions the cast kernels use (round to nearest even).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace lazyscope::cpu
