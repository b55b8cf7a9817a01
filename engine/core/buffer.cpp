#include "core/buffer.h"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>
#include <utility>

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
// `bytes` aligned to kAlignment, from plain malloc with the malloc'd
// pointer stored just below the aligned one (freed by free_aligned_block).
// Not aligned_alloc: glibc 2.36's memalign asks for size + alignment + a
// header and leaves a chunk of only the size when freed, so a freed buffer
// never serves the next one of the same size; with other allocations in
// between, the heap grows and every buffer lands on fresh pages (a 200 KB
// upload to a lazy device: ~230 us, nearly all page faults, RSS growing
// ~200 KB a call until malloc_trim). malloc's own requests are all
// size + kAlignment, so a freed block is reused.
void* aligned_block(size_t bytes) {
  static_assert(kAlignment >= sizeof(void*) && alignof(std::max_align_t) >= sizeof(void*));
  void* raw = std::malloc(bytes + kAlignment);
  if (!raw) return nullptr;
  // malloc's pointer is max_align_t-aligned, so the aligned pointer lies
  // at least that far above it: room for the malloc'd pointer.
  auto* aligned = reinterpret_cast<void**>((reinterpret_cast<uintptr_t>(raw) + kAlignment) & ~(kAlignment - 1));
  aligned[-1] = raw;
  return aligned;
}

void free_aligned_block(void* data) {
  if (data) std::free(static_cast<void**>(data)[-1]);
}
}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(DType dtype, Shape shape) { return make(dtype, std::move(shape), false); }

std::shared_ptr<Buffer> Buffer::allocate_on_device(DType dtype, Shape shape) {
  return make(dtype, std::move(shape), true);
}

namespace {
// The element count and size in bytes of `shape` of `dtype`, refusing a
// negative dimension and an overflow (an expand to [2^31, 2^31] of float32
// wraps size_t).
// `what` names the request in the error; it is called only on an error (a
// message built on every allocation was ~40% of a 0-d scalar's, callgrind).
template <typename What> std::pair<int64_t, size_t> checked_size(DType dtype, const Shape& shape, const What& what) {
  for (int64_t d : shape) {
    if (d < 0) throw ShapeError("negative dimension in shape " + shape_str(shape));
  }
  int64_t n = 1;
  size_t bytes = 0;
  bool overflow = false;
  for (int64_t d : shape) overflow = overflow || __builtin_mul_overflow(n, d, &n);
  overflow = overflow || __builtin_mul_overflow(static_cast<size_t>(n), dtype_size(dtype), &bytes) ||
             bytes > std::numeric_limits<size_t>::max() - kAlignment;
  if (overflow) throw OutOfMemoryError(what() + ": its size overflows 64 bits");
  return {n, bytes};
}
}  // namespace

std::shared_ptr<Buffer> Buffer::make(DType dtype, Shape shape, bool on_device) {
  // Anything over physical memory is refused: with overcommit, a huge
  // aligned_alloc "succeeds" and the kernel writing it is killed, so the
  // guard is the only clear error the user gets.
  const auto describe = [&] {
    return std::string("cannot allocate a ") + std::string(dtype_name(dtype)) + " tensor of shape " + shape_str(shape);
  };
  const auto [n, bytes] = checked_size(dtype, shape, describe);
  if (bytes > physical_memory_bytes()) {
    throw OutOfMemoryError(describe() + " (" + std::to_string(bytes) + " bytes): more than the machine's memory (" +
                           std::to_string(physical_memory_bytes()) + " bytes)");
  }
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = rounded ? aligned_block(rounded) : nullptr;
  if (rounded && !data) throw OutOfMemoryError(describe() + " (" + std::to_string(bytes) + " bytes): out of memory");
  return std::shared_ptr<Buffer>(new Buffer(dtype, std::move(shape), n, bytes, data, on_device));
}

std::shared_ptr<Buffer> Buffer::view(std::shared_ptr<Buffer> base, size_t offset, DType dtype, Shape shape) {
  const auto describe = [&] {
    return std::string("cannot view a ") + std::string(dtype_name(dtype)) + " tensor of shape " + shape_str(shape);
  };
  if (!base) throw EngineError(describe() + ": no buffer to view");
  const auto [n, bytes] = checked_size(dtype, shape, describe);
  if (offset > base->bytes() || bytes > base->bytes() - offset) {
    throw EngineError(describe() + " (" + std::to_string(bytes) + " bytes) at byte " + std::to_string(offset) +
                      " of a " + std::to_string(base->bytes()) + "-byte buffer of shape " + shape_str(base->shape()) +
                      ": past its end");
  }
  void* data = static_cast<char*>(base->data()) + offset;
  const bool on_device = base->on_device();
  // Views hold the owner itself, never a chain of views.
  std::shared_ptr<Buffer> owner = base->base_ ? base->base_ : std::move(base);
  return std::shared_ptr<Buffer>(new Buffer(dtype, std::move(shape), n, bytes, data, on_device, std::move(owner)));
}

Buffer::Buffer(DType dtype, Shape shape, int64_t numel, size_t bytes, void* data, bool on_device,
               std::shared_ptr<Buffer> base)
    : dtype_(dtype),
      shape_(std::move(shape)),
      numel_(numel),
      bytes_(bytes),
      data_(data),
      on_device_(on_device),
      base_(std::move(base)) {
  if (base_) return;  // a view: its bytes are its owner's, counted there
  LAZYSCOPE_COUNTER("LiveBuffers")->add(1);
  LAZYSCOPE_COUNTER("LiveBufferBytes")->add(static_cast<int64_t>(bytes_));
  if (on_device_) {
    LAZYSCOPE_COUNTER("LiveDeviceBuffers")->add(1);
    LAZYSCOPE_COUNTER("LiveDeviceBufferBytes")->add(static_cast<int64_t>(bytes_));
  }
}

Buffer::~Buffer() {
  if (base_) return;
  free_aligned_block(data_);
  LAZYSCOPE_COUNTER("LiveBuffers")->add(-1);
  LAZYSCOPE_COUNTER("LiveBufferBytes")->add(-static_cast<int64_t>(bytes_));
  if (on_device_) {
    LAZYSCOPE_COUNTER("LiveDeviceBuffers")->add(-1);
    LAZYSCOPE_COUNTER("LiveDeviceBufferBytes")->add(-static_cast<int64_t>(bytes_));
  }
}

}  // namespace lazyscope
