#include "analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace lazyscope::storage {
namespace {

double cache_hit_rate(const pb::RunSummary& summary) {
  return summary.executions() > 0
             ? static_cast<double>(summary.cache_hits()) / static_cast<double>(summary.executions())
             : 0.0;
}

// Which way a metric is better, and how its noise is estimated.
enum class Better { Neither, Lower, Higher };
enum class Noise {
  None,        // an exact count or ratio
  StepSpread,  // one step: the spread of the step times
  StepTotal,   // a sum over the steps
  Compiles,    // a sum over the compiles
  Executions,  // a sum over the executions
};

struct Metric {
  const char* name;
  double (*of)(const pb::RunSummary&);
  bool is_count;
  Better better;
  Noise noise;
};

// The rows of the summary comparison, in display order. Steps and executions
// are how much work a run did, not a cost: neither more nor fewer is better.
const Metric kMetrics[] = {
    {"steps", [](const pb::RunSummary& s) { return static_cast<double>(s.steps()); }, true, Better::Neither,
     Noise::None},
    {"wall_ms", [](const pb::RunSummary& s) { return s.wall_ms(); }, false, Better::Lower, Noise::StepTotal},
    {"median_step_ms", [](const pb::RunSummary& s) { return s.median_step_ms(); }, false, Better::Lower,
     Noise::StepSpread},
    {"compiles", [](const pb::RunSummary& s) { return static_cast<double>(s.compiles()); }, true, Better::Lower,
     Noise::None},
    {"compile_ms", [](const pb::RunSummary& s) { return s.compile_ms(); }, false, Better::Lower, Noise::Compiles},
    {"executions", [](const pb::RunSummary& s) { return static_cast<double>(s.executions()); }, true, Better::Neither,
     Noise::None},
    {"execute_ms", [](const pb::RunSummary& s) { return s.execute_ms(); }, false, Better::Lower, Noise::Executions},
    {"cache_hit_rate", cache_hit_rate, false, Better::Higher, Noise::None},
    {"fallbacks", [](const pb::RunSummary& s) { return static_cast<double>(s.fallbacks()); }, true, Better::Lower,
     Noise::None},
};

// The median absolute deviation of `values_ms`: a spread that one slow
// first step or compile does not inflate.
double mad(std::vector<double> values_ms) {
  if (values_ms.size() < 2) return 0.0;
  const auto middle = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
  };
  const double median = middle(values_ms);
  for (double& v : values_ms) v = std::abs(v - median);
  return middle(values_ms);
}

struct Spread {
  double per_sample_ms = 0.0;  // MAD of one sample
  double samples = 0.0;
};

Spread spread_of(const RunData& run, Noise noise) {
  std::vector<double> values;
  switch (noise) {
    case Noise::StepSpread:
    case Noise::StepTotal:
      for (const StepTimes& step : run.step_times) {
        if (step.replica == 0 && step.ran_graph) values.push_back(static_cast<double>(step.duration_ns()) / 1e6);
      }
      break;
    case Noise::Compiles:
      for (const pb::CompileEvent& c : run.compiles) values.push_back(static_cast<double>(c.duration_ns()) / 1e6);
      break;
    case Noise::Executions:
      for (const pb::ExecuteEvent& x : run.executions) values.push_back(static_cast<double>(x.duration_ns()) / 1e6);
      break;
    case Noise::None: break;
  }
  // Fewer than three samples say nothing about their spread: then a change
  // the size of a typical sample cannot be told from noise.
  const double samples = static_cast<double>(values.size());
  if (values.size() < 3) {
    double typical = 0.0;
    for (double v : values) typical = std::max(typical, v);
    return {typical, samples};
  }
  return {mad(std::move(values)), samples};
}

// How large a change is still noise: for one step, the larger of the runs'
// step-time spreads; for a sum of n samples, the spread of one sample times
// sqrt(n) (independent samples), with the larger of the two runs' figures.
double noise_of(const RunData& a, const RunData& b, Noise noise) {
  if (noise == Noise::None) return 0.0;
  const Spread sa = spread_of(a, noise);
  const Spread sb = spread_of(b, noise);
  const double per_sample = std::max(sa.per_sample_ms, sb.per_sample_ms);
  if (noise == Noise::StepSpread) return per_sample;
  return per_sample * std::sqrt(std::max(sa.samples, sb.samples));
}

