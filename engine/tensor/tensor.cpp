#include "tensor/tensor.h"

#include <chrono>
#include <cstring>

#include "events/event_bus.h"
#include "executor/graph_executor.h"
#include "metrics/metrics.h"
#include "tensor/ops.h"

namespace lazyscope {
namespace {

BufferPtr copy_buffer(const Buffer& src) {
  BufferPtr dst = Buffer::allocate(src.dtype(), src.shape());
  if (src.bytes()) std::memcpy(dst->data(), src.data(), src.bytes());
  return dst;
}

// Counts and times a transfer between host and a lazy device, and reports it.
BufferPtr transfer(const Buffer& src, const Device& lazy_device, bool to_device) {
  const int64_t start = events::now_ns();
  BufferPtr dst = copy_buffer(src);
  const int64_t duration = events::now_ns() - start;
  const auto bytes = static_cast<int64_t>(src.bytes());
  if (to_device) {
    LAZYSCOPE_COUNTER("TransferToDeviceBytes")->add(bytes);
    LAZYSCOPE_METRIC("TransferToDeviceTime")->add(static_cast<double>(duration) / 1e6);
  } else {
    LAZYSCOPE_COUNTER("TransferFromDeviceBytes")->add(bytes);
    LAZYSCOPE_METRIC("TransferFromDeviceTime")->add(static_cast<double>(duration) / 1e6);
  }
  executor::note_transfer(lazy_device, to_device, start, duration, bytes);
  return dst;
}

}  // namespace

Tensor Tensor::wrap(BufferPtr buffer, const Device& device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->device = device;
  impl->spec = {buffer->shape(), buffer->dtype()};
  if (device.is_lazy()) impl->ir = std::make_shared<Node>(buffer);
  impl->buffer = std::move(buffer);
  return Tensor(std::move(impl));
}

Tensor Tensor::lazy(NodePtr ir, const Device& device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->device = device;
  impl->spec = ir->spec();
  impl->ir = std::move(ir);
  executor::register_pending(impl);
  return Tensor(std::move(impl));
}

BufferPtr Tensor::host_buffer(pb::SyncCause cause) const {
  if (!impl_->device.is_lazy()) return impl_->buffer;
  if (impl_->pending()) executor::sync(impl_->device, {impl_}, cause);
  return transfer(*impl_->buffer, impl_->device, /*to_device=*/false);
}

Tensor Tensor::to(const Device& target) const {
  if (target == device() && (target.is_lazy() || impl_->buffer)) return *this;
  const BufferPtr host = host_buffer(pb::SYNC_CAUSE_TO_HOST);
  if (!target.is_lazy()) {
    // host_buffer() already copied off a lazy device; an eager-to-eager move
    // does not happen (same device returned above).
    return wrap(host, target);
  }
  return wrap(transfer(*host, target, /*to_device=*/true), target);
}

Tensor Tensor::to(DType dtype) const { return ops::cast(*this, dtype); }

}  // namespace lazyscope
