// A device buffer: an aligned block of memory holding one tensor's elements,
// row-major. On the CPU backend it is host memory; kernels read it directly.
// A view is a Buffer over part of another's memory (a compiled program's
// values at their offsets in its arena, a reshape that copies nothing): it
// owns no memory and holds its base, so the memory outlives every view.
#pragma once

#include <cstddef>
#include <memory>

#include "core/dtype.h"
#include "core/shape.h"

namespace lazyscope {

class Buffer {
 public:
  // Throws EngineError (naming the shape and size) if the allocation fails.
  static std::shared_ptr<Buffer> allocate(DType dtype, Shape shape);
  // A buffer in device memory (a lazy device's data, a compiled program's
  // values). On the CPU backend that is host memory too; the distinction
  // feeds the LiveDeviceBuffers/LiveDeviceBufferBytes gauges.
  static std::shared_ptr<Buffer> allocate_on_device(DType dtype, Shape shape);
  // `shape` of `dtype` over base's bytes [offset, offset + its size), which
  // must lie inside base (EngineError naming both otherwise). A view of a
  // view views the same owner. Writing through a view writes the base: the
  // caller makes sure no reader of the base expects the old values.
  static std::shared_ptr<Buffer> view(std::shared_ptr<Buffer> base, size_t offset, DType dtype, Shape shape);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t bytes() const { return bytes_; }
  bool on_device() const { return on_device_; }
  // The buffer owning the memory of a view (null: this one owns its memory).
  const std::shared_ptr<Buffer>& base() const { return base_; }
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T> T* as() { return static_cast<T*>(data_); }
  template <typename T> const T* as() const { return static_cast<const T*>(data_); }

 private:
  Buffer(DType dtype, Shape shape, int64_t numel, size_t bytes, void* data, bool on_device,
         std::shared_ptr<Buffer> base = nullptr);
  static std::shared_ptr<Buffer> make(DType dtype, Shape shape, bool on_device);
  DType dtype_;
  Shape shape_;
  int64_t numel_;
  size_t bytes_;
  void* data_;
  bool on_device_;
  std::shared_ptr<Buffer> base_;  // a view's owner, kept alive by it
};

using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace lazyscope
