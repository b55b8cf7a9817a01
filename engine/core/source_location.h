// The user's source line an op or a sync came from. The engine cannot see
// Python frames; the front end installs a provider that can. File and
// function names are interned so that a node carries three words, not strings.
#pragma once

#include <atomic>
#include <string>

namespace lazyscope {

struct SourceLocation {
  const std::string* file = nullptr;      // interned; null when unknown
  const std::string* function = nullptr;  // interned; null when unknown
  int line = 0;

  bool known() const { return file != nullptr; }
  std::string str() const;  // "train.py:41" or "<unknown>"
};

// Returns a stable pointer for `s`; equal strings give equal pointers.
const std::string* intern(const std::string& s);

using SourceLocationProvider = SourceLocation (*)();
// Installed by the Python bindings; with none, locations are unknown.
void set_source_location_provider(SourceLocationProvider provider);
namespace detail {
extern std::atomic<SourceLocationProvider> g_source_location_provider;
}
// Inline: every traced op asks (a call of its own was ~10 instructions of a
// replayed op when no provider is installed). Forced: with more callers in
// ops.cpp GCC made it an out-of-line call again (+12 instructions per
// replayed op between main ea2f867 and ef6b4aa, callgrind).
[[gnu::always_inline]] inline SourceLocation current_source_location() {
  const SourceLocationProvider provider = detail::g_source_location_provider.load(std::memory_order_relaxed);
  return provider ? provider() : SourceLocation{};
}

// The nn.Module scope path ops are traced in ("model.fc1"), per thread so
// that data-parallel replicas on threads keep their own.
namespace detail {
// Initial-exec, as pool::t_cache (core/pool.h): read by every traced op, and
// the shared library's default model calls __tls_get_addr on each access.
[[gnu::tls_model("initial-exec")]] inline thread_local const std::string* t_scope = nullptr;
}  // namespace detail
// Inline: a call of its own was ~5 instructions of every traced op.
inline const std::string* current_scope() { return detail::t_scope; }  // interned; null at top level
void set_current_scope(const std::string* scope);

}  // namespace lazyscope
