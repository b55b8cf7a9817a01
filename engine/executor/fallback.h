// CPU fallbacks: an op that a lazy device's backend does not lower (or that
// the user forced off the device, or whose output shape depends on values)
// runs on the host. Its operands are synced — which cuts the pending graph
// there — downloaded, computed by a host function, and the results uploaded
// as device data. Each fallback is counted per op ("Fallback.<op>"), timed
// ("FallbackTime.<op>"), and published as a FallbackEvent with the user's line.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "lazyscope/events.pb.h"
#include "tensor/tensor.h"

namespace lazyscope::executor {

// Why `op` producing `dtype` must leave the device: FORCED (named in
// LAZYSCOPE_FORCE_FALLBACK), NOT_LOWERED (the device's backend does not list
// it), or UNSPECIFIED when it runs on the device.
pb::FallbackReason fallback_reason(OpKind op, DType dtype);

// Computes outputs from host copies of the inputs (same order).
using HostFn = std::function<std::vector<BufferPtr>(const std::vector<const Buffer*>& inputs)>;

// Runs `fn` on the host for `inputs` on one lazy device and returns its
// results as tensors on that device. `dtype` is what the event reports.
std::vector<Tensor> run_on_host(std::string_view op, pb::FallbackReason reason, DType dtype,
                                const std::vector<Tensor>& inputs, const HostFn& fn);

}  // namespace lazyscope::executor