int verdict_of(const Metric& metric, double delta, double noise) {
  if (metric.better == Better::Neither || delta == 0 || std::abs(delta) <= noise) return 0;
  return (delta < 0) == (metric.better == Better::Lower) ? 1 : -1;
}

void fill_deltas(pb::GraphMatch& match) {
  match.set_compiles_delta(match.b().compiles() - match.a().compiles());
  match.set_compile_ms_delta(match.b().compile_ms() - match.a().compile_ms());
  match.set_executions_delta(match.b().executions() - match.a().executions());
  match.set_execute_ms_delta(match.b().execute_ms() - match.a().execute_ms());
}

void compare_graphs(const RunData& a, const RunData& b, pb::RunComparison& out) {
  std::unordered_map<uint64_t, const pb::GraphInfo*> in_b;
  for (const pb::GraphInfo& graph : b.graphs) in_b.emplace(graph.hash(), &graph);
  std::unordered_map<uint64_t, const pb::GraphInfo*> in_a;
  for (const pb::GraphInfo& graph : a.graphs) in_a.emplace(graph.hash(), &graph);

  // A's order first (order of first use), then B's own graphs in B's order.
  for (const pb::GraphInfo& graph : a.graphs) {
    auto found = in_b.find(graph.hash());
    pb::GraphMatch& match = found == in_b.end() ? *out.add_only_a() : *out.add_both();
    match.set_hash(graph.hash());
    *match.mutable_a() = graph;
    if (found != in_b.end()) *match.mutable_b() = *found->second;
    fill_deltas(match);
  }
  for (const pb::GraphInfo& graph : b.graphs) {
    if (in_a.contains(graph.hash())) continue;
    pb::GraphMatch& match = *out.add_only_b();
    match.set_hash(graph.hash());
    *match.mutable_b() = graph;
    fill_deltas(match);
  }
}

using ReasonKey = std::tuple<int, std::string, int32_t>;  // kind, file, line

// A line of the run's own script is keyed by its line alone: comparing a
// script with its fixed copy (recompile_demo.py, recompile_fixed.py) must pair
// line 24 with line 24, not list each file's compiles as appearing and
// vanishing. Other files (libraries) keep their path.
std::string reason_file_key(const pb::SourceLocation& source, const pb::RunInfo& run) {
  namespace fs = std::filesystem;
  if (source.file().empty() || run.script_path().empty()) return source.file();
  return fs::path(source.file()).filename() == fs::path(run.script_path()).filename() ? std::string() : source.file();
}

void compare_reasons(const RunData& a, const RunData& b, pb::RunComparison& out) {
  std::map<ReasonKey, pb::CompileReasonDelta> groups;
  const auto count = [&](const RunData& run, bool is_a) {
    for (const pb::CompileEvent& compile : run.compiles) {
      pb::CompileReasonDelta& group = groups[{
          compile.reason_kind(), reason_file_key(compile.source(), run.summary.run()), compile.source().line()}];
      group.set_kind(compile.reason_kind());
      if (!group.has_source()) *group.mutable_source() = compile.source();  // A's file where both have it
      const double compile_ms = static_cast<double>(compile.duration_ns()) / 1e6;
      if (is_a) {
        group.set_count_a(group.count_a() + 1);
        group.set_compile_ms_a(group.compile_ms_a() + compile_ms);
      } else {
        group.set_count_b(group.count_b() + 1);
        group.set_compile_ms_b(group.compile_ms_b() + compile_ms);
      }
    }
  };
  count(a, true);
  count(b, false);
  for (auto& [key, group] : groups) {
    if (group.count_a() != group.count_b()) *out.add_reasons() = std::move(group);
  }
}

}  // namespace

pb::RunComparison compare_runs(const RunData& a, const RunData& b) {
  pb::RunComparison out;
  *out.mutable_a() = a.summary;
  *out.mutable_b() = b.summary;
  for (const Metric& metric : kMetrics) {
    pb::MetricDelta& delta = *out.add_metrics();
    delta.set_metric(metric.name);
    delta.set_a(metric.of(a.summary));
    delta.set_b(metric.of(b.summary));
    delta.set_delta(delta.b() - delta.a());
    delta.set_is_count(metric.is_count);
    delta.set_noise(noise_of(a, b, metric.noise));
    delta.set_verdict(verdict_of(metric, delta.delta(), delta.noise()));
  }
  compare_graphs(a, b, out);
  compare_reasons(a, b, out);
  return out;
}

}  // namespace lazyscope::storage
