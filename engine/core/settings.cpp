#include "core/settings.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include <sched.h>
#include <unistd.h>

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

// "1", "true", "yes", "on" (any case) switch a flag on; anything else is off.
bool flag_from_env(const char* name) {
  const char* env = std::getenv(name);
  if (!env) return false;
  std::string v(env);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

std::atomic<int64_t>& cache_size() {
  static std::atomic<int64_t> v{from_env("LAZYSCOPE_COMPILE_CACHE_SIZE", 1024)};
  return v;
}

std::atomic<int64_t>& node_limit() {
  static std::atomic<int64_t> v{from_env("LAZYSCOPE_GRAPH_NODE_LIMIT", 100000)};
  return v;
}

std::atomic<int64_t>& snapshot_ms() {
  static std::atomic<int64_t> v{[] {
    // 0 is a valid value here (every barrier), which from_env() refuses.
    if (const char* env = std::getenv("LAZYSCOPE_METRIC_SNAPSHOT_MS")) {
      char* end = nullptr;
      const long long ms = std::strtoll(env, &end, 10);
      if (end != env && *end == '\0' && ms >= 0) return static_cast<int64_t>(ms);
    }
    return int64_t{100};
  }()};
  return v;
}

std::atomic<double>& collective_timeout() {
  static std::atomic<double> v{[] {
    if (const char* env = std::getenv("LAZYSCOPE_COLLECTIVE_TIMEOUT_S")) {
      char* end = nullptr;
      const double d = std::strtod(env, &end);
      if (end != env && *end == '\0' && d > 0) return d;
    }
    return 60.0;
  }()};
  return v;
}

std::atomic<bool>& bf16() {
  static std::atomic<bool> v{flag_from_env("LAZYSCOPE_USE_BF16") || flag_from_env("XLA_USE_BF16")};
  return v;
}

std::vector<std::string> split_names(const char* text) {
  std::vector<std::string> out;
  std::string current;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      const auto first = current.find_first_not_of(" \t");
      if (first != std::string::npos) out.push_back(current.substr(first, current.find_last_not_of(" \t") - first + 1));
      current.clear();
      if (*p == '\0') break;
    } else {
      current += *p;
    }
  }
  return out;
}

// Read on every op call on a lazy device, written rarely: an immutable list
// swapped under a mutex, with an atomic "empty" flag so that the common case
// (nothing forced) costs one relaxed load.
struct Forced {
  std::mutex mu;
  std::shared_ptr<const std::vector<std::string>> ops;
  std::atomic<bool> any{false};
};

