// The graph executor. A sync reads top to bottom:
//   collect pending tensors -> post-order -> graph hash -> cached? -> compile
//   -> execute -> bind results back to the tensors.
// Each lazy device has its own step counter and pending-tensor registry, so
// data-parallel replicas on threads do not interfere.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lazyscope/events.pb.h"
#include "tensor/tensor.h"
#include "tensor/upcalls.h"

namespace lazyscope::executor {

// register_pending(), sync() and note_transfer(), which the tensor layer
// calls, are declared in tensor/upcalls.h.

// The barrier: runs every pending tensor of the device, then closes the step.
void mark_step(const Device& device);
int64_t current_step(const Device& device);

// lazyscope.log(name, value) of a one-element tensor on a lazy device: the
// value is not read now (no sync); the tensor stays among the step's
// outputs, and once the barrier has run the step's graph a ScalarEvent
// (step, name, value) is published. Nothing is kept without a subscriber.
void log_scalar(const std::string& name, const Tensor& value);
// A value already on the host: published at once, at `device`'s current step.
void publish_scalar(const Device& device, const std::string& name, double value);

// A MetricSnapshotEvent of every counter and metric (only_changed: those
// that moved since the last snapshot). mark_step publishes the changed ones
// at each step end when someone subscribed; the runner (or Python's atexit)
// publishes a full one at exit. No-op without a subscriber.
void publish_metric_snapshot(const Device& device, bool only_changed);

// Where the last sync of `device` spent its time (benchmarks/step_overhead.py
// and overhead_bench print it): everything a cached step costs outside its
// kernels. The kernel times are the executable's sampled profile of the
// graph run last (cumulative: kernel_total_ns over kernel_samples sampled
// executions; a benchmark takes differences between two points to leave the
// first executions out); execute_ns minus the kernels is the program's own
// overhead (dispatch, arena, threads).
struct SyncProfile {
  int64_t collect_ns = 0;  // pending tensors gathered from the registry
  int64_t lower_ns = 0;    // post-order walk and graph hash
  int64_t lookup_ns = 0;   // compile cache lookup
  int64_t compile_ns = 0;  // on a miss: compile, signature, CompileEvent
  int64_t bind_inputs_ns = 0;
  int64_t execute_ns = 0;
  int64_t kernel_total_ns = 0;
  int64_t kernel_samples = 0;
  int64_t bind_outputs_ns = 0;  // results bound to the tensors, traced graph released
  int64_t publish_ns = 0;       // counters, ExecuteEvent, kernel profile
  int64_t total_ns = 0;
  int64_t nodes = 0;
  bool cache_hit = false;
};
// with_kernels: also read the kernel totals (builds the executable's
// profile: a few microseconds, so a per-step caller leaves it out).
SyncProfile last_sync_profile(const Device& device, bool with_kernels = true);

// Graph for `targets` as the next sync would build it (for dumps and tests).
pb::IrGraph pending_graph(const Device& device, const std::vector<std::shared_ptr<TensorImpl>>& targets);

}  // namespace lazyscope::executor
