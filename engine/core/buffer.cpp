#include "core/buffer.h"

#include <unistd.h>

#include <cstdlib>
#include <limits>
#include <new>
#include <string>

#include "core/error.h"
#include "metrics/metrics.h"

namespace lazyscope {
namespace {
// Cache-line (and AVX-512 vector) alignment for every buffer.
constexpr size_t kAlignment = 64;

size_t physical_memory_bytes() {
  static const size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size)
                                      : std::numeric_limits<size_t>::max();
  }();
  return bytes;
}
}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(DType dtype, Shape shape) { return make(dtype, std::move(shape), false); }

std::shared_ptr<Buffer> Buffer::allocate_on_device(DType dtype, Shape shape) {
  return make(dtype, std::move(shape), true);
}

std::shared_ptr<Buffer> Buffer::make(DType dtype, Shape shape, bool on_device) {
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError("negative dimension in shape " + shape_str(shape));
  }
  // The size in bytes, refusing an overflow (an expand to [2^31, 2^31] of
  // float32 wraps size_t) and anything over physical memory: with
  // overcommit, a huge aligned_alloc "succeeds" and the kernel writing it
  // is killed, so the guard is the only clear error the user gets.
  int64_t n = 1;
  size_t bytes = 0;
  const auto describe = [&] {
    return std::string("cannot allocate a ") + std::string(dtype_name(dtype)) + " tensor of shape " + shape_str(shape);
  };
  bool overflow = false;
  for (int64_t d : shape) overflow = overflow || __builtin_mul_overflow(n, d, &n);
  overflow = overflow || __builtin_mul_overflow(static_cast<size_t>(n), dtype_size(dtype), &bytes) ||
             bytes > std::numeric_limits<size_t>::max() - kAlignment;
  if (overflow) throw OutOfMemoryError(describe() + ": its size overflows 64 bits");
  if (bytes > physical_memory_bytes()) {
    throw OutOfMemoryError(describe() + " (" + std::to_string(bytes) + " bytes): more than the machine's memory (" +
                           std::to_string(physical_memory_bytes()) + " bytes)");
  }
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = rounded ? std::aligned_alloc(kAlignment, rounded) : nullptr;
  if (rounded && !data) throw OutOfMemoryError(describe() + " (" + std::to_string(bytes) + " bytes): out of memory");
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
