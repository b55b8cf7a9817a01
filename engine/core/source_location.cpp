#include "core/source_location.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace lazyscope {

std::string SourceLocation::str() const {
  if (!file) return "<unknown>";
  const auto slash = file->find_last_of('/');
  return (slash == std::string::npos ? *file : file->substr(slash + 1)) + ":" + std::to_string(line);
}

const std::string* intern(const std::string& s) {
  // Never freed: interned strings live as long as the process, which is what
  // lets nodes and events hold bare pointers to them.
  static std::mutex mu;
  static auto* table = new std::unordered_map<std::string, std::unique_ptr<std::string>>();
  std::lock_guard lock(mu);
  auto& slot = (*table)[s];
  if (!slot) slot = std::make_unique<std::string>(s);
  return slot.get();
}

std::atomic<SourceLocationProvider> detail::g_source_location_provider{nullptr};

void set_source_location_provider(SourceLocationProvider provider) {
  detail::g_source_location_provider.store(provider);
}

void set_current_scope(const std::string* scope) { detail::t_scope = scope; }

}  // namespace lazyscope
