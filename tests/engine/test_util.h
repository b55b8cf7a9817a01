// Helpers shared by the engine tests: tensors from plain vectors and back,
// and an event capture that subscribes for the lifetime of a test.
#pragma once

#include <cstring>
#include <vector>

#include "events/event_bus.h"
#include "tensor/tensor.h"

namespace lazyscope::testing {

inline Tensor make(const std::vector<float>& values, Shape shape, Device device = {}) {
  BufferPtr b = Buffer::allocate(DType::kFloat32, std::move(shape));
  std::memcpy(b->data(), values.data(), values.size() * sizeof(float));
  return Tensor::wrap(std::move(b), Device{}).to(device);
}

inline std::vector<float> values(const Tensor& t) {
  BufferPtr b = t.host_buffer(pb::SYNC_CAUSE_TO_HOST);
  return {b->as<float>(), b->as<float>() + b->numel()};
}

inline Device lazy0() { return {DeviceKind::kLazy, 0}; }

class EventCapture {
 public:
  EventCapture() : id_(events::subscribe([this](const pb::Event& e) { events_.push_back(e); })) {}
  ~EventCapture() { events::unsubscribe(id_); }
  std::vector<pb::CompileEvent> compiles() const {
    std::vector<pb::CompileEvent> out;
    for (const auto& e : events_)
      if (e.has_compile()) out.push_back(e.compile());
    return out;
  }
  std::vector<pb::ExecuteEvent> executions() const {
    std::vector<pb::ExecuteEvent> out;
    for (const auto& e : events_)
      if (e.has_execute()) out.push_back(e.execute());
    return out;
  }
  std::vector<pb::FallbackEvent> fallbacks() const {
    std::vector<pb::FallbackEvent> out;
    for (const auto& e : events_)
      if (e.has_fallback()) out.push_back(e.fallback());
    return out;
  }
  std::vector<pb::MetricSnapshotEvent> snapshots() const {
    std::vector<pb::MetricSnapshotEvent> out;
    for (const auto& e : events_)
      if (e.has_metrics()) out.push_back(e.metrics());
    return out;
  }
  std::vector<pb::StepEvent> steps() const {
    std::vector<pb::StepEvent> out;
    for (const auto& e : events_)
      if (e.has_step()) out.push_back(e.step());
    return out;
  }

 private:
  std::vector<pb::Event> events_;
  int id_;
};

}  // namespace lazyscope::testing
