#include "metrics/metrics.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "lazyscope/event_text.h"
#include "lazyscope/percentile.h"

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
bool is_gauge(const std::string& name) { return event_text::is_gauge_metric(name); }

// Selection, not a full sort: three quantiles of a 1024-sample window cost a
// few microseconds, which keeps the per-step snapshot cheap. Quantiles are
// asked for in increasing order, so each selection only scans the tail. The
// definition (linear interpolation, as NumPy's) is stats::percentile's.
double percentile(std::vector<double>& values, size_t& from, double q) {
  if (values.empty()) return 0;
  const stats::Rank rank = stats::percentile_rank(values.size(), q);
  const size_t i = rank.lower;
  std::nth_element(values.begin() + static_cast<std::ptrdiff_t>(std::min(from, i)),
                   values.begin() + static_cast<std::ptrdiff_t>(i), values.end());
  from = i;
  if (rank.fraction == 0.0 || i + 1 >= values.size()) return values[i];
  // Everything after i is at least values[i]; the next rank is their least.
  const double next = *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(i + 1), values.end());
  return values[i] + rank.fraction * (next - values[i]);
}

// What the last snapshot returned, to tell what changed since.
struct Published {
  std::mutex mu;
  std::map<std::string, int64_t> counters;
  std::map<std::string, int64_t> metric_counts;
};

Published& published() {
  static auto* p = new Published();
  return *p;
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
  size_t from = 0;
  s.p50 = percentile(sorted, from, 0.5);
  s.p90 = percentile(sorted, from, 0.9);
  s.p99 = percentile(sorted, from, 0.99);
  return s;
}

int64_t Metric::count() const {
  std::lock_guard lock(mu_);
  return count_;
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
  reset_counters();
  reset_metrics();
}

// A reset also forgets what the snapshots last published for what it
// reset: a counter published at 1, reset and counted to 1 again has changed
// and must be in the next changed-only snapshot (it was not: the baseline
// still said 1). The two locks are taken one after the other, never nested,
// as snapshot() takes them.
void reset_counters() {
  std::vector<std::string> reset;
  {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    for (auto& [name, c] : r.counters) {
      if (is_gauge(name)) continue;
      c->reset();
      reset.push_back(name);
    }
  }
  Published& p = published();
  std::lock_guard lock(p.mu);
  for (const std::string& name : reset) p.counters.erase(name);
}

void reset_metrics() {
  {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    for (auto& [name, m] : r.metrics) m->reset();
  }
  Published& p = published();
  std::lock_guard lock(p.mu);
  p.metric_counts.clear();
}

std::vector<SnapshotEntry> snapshot(bool only_changed) {
  std::vector<std::pair<std::string, Counter*>> counters_now;
  std::vector<std::pair<std::string, Metric*>> metrics_now;
  {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    for (auto& [name, c] : r.counters) counters_now.emplace_back(name, c.get());
    for (auto& [name, m] : r.metrics) metrics_now.emplace_back(name, m.get());
  }
  Published& p = published();
  std::lock_guard lock(p.mu);
  std::vector<SnapshotEntry> out;
  for (const auto& [name, c] : counters_now) {
    const int64_t v = c->value();
    auto [it, inserted] = p.counters.try_emplace(name, v);
    if (only_changed && !inserted && it->second == v) continue;
    if (only_changed && inserted && v == 0) continue;
    it->second = v;
    out.push_back({name, true, v, {}});
  }
  for (const auto& [name, m] : metrics_now) {
    const int64_t count = m->count();  // cheap; the percentiles only for what changed
    auto [it, inserted] = p.metric_counts.try_emplace(name, count);
    if (only_changed && !inserted && it->second == count) continue;
    if (only_changed && inserted && count == 0) continue;
    it->second = count;
    out.push_back({name, false, 0, m->stats()});
  }
  return out;
}

namespace {
void append_metric(std::string& out, const std::string& name, const MetricStats& s) {
  out += "Metric: " + name + "\n";
  out += "  TotalSamples: " + std::to_string(s.count) + "\n";
  out += "  Accumulator: " + fmt("%.3fms", s.total) + "\n";
  out += "  Percentiles: 50%=" + fmt("%.3fms", s.p50) + "; 90%=" + fmt("%.3fms", s.p90) +
         "; 99%=" + fmt("%.3fms", s.p99) + "\n";
}
}  // namespace

std::string report() {
  std::string out;
  for (const auto& [name, s] : metrics()) {
    if (s.count != 0) append_metric(out, name, s);
  }
  for (const auto& [name, v] : counters()) {
    if (v == 0) continue;
    out += "Counter: " + name + "\n  Value: " + std::to_string(v) + "\n";
  }
  return out;
}

std::string short_report() {
  // The headline figures, in the order a reader checks them.
  static const char* const kMetrics[] = {"CompileTime", "ExecuteTime", "TransferToDeviceTime",
                                         "TransferFromDeviceTime"};
  std::string out;
  const auto all = metrics();
  for (const char* name : kMetrics) {
    if (auto it = all.find(name); it != all.end() && it->second.count != 0) append_metric(out, name, it->second);
  }
  for (const auto& [name, v] : counters()) {
    const bool headline = name == "UncachedCompile" || name == "CachedCompile" || name.starts_with("Fallback.");
    if (headline && v != 0) out += "Counter: " + name + "\n  Value: " + std::to_string(v) + "\n";
  }
  return out;
}

}  // namespace lazyscope::metrics
