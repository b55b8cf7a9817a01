// Fused elementwise kernels compiled to machine code at run time: the C++
// source of one loop that computes every step of a chain in registers
// (fusion.cpp writes it from the rows of fusion_rows.inc), compiled by the
// system's C++ compiler into a shared object kept in an on-disk cache and
// loaded with dlopen. A compile that the cache cannot answer runs on a
// background thread (one at a time, its compiler niced); until it is done,
// and for good where no compiler runs (or it fails), the kernel runs on the
// tiled interpreter, which computes the same values.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/cpu/fusion.h"

namespace lazyscope::cpu {

// A kernel's compiled code, possibly still on its way. `fn` is set (release)
// before `done`; a done kernel with a null `fn` failed and stays on the
// interpreter. One per distinct source per process, shared by every fused
// kernel that asked for it.
struct PendingKernel {
  std::atomic<CompiledKernelFn> fn{nullptr};
  std::atomic<bool> done{false};
};

// The function `lazyscope_fused` of `source`: from this process's memory or
// the on-disk cache at once (returned done), else queued for the background
// compiler thread, or with settings::fusion_jit_sync() compiled here before
// returning. A failed compile is said once on stderr and counted
// (FusionJitFailures); no compiler runs again in this process. The
// directory is settings::kernel_cache_dir(); the compiler
// settings::kernel_compiler(). Thread-safe; a source is compiled at most
// once per process.
std::shared_ptr<const PendingKernel> request_kernel(const std::string& source);

// In a forked child that inherited compiles in flight: starts its own
// background thread (the parent's did not come along). Cheap otherwise.
void resume_kernel_compiles();

}  // namespace lazyscope::cpu
