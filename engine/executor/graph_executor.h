// The graph executor. A sync reads top to bottom:
//   collect pending tensors -> post-order -> graph hash -> cached? -> compile
//   -> execute -> bind results back to the tensors.
// Each lazy device has its own step counter and pending-tensor registry, so
// data-parallel replicas on threads do not interfere.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lazyscope/events.pb.h"
#include "tensor/tensor.h"

namespace lazyscope::executor {

// Called for every lazy tensor created with a pending IR node.
void register_pending(const std::shared_ptr<TensorImpl>& tensor);

// Runs what `targets` need (all pending tensors of the device when empty)
// and binds the results. `cause` and the caller's source line are recorded.
void sync(const Device& device, const std::vector<std::shared_ptr<TensorImpl>>& targets, pb::SyncCause cause);

// The barrier: runs every pending tensor of the device, then closes the step.
void mark_step(const Device& device);
int64_t current_step(const Device& device);

// Transfers are part of a step's time breakdown; tensor.cpp reports them.
void note_transfer(const Device& device, bool to_device, int64_t start_ns, int64_t duration_ns, int64_t bytes);

// Graph for `targets` as the next sync would build it (for dumps and tests).
pb::IrGraph pending_graph(const Device& device, const std::vector<std::shared_ptr<TensorImpl>>& targets);

}  // namespace lazyscope::executor
