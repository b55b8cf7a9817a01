// Named counters and timed metrics, zero set-up: LAZYSCOPE_COUNTER("Name")
// resolves the name once per call site (a function-local static) and then
// costs one relaxed atomic add.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace lazyscope::metrics {

class Counter {
 public:
  void add(int64_t delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }
  void reset() { value_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

struct MetricStats {
  int64_t count = 0;
  double total = 0;
  double p50 = 0, p90 = 0, p99 = 0;
};

// A timed metric: every sample is counted and summed; the last kWindow
// samples are kept for percentiles.
class Metric {
 public:
  static constexpr size_t kWindow = 1024;
  void add(double value);
  MetricStats stats() const;
  int64_t count() const;
  void reset();

 private:
  mutable std::mutex mu_;
  int64_t count_ = 0;
  double total_ = 0;
  std::vector<double> window_;
  size_t next_ = 0;
};

Counter* counter(const std::string& name);
Metric* metric(const std::string& name);  // values in milliseconds by convention

std::map<std::string, int64_t> counters();
std::map<std::string, MetricStats> metrics();
// Zeroes every counter and metric except the live-buffer gauges.
void reset();
void reset_counters();  // counters only (gauges kept), as torch_xla's clear_counters()
void reset_metrics();   // timed metrics only, as torch_xla's clear_metrics()
// A text report in the spirit of PyTorch/XLA's _xla_metrics_report().
std::string report();
// The few lines a user looks at first: compile and execute time, transfers,
// and every fallback counter (torch_xla's short_metrics_report()).
std::string short_report();

// Counters and metrics for a MetricSnapshotEvent. With only_changed, just
// those whose value (counters) or sample count (metrics) moved since the
// last snapshot, so that a per-step snapshot stays cheap; every call
// remembers what it returned.
struct SnapshotEntry {
  std::string name;
  bool is_counter = false;
  int64_t value = 0;  // counters
  MetricStats stats;  // metrics
};
std::vector<SnapshotEntry> snapshot(bool only_changed);

}  // namespace lazyscope::metrics

#define LAZYSCOPE_COUNTER(name)                                                    \
  ([]() -> ::lazyscope::metrics::Counter* {                                        \
    static ::lazyscope::metrics::Counter* c = ::lazyscope::metrics::counter(name); \
    return c;                                                                      \
  }())
#define LAZYSCOPE_METRIC(name)                                                   \
  ([]() -> ::lazyscope::metrics::Metric* {                                       \
    static ::lazyscope::metrics::Metric* m = ::lazyscope::metrics::metric(name); \
    return m;                                                                    \
  }())
