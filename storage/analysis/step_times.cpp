#include "analysis/step_times.h"

#include <algorithm>
#include <tuple>

#include "lazyscope/event_text.h"
#include "query/step_median.h"

namespace lazyscope::storage {
namespace {

using StepKey = std::pair<int32_t, int64_t>;  // replica, step

struct PendingCompile {
  const pb::CompileEvent* compile;
  bool taken = false;
};

// A window of host time a fallback took, whose transfers are its own.
struct Window {
  int64_t start_ns;
  int64_t end_ns;
};

bool inside(const std::vector<Window>& windows, int64_t t) {
  return std::any_of(windows.begin(), windows.end(), [t](const Window& w) { return t >= w.start_ns && t <= w.end_ns; });
}

}  // namespace

std::vector<SyncCost> sync_costs(const pb::RunTimeline& timeline) {
  // Compiles by (replica, step, graph): a compile belongs to the first
  // execution of its graph that starts after it, in the same step.
  std::map<std::tuple<int32_t, int64_t, uint64_t>, std::vector<PendingCompile>> compiles;
  for (const pb::Event& event : timeline.events()) {
    if (!event.has_compile()) continue;
    const pb::CompileEvent& c = event.compile();
    compiles[{event.replica(), c.step(), c.graph_hash()}].push_back({&c});
  }
  for (auto& [key, list] : compiles) {
    std::sort(list.begin(), list.end(),
              [](const auto& a, const auto& b) { return a.compile->start_ns() < b.compile->start_ns(); });
  }
  std::vector<const pb::Event*> executions;
  for (const pb::Event& event : timeline.events()) {
    if (event.has_execute()) executions.push_back(&event);
  }
  // Attribute in start order so that the earliest execution gets the compile.
  std::vector<size_t> order(executions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return executions[a]->execute().start_ns() < executions[b]->execute().start_ns();
  });
  std::vector<SyncCost> costs(executions.size());
  for (size_t i : order) {
    const pb::Event& event = *executions[i];
    const pb::ExecuteEvent& x = event.execute();
    SyncCost& cost = costs[i];
    cost.replica = event.replica();
    cost.execute = &x;
    auto found = compiles.find({event.replica(), x.step(), x.graph_hash()});
    if (found == compiles.end()) continue;
    for (auto it = found->second.rbegin(); it != found->second.rend(); ++it) {
      if (!it->taken && it->compile->start_ns() <= x.start_ns()) {
        it->taken = true;
        cost.compile = it->compile;
        cost.compile_ns = it->compile->duration_ns();
        break;
      }
    }
  }
  return costs;
}

std::vector<StepTimes> step_times(const pb::RunTimeline& timeline) {
  std::map<StepKey, StepTimes> steps;
  for (const pb::Event& event : timeline.events()) {
    if (!event.has_step()) continue;
    const pb::StepEvent& s = event.step();
    StepTimes& times = steps[{event.replica(), s.step()}];
    times.replica = event.replica();
    times.step = s.step();
    times.start_ns = s.start_ns();
    times.end_ns = s.end_ns();
    times.collective_ns = s.collective_ns();
    times.collective_bytes = s.collective_bytes();
  }
  const auto at = [&](int32_t replica, int64_t step) -> StepTimes* {
    auto found = steps.find({replica, step});
    return found == steps.end() ? nullptr : &found->second;
  };

  std::map<int32_t, std::vector<Window>> fallback_windows;
  for (const pb::Event& event : timeline.events()) {
    if (!event.has_fallback()) continue;
    const pb::FallbackEvent& f = event.fallback();
    fallback_windows[event.replica()].push_back({f.start_ns(), f.start_ns() + f.duration_ns()});
    if (StepTimes* times = at(event.replica(), f.step())) times->fallback_ns += f.duration_ns();
  }
  for (const SyncCost& cost : sync_costs(timeline)) {
    StepTimes* times = at(cost.replica, cost.execute->step());
    if (times == nullptr) continue;  // after the last barrier
    times->ran_graph = true;
    const pb::SyncCause cause = cost.execute->cause();
    if (cause == pb::SYNC_CAUSE_FALLBACK) continue;  // inside the fallback's own time
    if (event_text::is_value_read(cause)) {
      times->host_wait_ns += cost.wait_ns();
    } else {
      times->compile_ns += cost.compile_ns;
      times->execute_ns += cost.execute->duration_ns();
    }
  }
  for (const pb::Event& event : timeline.events()) {
    if (!event.has_transfer()) continue;
    const pb::TransferEvent& t = event.transfer();
    StepTimes* times = at(event.replica(), t.step());
    if (times == nullptr) continue;
    auto windows = fallback_windows.find(event.replica());
    if (windows != fallback_windows.end() && inside(windows->second, t.start_ns())) continue;
    times->transfer_ns += t.duration_ns();
  }
  std::vector<StepTimes> out;
  out.reserve(steps.size());
  for (auto& [key, times] : steps) {
    const int64_t busy = times.compile_ns + times.execute_ns + times.transfer_ns + times.host_wait_ns +
                         times.fallback_ns;
    times.trace_ns = std::max<int64_t>(0, times.duration_ns() - busy);
    out.push_back(times);
  }
  return out;
}

