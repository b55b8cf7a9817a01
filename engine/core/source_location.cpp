#include "core/source_location.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace lazyscope {
namespace {

// Initial-exec, as pool::t_cache (core/pool.h): read by every traced op, and
// the shared library's default model calls __tls_get_addr on each access.
[[gnu::tls_model("initial-exec")]] thread_local const std::string* t_scope = nullptr;

}  // namespace

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

const std::string* current_scope() { return t_scope; }
void set_current_scope(const std::string* scope) { t_scope = scope; }

}  // namespace lazyscope
