// Fused elementwise kernels compiled to machine code at run time: the C++
// source of one loop that computes every step of a chain in registers
// (fusion.cpp writes it from the rows of fusion_rows.inc), compiled by the
// system's C++ compiler into a shared object kept in an on-disk cache and
// loaded with dlopen. Where no compiler runs (or it fails), callers get null
// and keep the tiled interpreter, which computes the same values.
#pragma once

#include <cstdint>
#include <string>

#include "backend/cpu/fusion.h"

namespace lazyscope::cpu {

// The function `lazyscope_fused` of `source` compiled: from this process's
// memory, else the on-disk cache, else the compiler (then cached). Null where
// it cannot be had (no compiler, a compiler error: said once on stderr, and
// no compiler is run again by this process). The directory is
// settings::kernel_cache_dir(); the compiler settings::kernel_compiler().
// Thread-safe; a source is compiled at most once per process.
CompiledKernelFn compile_kernel(const std::string& source);

}  // namespace lazyscope::cpu
