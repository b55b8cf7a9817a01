// What each step's time went to, per replica: the one definition of a step's
// breakdown (trace, compile, execute, transfer, host wait, fallback) that the
// command line, the diagnosis and the GUI all show. Computed from the events,
// never from a second bookkeeping, so that the diagnosis's "item() made the
// host wait 9 ms" is the sum of the Timeline's host-wait segments.
//
// Definitions:
//  - A step is a barrier that ran a graph: a barrier with nothing pending
//    (a loader's last, empty barrier) is not a step.
//  - The host waits, inside a step, for every sync the script forced by
//    reading a value (item(), .cpu(), bool(), save): the compile of that
//    sync's graph when it missed the cache, plus its execution.
//  - Fallback time is the host kernels' time, which holds the sync of their
//    operands and their transfers; it is not counted again elsewhere.
//  - Compile and execute are those of barriers (and node-limit cuts).
//  - Trace is the rest of the step: Python and the engine's own overhead.
//  - Collective time is the part of the step's executions spent in
//    collectives (waiting for the other replicas, exchanging); it is inside
//    execute (or host wait), not added to it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

struct StepTimes {
  int32_t replica = 0;
  int64_t step = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t trace_ns = 0;
  int64_t compile_ns = 0;
  int64_t execute_ns = 0;
  int64_t transfer_ns = 0;
  int64_t host_wait_ns = 0;
  int64_t fallback_ns = 0;
  int64_t collective_ns = 0;     // inside execute_ns, see above
  int64_t collective_bytes = 0;  // this replica's contribution
  bool ran_graph = false;        // false: an empty barrier, not a step
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// One execution with what the host waited for it: its duration plus the
// compile of its graph just before it (0 when it hit the cache).
struct SyncCost {
  int32_t replica = 0;
  const pb::ExecuteEvent* execute = nullptr;
  const pb::CompileEvent* compile = nullptr;  // the compile it waited for, if any
  int64_t compile_ns = 0;
  int64_t wait_ns() const { return compile_ns + execute->duration_ns(); }
};

// Every execution of `timeline`, in the timeline's order, with its cost.
// The pointers point into `timeline`.
std::vector<SyncCost> sync_costs(const pb::RunTimeline& timeline);

// Every recorded barrier of every replica, by replica then step, with its
// breakdown; filter on ran_graph for the steps.
std::vector<StepTimes> step_times(const pb::RunTimeline& timeline);

// The steps (barriers that ran a graph) of `replica` as chart columns, in
// step order.
pb::StepSeries step_series(const std::vector<StepTimes>& steps, int32_t replica);

// The steps (barriers that ran a graph) of each replica: replica -> count.
std::map<int32_t, int64_t> steps_per_replica(const std::vector<StepTimes>& steps);

// The step numbers every replica ran a graph in: where replicas compare.
std::set<int64_t> common_steps(const std::vector<StepTimes>& steps);

// Per replica, by replica: its steps (barriers that ran a graph; only those
// in `only` when given), median and total step time, time in collectives and
// bytes contributed. What `show`, the diagnosis and the GUI say per rank.
std::vector<pb::ReplicaStats> replica_stats(const std::vector<StepTimes>& steps,
                                            const std::set<int64_t>* only = nullptr);

}  // namespace lazyscope::storage
