#include "core/device.h"

#include <atomic>
#include <charconv>
#include <cstdlib>

#include "core/error.h"

namespace lazyscope {
namespace {

int initial_device_count() {
  if (const char* env = std::getenv("LAZYSCOPE_DEVICE_COUNT")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return 1;
}

std::atomic<int>& device_count() {
  static std::atomic<int> count{initial_device_count()};
  return count;
}

}  // namespace

std::string Device::str() const { return kind == DeviceKind::kCpu ? "cpu" : "lazy:" + std::to_string(ordinal); }

int lazy_device_count() { return device_count().load(std::memory_order_relaxed); }

void set_lazy_device_count(int count) {
  if (count < 1) throw EngineError("device count must be at least 1, got " + std::to_string(count));
  device_count().store(count);
}

Device parse_device(std::string_view text) {
  const std::string original(text);
  if (text == "cpu") return {DeviceKind::kCpu, 0};
  std::string_view rest;
  if (text.starts_with("lazy")) {
    rest = text.substr(4);
  } else if (text.starts_with("xla")) {
    rest = text.substr(3);
  } else {
    throw EngineError("unknown device '" + original + "' (expected 'cpu' or 'lazy:N')");
  }
  int ordinal = 0;
  if (!rest.empty()) {
    if (rest[0] != ':') throw EngineError("unknown device '" + original + "'");
    rest.remove_prefix(1);
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), ordinal);
    if (ec != std::errc() || ptr != rest.data() + rest.size() || ordinal < 0) {
      throw EngineError("bad device ordinal in '" + original + "'");
    }
  }
  if (ordinal >= lazy_device_count()) {
    throw EngineError("device '" + original + "' does not exist: " + std::to_string(lazy_device_count()) +
                      " lazy device(s) configured (set LAZYSCOPE_DEVICE_COUNT for more)");
  }
  return {DeviceKind::kLazy, ordinal};
}

}  // namespace lazyscope