Forced& forced() {
  static auto* instance = [] {
    auto* f = new Forced();
    const char* env = std::getenv("LAZYSCOPE_FORCE_FALLBACK");
    f->ops = std::make_shared<const std::vector<std::string>>(env ? split_names(env) : std::vector<std::string>{});
    f->any.store(!f->ops->empty());
    return f;
  }();
  return *instance;
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

std::atomic<int64_t> detail::g_graph_node_limit{0};
std::atomic<int> detail::g_any_forced_fallback{-1};
std::atomic<int> detail::g_reuse_ir_nodes{-1};

// The inline copies (settings.h) are set from the settings below on first
// use; a setter that ran first already set them (the exchange keeps that).
int64_t detail::load_graph_node_limit() {
  int64_t unset = 0;
  g_graph_node_limit.compare_exchange_strong(unset, node_limit().load());
  return g_graph_node_limit.load(std::memory_order_relaxed);
}
bool detail::load_any_forced_fallback() {
  int unset = -1;
  g_any_forced_fallback.compare_exchange_strong(unset, forced().any.load() ? 1 : 0);
  return g_any_forced_fallback.load(std::memory_order_relaxed) != 0;
}

void set_graph_node_limit(int64_t n) {
  check_positive("graph_node_limit", n);
  node_limit().store(n);
  detail::g_graph_node_limit.store(n);
}

int64_t metric_snapshot_ms() { return snapshot_ms().load(std::memory_order_relaxed); }
void set_metric_snapshot_ms(int64_t ms) {
  if (ms < 0) throw EngineError("metric_snapshot_ms must be 0 or more, got " + std::to_string(ms));
  snapshot_ms().store(ms);
}

double collective_timeout_s() { return collective_timeout().load(std::memory_order_relaxed); }
void set_collective_timeout_s(double seconds) {
  if (!(seconds > 0)) throw EngineError("collective_timeout_s must be positive, got " + std::to_string(seconds));
  collective_timeout().store(seconds);
}

bool forced_fallback(std::string_view op) {
  Forced& f = forced();
  if (!f.any.load(std::memory_order_relaxed)) return false;
  std::shared_ptr<const std::vector<std::string>> ops;
  {
    std::lock_guard lock(f.mu);
    ops = f.ops;
  }
  return std::find(ops->begin(), ops->end(), op) != ops->end();
}

std::vector<std::string> forced_fallbacks() {
  Forced& f = forced();
  std::lock_guard lock(f.mu);
  return *f.ops;
}

void set_forced_fallbacks(const std::vector<std::string>& ops) {
  Forced& f = forced();
  std::lock_guard lock(f.mu);
  f.ops = std::make_shared<const std::vector<std::string>>(ops);
  f.any.store(!ops.empty());
  detail::g_any_forced_fallback.store(ops.empty() ? 0 : 1);
}

int64_t num_threads() {
  static const int64_t n = [] {
    // The cores this process may use (a taskset or cgroup cpuset narrows them).
    cpu_set_t set;
    int64_t cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
    if (cores <= 0) cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    return from_env("LAZYSCOPE_NUM_THREADS", cores);
  }();
  return n;
}

std::string cpu_isa_limit() {
  const char* env = std::getenv("LAZYSCOPE_CPU_ISA");
  return env ? std::string(env) : std::string();
}

bool fusion_jit() {
  const char* env = std::getenv("LAZYSCOPE_FUSION_JIT");
  return env == nullptr || std::string_view(env) != "0";
}

bool fusion_jit_sync() {
  const char* env = std::getenv("LAZYSCOPE_FUSION_JIT_SYNC");
  return env != nullptr && std::string_view(env) == "1";
}

int64_t fusion_jit_nice() { return std::clamp<int64_t>(from_env("LAZYSCOPE_FUSION_JIT_NICE", int64_t{19}), 0, 19); }

int64_t fusion_jit_min_elements() { return from_env("LAZYSCOPE_FUSION_JIT_MIN_ELEMENTS", int64_t{1} << 16); }

std::string kernel_compiler() {
  const char* env = std::getenv("LAZYSCOPE_CXX");
  return env && *env ? std::string(env) : std::string("c++");
}

std::string kernel_cache_dir() {
  if (const char* env = std::getenv("LAZYSCOPE_KERNEL_CACHE_DIR"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/lazyscope/kernels";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/lazyscope/kernels";
  return "/tmp/lazyscope-kernels-" + std::to_string(geteuid());
}

bool bf16_mode() { return bf16().load(std::memory_order_relaxed); }
void set_bf16_mode(bool on) { bf16().store(on); }

std::atomic<bool>& donation() {
  static std::atomic<bool> v{[] {
    const char* env = std::getenv("LAZYSCOPE_BUFFER_DONATION");
    return env == nullptr || std::string_view(env) != "0";
  }()};
  return v;
}

bool buffer_donation() { return donation().load(std::memory_order_relaxed); }
void set_buffer_donation(bool on) { donation().store(on); }

std::atomic<bool>& reuse_ir() {
  static std::atomic<bool> v{[] {
    const char* env = std::getenv("LAZYSCOPE_REUSE_IR");
    return env == nullptr || std::string_view(env) != "0";
  }()};
  return v;
}

bool detail::load_reuse_ir_nodes() {
  int unset = -1;
  g_reuse_ir_nodes.compare_exchange_strong(unset, reuse_ir().load() ? 1 : 0);
  return g_reuse_ir_nodes.load(std::memory_order_relaxed) != 0;
}

void set_reuse_ir_nodes(bool on) {
  reuse_ir().store(on);
  detail::g_reuse_ir_nodes.store(on ? 1 : 0);
}

bool alias_values() {
  static const bool on = [] {
    const char* env = std::getenv("LAZYSCOPE_ALIAS_VALUES");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return on;
}

bool nll_backward_kernel() {
  static const bool on = [] {
    const char* env = std::getenv("LAZYSCOPE_NLL_BACKWARD_KERNEL");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return on;
}

bool layer_norm_kernel() {
  static const bool on = [] {
    const char* env = std::getenv("LAZYSCOPE_LAYER_NORM_KERNEL");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return on;
}

std::atomic<bool>& im2col() {
  static std::atomic<bool> v{flag_from_env("LAZYSCOPE_IM2COL_CONV")};
  return v;
}

bool im2col_conv() { return im2col().load(std::memory_order_relaxed); }
void set_im2col_conv(bool on) { im2col() = on; }

}  // namespace lazyscope::settings
