// Devices: the eager "cpu" device (ops run at once) and lazy devices
// "lazy:N" (ops are traced into a graph and run at a barrier).
#pragma once

#include <string>
#include <string_view>

namespace lazyscope {

enum class DeviceKind : uint8_t { kCpu, kLazy };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int ordinal = 0;

  bool is_lazy() const { return kind == DeviceKind::kLazy; }
  std::string str() const;  // "cpu", "lazy:0"
  bool operator==(const Device&) const = default;
};

// Parses "cpu", "lazy", "lazy:N" (also the seeds' "xla"/"xla:N"). Throws
// EngineError for an unknown kind or an ordinal beyond lazy_device_count().
Device parse_device(std::string_view text);

// Number of lazy devices. Default 1; LAZYSCOPE_DEVICE_COUNT overrides it, so
// multi-device code runs on one machine.
int lazy_device_count();
void set_lazy_device_count(int count);

}  // namespace lazyscope
