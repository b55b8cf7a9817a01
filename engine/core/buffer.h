// A device buffer: an aligned block of memory holding one tensor's elements,
// row-major. On the CPU backend it is host memory; kernels read it directly.
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
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t bytes() const { return bytes_; }
  bool on_device() const { return on_device_; }
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T> T* as() { return static_cast<T*>(data_); }
  template <typename T> const T* as() const { return static_cast<const T*>(data_); }

 private:
  Buffer(DType dtype, Shape shape, int64_t numel, size_t bytes, void* data, bool on_device);
  static std::shared_ptr<Buffer> make(DType dtype, Shape shape, bool on_device);
  DType dtype_;
  Shape shape_;
  int64_t numel_;
  size_t bytes_;
  void* data_;
  bool on_device_;
};

using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace lazyscope
