#include "metrics/metrics.h"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace lazyscope::metrics {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<Counter>> counters;
  std::map<std::string, std::unique_ptr<Metric>> metrics;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: counters outlive static destructors
  return *r;
}

// Gauges describe current state, not history; reset() leaves them alone.
bool is_gauge(const std::string& name) { return name.rfind("Live", 0) == 0; }

double percentile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())));
  return sorted[i];
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

void Metric::add(double value) {
  std::lock_guard lock(mu_);
  ++count_;
  total_ += value;
  if (window_.size() < kWindow) {
    window_.push_back(value);
  } else {
    window_[next_] = value;
    next_ = (next_ + 1) % kWindow;
  }
}

MetricStats Metric::stats() const {
  std::vector<double> sorted;
  MetricStats s;
  {
    std::lock_guard lock(mu_);
    s.count = count_;
    s.total = total_;
    sorted = window_;
  }
  std::sort(sorted.begin(), sorted.end());
  s.p50 = percentile(sorted, 0.5);
  s.p90 = percentile(sorted, 0.9);
  s.p99 = percentile(sorted, 0.99);
  return s;
}

void Metric::reset() {
  std::lock_guard lock(mu_);
  count_ = 0;
  total_ = 0;
  window_.clear();
  next_ = 0;
}

Counter* counter(const std::string& name) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto& slot = r.counters[name];
  if (!slot) slot = std::make_unique<Counter>();
  return slot.get();
}

Metric* metric(const std::string& name) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto& slot = r.metrics[name];
  if (!slot) slot = std::make_unique<Metric>();
  return slot.get();
}

std::map<std::string, int64_t> counters() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::map<std::string, int64_t> out;
  for (auto& [name, c] : r.counters) out[name] = c->value();
  return out;
}

std::map<std::string, MetricStats> metrics() {
  std::vector<std::pair<std::string, Metric*>> all;
  {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    for (auto& [name, m] : r.metrics) all.emplace_back(name, m.get());
  }
  std::map<std::string, MetricStats> out;
  for (auto& [name, m] : all) out[name] = m->stats();
  return out;
}

void reset() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  for (auto& [name, c] : r.counters) {
    if (!is_gauge(name)) c->reset();
  }
  for (auto& [name, m] : r.metrics) m->reset();
}

std::string report() {
  std::string out;
  for (const auto& [name, s] : metrics()) {
    if (s.count == 0) continue;
    out += "Metric: " + name + "\n";
    out += "  TotalSamples: " + std::to_string(s.count) + "\n";
    out += "  Accumulator: " + fmt("%.3fms", s.total) + "\n";
    out += "  Percentiles: 50%=" + fmt("%.3fms", s.p50) + "; 90%=" + fmt("%.3fms", s.p90) +
           "; 99%=" + fmt("%.3fms", s.p99) + "\n";
  }
  for (const auto& [name, v] : counters()) {
    if (v == 0) continue;
    out += "Counter: " + name + "\n  Value: " + std::to_string(v) + "\n";
  }
  return out;
}

}  // namespace lazyscope::metrics
