#include "backend/buffer.h"

#include <cstdlib>
#include <new>
#include <string>

#include "core/error.h"
#include "metrics/metrics.h"

namespace lazyscope {
namespace {
// Cache-line (and AVX-512 vector) alignment for every buffer.
constexpr size_t kAlignment = 64;
}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(DType dtype, Shape shape) { return make(dtype, std::move(shape), false); }

std::shared_ptr<Buffer> Buffer::allocate_on_device(DType dtype, Shape shape) {
  return make(dtype, std::move(shape), true);
}

std::shared_ptr<Buffer> Buffer::make(DType dtype, Shape shape, bool on_device) {
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError("negative dimension in shape " + shape_str(shape));
  }
  const int64_t n = lazyscope::numel(shape);
  const size_t bytes = static_cast<size_t>(n) * dtype_size(dtype);
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = rounded ? std::aligned_alloc(kAlignment, rounded) : nullptr;
  if (rounded && !data) {
    throw EngineError("out of memory allocating a " + std::string(dtype_name(dtype)) + " tensor of shape " +
                      shape_str(shape) + " (" + std::to_string(bytes) + " bytes)");
  }
  return std::shared_ptr<Buffer>(new Buffer(dtype, std::move(shape), n, bytes, data, on_device));
}

Buffer::Buffer(DType dtype, Shape shape, int64_t numel, size_t bytes, void* data, bool on_device)
    : dtype_(dtype), shape_(std::move(shape)), numel_(numel), bytes_(bytes), data_(data), on_device_(on_device) {
  LAZYSCOPE_COUNTER("LiveBuffers")->add(1);
  LAZYSCOPE_COUNTER("LiveBufferBytes")->add(static_cast<int64_t>(bytes_));
  if (on_device_) {
    LAZYSCOPE_COUNTER("LiveDeviceBuffers")->add(1);
    LAZYSCOPE_COUNTER("LiveDeviceBufferBytes")->add(static_cast<int64_t>(bytes_));
  }
}

Buffer::~Buffer() {
  std::free(data_);
  LAZYSCOPE_COUNTER("LiveBuffers")->add(-1);
  LAZYSCOPE_COUNTER("LiveBufferBytes")->add(-static_cast<int64_t>(bytes_));
  if (on_device_) {
    LAZYSCOPE_COUNTER("LiveDeviceBuffers")->add(-1);
    LAZYSCOPE_COUNTER("LiveDeviceBufferBytes")->add(-static_cast<int64_t>(bytes_));
  }
}

}  // namespace lazyscope
