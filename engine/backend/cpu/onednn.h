// The oneDNN plumbing shared by the convolution and pooling kernels: one CPU
// engine, a primitive cache keyed by the op's shapes and attributes (a cached
// step creates no primitive), and the reorders between the plain layouts the
// engine's buffers have (NCHW, OIHW) and the blocked layouts the primitives
// choose. Internal to backend/cpu.
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

namespace lazyscope::cpu::onednn {

// One argument of a primitive: the caller's layout, the primitive's, and the
// reorder between them when they differ (into the primitive for inputs, out
// of it for outputs).
struct Arg {
  int id = 0;  // DNNL_ARG_*
  dnnl::memory::desc user, inner;
  bool output = false;
  bool reordered = false;
  dnnl::reorder reorder;
};

struct Plan {
  dnnl::primitive primitive;
  std::vector<Arg> args;
  dnnl::memory::desc scratchpad;
};

const dnnl::engine& engine();
// User-managed scratchpad: the library's own one is not safe when replica
// threads run the same primitive at once.
dnnl::primitive_attr attributes();
dnnl::memory::desc plain(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag);

// Appends an argument; creates the reorder when the layouts differ.
void add_arg(Plan& plan, int id, const dnnl::memory::desc& user, const dnnl::memory::desc& inner, bool output);

// The plan cached under `key` for `omp_threads` OpenMP threads (as
// execute's: 1, or 0 for the calling thread's count); `make` builds it on the
// first call only, under that count: most primitives fix their thread count
// when they are created.
const Plan& cached(std::vector<int64_t> key, const std::function<Plan()>& make, int omp_threads = 1);

// Runs `plan` on the caller's buffers, one pointer per argument in the order
// they were added, on `omp_threads` OpenMP threads: 1 (the calling thread
// alone) but for A/B measurements, where 0 leaves the calling thread's
// OpenMP count as it is (a team of that many). Callers split their work over
// the engine's pool, a primitive per part (kernels_conv.cpp,
// kernels_pool.cpp), so no OpenMP team is started beside the pool.
// Temporaries (reordered tensors, scratchpad, workspace) live in per-thread
// buffers that only grow, so a warm call allocates nothing.
void execute(const Plan& plan, std::initializer_list<void*> data, int omp_threads = 1);

// A per-thread buffer of at least `bytes` (64-byte aligned) that stays
// this thread's until the next call with the same `which`: for memory that
// passes between two primitives of one kernel (the max pool's workspace).
void* thread_buffer(int which, size_t bytes);

// Whether callers split their primitives over the pool (the default) or
// run one on oneDNN's OpenMP team (cpu::set_onednn_on_pool, for A/B runs).
bool on_pool();
bool set_on_pool(bool on);  // returns the previous choice

// Primitives (including reorders) created since the process started.
int64_t primitives_created();

}  // namespace lazyscope::cpu::onednn
