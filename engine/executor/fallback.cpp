// CPU fallbacks; declared in tensor/upcalls.h, which the ops call.
#include "tensor/upcalls.h"

#include <array>
#include <atomic>

#include "backend/backend.h"
#include "core/settings.h"
#include "events/event_bus.h"
#include "executor/graph_executor.h"
#include "metrics/metrics.h"

namespace lazyscope::executor {

namespace {

// Whether the default backend lowers (op, dtype), asked once per backend
// installed: every traced op asks, and the virtual call and the backend's
// kernel table cost ~110 of a traced op's ~1,400 instructions. An entry is
// (generation << 2) | 2 (known) | lowers, stale once set_default_backend()
// moved the generation on. Keyed by generation, not by the backend's
// address: the Python bindings replace a RestrictedBackend with another that
// may reuse its address. A lookup racing a swap at worst stores an answer
// under the old generation, which the next lookup ignores.
std::array<std::atomic<uint64_t>, static_cast<size_t>(OpKind::kNumOps) * kNumDTypes> g_lowers{};

bool default_backend_lowers(OpKind op, DType dtype) {
  const uint64_t generation = backend_generation();
  std::atomic<uint64_t>& slot = g_lowers[static_cast<size_t>(op) * kNumDTypes + static_cast<size_t>(dtype)];
  const uint64_t entry = slot.load(std::memory_order_relaxed);
  if ((entry & 2) != 0 && (entry >> 2) == generation) return (entry & 1) != 0;
  const bool lowers = default_backend().lowers(op, dtype);
  slot.store((generation << 2) | 2 | (lowers ? 1 : 0), std::memory_order_relaxed);
  return lowers;
}

}  // namespace

pb::FallbackReason fallback_reason(OpKind op, DType dtype) {
  if (op == OpKind::kDeviceData) return pb::FALLBACK_REASON_UNSPECIFIED;
  if (settings::any_forced_fallback() && settings::forced_fallback(op_name(op))) return pb::FALLBACK_REASON_FORCED;
  if (!default_backend_lowers(op, dtype)) return pb::FALLBACK_REASON_NOT_LOWERED;
  return pb::FALLBACK_REASON_UNSPECIFIED;
}

std::vector<Tensor> run_on_host(std::string_view op, pb::FallbackReason reason, DType dtype,
                                const std::vector<Tensor>& inputs, const HostFn& fn) {
  const Device device = inputs.at(0).device();
  const SourceLocation source = current_source_location();
  const int64_t start = events::now_ns();

  // One execution for every pending operand (not one per operand): the cut.
  std::vector<std::shared_ptr<TensorImpl>> pending;
  for (const Tensor& t : inputs) {
    if (t.impl()->pending()) pending.push_back(t.impl());
  }
  const int64_t cut_nodes = pending.empty() ? 0 : sync(device, pending, pb::SYNC_CAUSE_FALLBACK);

  int64_t bytes = 0;
  std::vector<BufferPtr> host;  // keeps the downloaded copies alive while fn runs
  std::vector<const Buffer*> views;
  host.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    host.push_back(t.host_buffer(pb::SYNC_CAUSE_FALLBACK));
    views.push_back(host.back().get());
    bytes += static_cast<int64_t>(host.back()->bytes());
  }
  const std::vector<BufferPtr> results = fn(views);
  std::vector<Tensor> out;
  out.reserve(results.size());
  for (const BufferPtr& r : results) {
    bytes += static_cast<int64_t>(r->bytes());
    out.push_back(Tensor::wrap(r, Device{}).to(device));
  }
  const int64_t duration = events::now_ns() - start;

  const std::string name(op);
  metrics::counter("Fallback." + name)->add(1);
  metrics::metric("FallbackTime." + name)->add(static_cast<double>(duration) / 1e6);
  LAZYSCOPE_COUNTER("FallbackCount")->add(1);
  if (events::enabled()) {
    pb::Event e;
    e.set_replica(device.ordinal);
    auto* f = e.mutable_fallback();
    f->set_step(current_step(device));
    f->set_op(name);
    f->set_start_ns(start);
    f->set_duration_ns(duration);
    f->set_bytes(bytes);
    if (source.known()) {
      f->mutable_source()->set_file(*source.file);
      f->mutable_source()->set_line(source.line);
      if (source.function) f->mutable_source()->set_function(*source.function);
    }
    f->set_reason(reason);
    f->set_graph_cut_nodes(static_cast<int32_t>(cut_nodes));
    f->set_dtype(std::string(dtype_name(dtype)));
    events::publish(e);
  }
  return out;
}

}  // namespace lazyscope::executor