pb::StepSeries step_series(const std::vector<StepTimes>& steps, int32_t replica) {
  constexpr double kNsPerMs = 1e6;
  const auto ms = [](int64_t ns) { return static_cast<double>(ns) / kNsPerMs; };
  pb::StepSeries series;
  series.set_replica(replica);
  for (const StepTimes& t : steps) {
    if (t.replica != replica || !t.ran_graph) continue;
    series.add_steps(t.step);
    series.add_step_ms(ms(t.duration_ns()));
    series.add_trace_ms(ms(t.trace_ns));
    series.add_compile_ms(ms(t.compile_ns));
    series.add_execute_ms(ms(t.execute_ns));
    series.add_transfer_ms(ms(t.transfer_ns));
    series.add_host_wait_ms(ms(t.host_wait_ns));
    series.add_fallback_ms(ms(t.fallback_ns));
    series.add_collective_ms(ms(t.collective_ns));
  }
  return series;
}

std::map<int32_t, int64_t> steps_per_replica(const std::vector<StepTimes>& steps) {
  std::map<int32_t, int64_t> counts;
  for (const StepTimes& times : steps) {
    if (times.ran_graph) ++counts[times.replica];
  }
  return counts;
}

std::set<int64_t> common_steps(const std::vector<StepTimes>& steps) {
  std::map<int32_t, std::set<int64_t>> by_replica;
  for (const StepTimes& t : steps) {
    if (t.ran_graph) by_replica[t.replica].insert(t.step);
  }
  if (by_replica.empty()) return {};
  std::set<int64_t> common = by_replica.begin()->second;
  for (const auto& [replica, ran] : by_replica) {
    std::erase_if(common, [&ran](int64_t s) { return !ran.contains(s); });
  }
  return common;
}

std::vector<pb::ReplicaStats> replica_stats(const std::vector<StepTimes>& steps, const std::set<int64_t>* only) {
  constexpr double kNsPerMs = 1e6;
  std::map<int32_t, pb::ReplicaStats> stats;
  std::map<int32_t, std::vector<int64_t>> durations;
  for (const StepTimes& t : steps) {
    if (!t.ran_graph || (only != nullptr && !only->contains(t.step))) continue;
    pb::ReplicaStats& s = stats[t.replica];
    s.set_replica(t.replica);
    s.set_steps(s.steps() + 1);
    s.set_step_ms(s.step_ms() + static_cast<double>(t.duration_ns()) / kNsPerMs);
    s.set_collective_ms(s.collective_ms() + static_cast<double>(t.collective_ns) / kNsPerMs);
    s.set_collective_bytes(s.collective_bytes() + t.collective_bytes);
    durations[t.replica].push_back(t.duration_ns());
  }
  std::vector<pb::ReplicaStats> out;
  out.reserve(stats.size());
  for (auto& [replica, s] : stats) {
    s.set_step_p50_ms(median_ms(std::move(durations[replica])));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace lazyscope::storage
