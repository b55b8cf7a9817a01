#include "tensor/tensor.h"

#include <chrono>
#include <cstring>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/pool.h"
#include "core/settings.h"
#include "events/event_bus.h"
#include "metrics/metrics.h"
#include "tensor/ops.h"
#include "tensor/upcalls.h"
#include "tensor/views.h"

namespace lazyscope {
namespace {

// In bf16 mode float32/float64 data lives on a lazy device as bfloat16.
bool stored_as_bf16(DType dtype) {
  return settings::bf16_mode() && (dtype == DType::kFloat32 || dtype == DType::kFloat64);
}

// `src` converted to `dtype` with the cast kernel (round to nearest even).
void convert_into(const Buffer& src, Buffer& dst) {
  const Buffer* in = &src;
  cpu::find_kernel(OpKind::kCast, dst.dtype())(cpu::KernelArgs{std::span<const Buffer* const>(&in, 1), dst, Attrs{}});
}

// Counts and reports a transfer between host and a lazy device of `bytes`
// (the device-side format's) that began at `start`.
void account_transfer(const Device& lazy_device, bool to_device, int64_t start, int64_t bytes) {
  const int64_t duration = events::now_ns() - start;
  if (to_device) {
    LAZYSCOPE_COUNTER("TransferToDeviceCount")->add(1);
    LAZYSCOPE_COUNTER("TransferToDeviceBytes")->add(bytes);
    LAZYSCOPE_METRIC("TransferToDeviceTime")->add(static_cast<double>(duration) / 1e6);
  } else {
    LAZYSCOPE_COUNTER("TransferFromDeviceCount")->add(1);
    LAZYSCOPE_COUNTER("TransferFromDeviceBytes")->add(bytes);
    LAZYSCOPE_METRIC("TransferFromDeviceTime")->add(static_cast<double>(duration) / 1e6);
  }
  executor::note_transfer(lazy_device, to_device, start, duration, bytes);
}

// Copies `src` between host and a lazy device, counted and timed. `dtype` is
// the format at the destination: a bf16-stored float is narrowed on the way
// up and widened on the way down, inside the transfer.
BufferPtr transfer(const Buffer& src, const Device& lazy_device, bool to_device, DType dtype) {
  const int64_t start = events::now_ns();
  BufferPtr dst = to_device ? Buffer::allocate_on_device(dtype, src.shape()) : Buffer::allocate(dtype, src.shape());
  if (dtype != src.dtype()) {
    convert_into(src, *dst);
  } else if (src.bytes()) {
    std::memcpy(dst->data(), src.data(), src.bytes());
  }
  // What crossed the link: the device-side format.
  account_transfer(lazy_device, to_device, start, static_cast<int64_t>(to_device ? dst->bytes() : src.bytes()));
  return dst;
}

}  // namespace

TensorImpl::~TensorImpl() {
  if (pending_link.list.load(std::memory_order_acquire)) executor::unregister_pending(*this);
  pool::stash_vector(spec.shape);  // for the next lazy result's shape (Tensor::lazy)
}

Tensor Tensor::wrap(BufferPtr buffer, const Device& device) {
  auto impl = pool::make_pooled<TensorImpl>();
  impl->device = device;
  impl->spec = {buffer->shape(), buffer->dtype()};
  // The leaf remembers where the data entered the device, so that a
  // recompile caused by this input can name the user's line.
  if (device.is_lazy()) impl->ir = make_leaf(buffer, current_source_location());
  impl->buffer = std::move(buffer);
  return Tensor(std::move(impl));
}

Tensor Tensor::lazy(NodePtr ir, const Device& device, size_t trace_slot) {
  auto impl = pool::make_pooled<TensorImpl>();
  impl->device = device;
  pool::assign_stashed(impl->spec.shape, ir->shape());  // no allocation per traced op
  impl->spec.dtype = ir->dtype();
  impl->ir = std::move(ir);
  executor::register_pending(impl, trace_slot);
  return Tensor(std::move(impl));
}

Tensor Tensor::from_host(const void* data, DType dtype, Shape shape, const Device& device) {
  if (!device.is_lazy() || stored_as_bf16(dtype)) {
    BufferPtr host = Buffer::allocate(dtype, std::move(shape));
    if (host->bytes()) std::memcpy(host->data(), data, host->bytes());
    // A bf16-stored float is narrowed by to()'s transfer, from this copy.
    return device.is_lazy() ? wrap(std::move(host), Device{}).to(device) : wrap(std::move(host), device);
  }
  const int64_t start = events::now_ns();
  BufferPtr on_device = Buffer::allocate_on_device(dtype, std::move(shape));
  if (on_device->bytes()) std::memcpy(on_device->data(), data, on_device->bytes());
  account_transfer(device, /*to_device=*/true, start, static_cast<int64_t>(on_device->bytes()));
  return wrap(std::move(on_device), device);
}

BufferPtr Tensor::host_buffer(pb::SyncCause cause) const {
  views::refresh_if_view(*this);
  if (!impl_->device.is_lazy()) return impl_->buffer;
  if (impl_->pending()) executor::sync(impl_->device, {impl_}, cause);
  return transfer(*impl_->buffer, impl_->device, /*to_device=*/false, impl_->spec.dtype);
}

Tensor Tensor::to(const Device& target) const {
  views::refresh_if_view(*this);
  if (target == device() && (target.is_lazy() || impl_->buffer)) return *this;
  const BufferPtr host = host_buffer(pb::SYNC_CAUSE_TO_HOST);
  if (!target.is_lazy()) {
    // host_buffer() already copied off a lazy device; an eager-to-eager move
    // does not happen (same device returned above).
    return wrap(host, target);
  }
  const DType stored = stored_as_bf16(host->dtype()) ? DType::kBFloat16 : host->dtype();
  BufferPtr on_device = transfer(*host, target, /*to_device=*/true, stored);
  if (stored == host->dtype()) return wrap(std::move(on_device), target);
  auto impl = pool::make_pooled<TensorImpl>();
  impl->device = target;
  impl->spec = {host->shape(), host->dtype()};  // reports float32/float64, stores bfloat16
  impl->ir = make_leaf(on_device, current_source_location(), host->dtype());
  impl->buffer = std::move(on_device);
  return Tensor(std::move(impl));
}

Tensor Tensor::to(DType dtype) const { return ops::cast(*this, dtype); }

void Tensor::set_requires_grad(bool requires_grad) {
  if (!is_leaf()) {
    throw EngineError("you can only change requires_grad flags of leaf tensors; use detach() to get a leaf");
  }
  if (requires_grad && !is_floating(dtype())) {
    throw EngineError("only tensors of floating point dtype can require gradients, not " +
                      std::string(dtype_name(dtype())));
  }
  impl_->requires_grad = requires_grad;
}

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined() && (grad.shape() != shape() || grad.device() != device())) {
    throw EngineError("assigned grad has shape " + shape_str(grad.shape()) + " on " + grad.device().str() +
                      ", expected " + shape_str(shape()) + " on " + device().str());
  }
  impl_->grad = grad.impl();
}

Tensor Tensor::detach() const {
  views::refresh_if_view(*this);
  auto impl = pool::make_pooled<TensorImpl>();
  impl->device = impl_->device;
  impl->spec = impl_->spec;
  impl->buffer = impl_->buffer;
  impl->ir = impl_->ir;
  impl->wrapped_number = impl_->wrapped_number;
  // A pending value stays pending: the detached tensor is synced like any other.
  if (impl->pending()) executor::register_pending(impl);
  return Tensor(std::move(impl));
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  autograd::backward(*this, gradient, retain_graph, create_graph);
}

}  // namespace lazyscope
