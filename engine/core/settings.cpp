#include "core/settings.h"

#include <atomic>
#include <cstdlib>

#include "core/error.h"

namespace lazyscope::settings {
namespace {

int64_t from_env(const char* name, int64_t fallback) {
  if (const char* env = std::getenv(name)) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return v;
  }
  return fallback;
}

std::atomic<int64_t>& cache_size() {
  static std::atomic<int64_t> v{from_env("LAZYSCOPE_COMPILE_CACHE_SIZE", 1024)};
  return v;
}

std::atomic<int64_t>& node_limit() {
  static std::atomic<int64_t> v{from_env("LAZYSCOPE_GRAPH_NODE_LIMIT", 100000)};
  return v;
}

void check_positive(const char* name, int64_t n) {
  if (n < 1) throw EngineError(std::string(name) + " must be positive");
}

}  // namespace

int64_t compile_cache_size() { return cache_size().load(std::memory_order_relaxed); }
void set_compile_cache_size(int64_t n) {
  check_positive("compile_cache_size", n);
  cache_size().store(n);
}

int64_t graph_node_limit() { return node_limit().load(std::memory_order_relaxed); }
void set_graph_node_limit(int64_t n) {
  check_positive("graph_node_limit", n);
  node_limit().store(n);
}

}  // namespace lazyscope::settings
