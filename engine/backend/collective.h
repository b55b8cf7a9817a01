// Collectives between replicas that are threads of this process (one lazy
// device each: DataParallel, spawn). PyTorch/XLA lowers all_reduce into the
// step's graph as a cross-replica sum; here each replica thread executes its
// own copy of the step graph and the all_reduce kernel meets the other
// replicas' executions of the same collective in an in-process rendezvous:
//
//   * a replica group (its devices, in rank order) is registered before the
//     replica threads start, and named by the key the graph's all_reduce
//     nodes carry as their `group` attribute (the same in every replica, so
//     the replicas share one compiled graph);
//   * the n-th collective a replica executes in a group meets the n-th of
//     every other replica — for a training loop that is (step, position of
//     the collective in the step's graph), since every replica runs the same
//     graph and the executor runs it in one fixed order (as NCCL matches
//     collectives by issue order). Contributions that disagree on
//     shape, dtype or reduce kind are an error naming both;
//   * the last replica to arrive reduces every contribution in rank order
//     (so all replicas get bit-identical, run-to-run deterministic results)
//     straight into each waiting replica's output buffer, and wakes them;
//   * a replica that never arrives (it raised, or took another path) does
//     not hang the process: waiters give up after settings::
//     collective_timeout_s() with an error naming the op, the group and the
//     missing replicas, and a group aborted by its owner (the replica runner
//     saw a replica fail) releases them at once. Either way the group is
//     broken from then on: its later collectives fail fast.
//
// No Gloo/MPI: the replicas share an address space, so a mutex, a condition
// variable and the buffers' pointers are all a collective needs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/buffer.h"
#include "ir/op_table.h"

namespace lazyscope::collective {

// Registers a group of lazy-device ordinals (rank i = devices[i]); returns its
// key. Throws for an empty group or a device listed twice.
int64_t register_group(const std::vector<int>& device_ordinals);
// Forgets the group; collectives still waiting in it fail as aborted.
void unregister_group(int64_t key);
// Breaks the group: waiting and later collectives in it raise `reason`.
void abort_group(int64_t key, const std::string& reason);
// The registered groups' count, for tests (a runner must not leak groups).
size_t group_count();

// Which lazy device (and step) the current thread is executing a graph for:
// set by the executor around Executable::execute, read by the all_reduce
// kernel to find its rank. Nests (restores the previous value).
class ExecutingDevice {
 public:
  ExecutingDevice(int device_ordinal, int64_t step);
  ~ExecutingDevice();
  ExecutingDevice(const ExecutingDevice&) = delete;
  ExecutingDevice& operator=(const ExecutingDevice&) = delete;

 private:
  int previous_device_;
  int64_t previous_step_;
};

// Time spent in collectives and bytes contributed by `device_ordinal` since
// the last call (the executor reports them in each step's StepEvent).
struct DeviceTotals {
  int64_t ns = 0;
  int64_t bytes = 0;
};
DeviceTotals take_device_totals(int device_ordinal);

// Hooks run around the blocking part of a collective: the Python extension
// releases the GIL there, or a replica thread waiting in the rendezvous
// would keep the others from tracing the step that brings their
// contribution. `release` returns a token that `reacquire` gets back.
using ReleaseHook = void* (*)();
using ReacquireHook = void (*)(void*);
void set_blocking_hooks(ReleaseHook release, ReacquireHook reacquire);

// Reduces contributions (in rank order) into every replica's output
// (outputs[r] is rank r's). Called once per collective, by the last arrival,
// while every other participant is blocked, so all the buffers are alive.
using ReduceFn = std::function<void(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs)>;

// The rendezvous of one all_reduce execution of the calling thread's
// executing device (see ExecutingDevice) in group `group`. `op` names the
// collective for messages ("all_reduce(sum)"); `reduce` distinguishes kinds
// that must match across replicas. Blocks until every rank has contributed;
// throws EngineError on timeout, abort, or mismatched contributions.
void rendezvous(std::string_view op, int64_t group, int64_t reduce, const Buffer& input, Buffer& output,
                const ReduceFn& reduce_fn);

}  // namespace lazyscope::collective
