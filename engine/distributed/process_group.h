// The process group: this process's place among the worker processes of a
// multi-process run (`lazyscope run --nproc-per-node N`, one lazy device per
// process), and the Gloo context its collectives go through.
//
// Replicas that are threads of one process meet in backend/collective's
// in-process rendezvous; replicas that are processes meet here. The
// all_reduce kernel tells them apart by the group key its node carries:
// kProcessGroupKey names this group (the same key in every rank, so every
// rank traces the same graph hash).
//
// Rendezvous: when the launcher was given --master-addr/--master-port, the
// store node 0's launcher serves over TCP (tcp_store.h; store_dir is then
// "tcp://HOST:PORT"), so machines need no shared folder; else Gloo's
// FileStore in a directory (the launcher makes one per job) — Gloo in Debian
// 12 ships a file store and a Redis store, no TCP store. Either way with a
// per-job prefix, and Gloo's TCP transport for the data.
//
// Determinism: all_reduce is an all-gather of every rank's contribution
// followed by a reduction in rank order on every rank — the same code and
// order as the thread replicas' reduction — so every rank gets the same
// bits, equal to thread replicas on the same data. Gloo's ring all-reduce
// would reduce in a rank-dependent order (different bits per rank for
// floats).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lazyscope::distributed {

// Above every key collective::register_group makes (47 bits).
constexpr int64_t kProcessGroupKey = int64_t{1} << 50;

struct InitOptions {
  int rank = -1;
  int world_size = 0;
  std::string store_dir;  // Gloo FileStore directory, or "tcp://HOST:PORT" (tcp_store.h)
  std::string prefix;     // the job's key prefix in the store
  std::string hostname;   // the address this rank's TCP transport binds to
  double timeout_s = 60;  // rendezvous and each collective
};

// Joins the group: blocks until every rank has arrived (or timeout_s passed:
// an EngineError naming the ranks that never arrived). Throws when already
// initialized.
void init(const InitOptions& options);
// Leaves the group (collectives afterwards raise). Idempotent.
void destroy();
bool initialized();
int rank();        // throws when not initialized
int world_size();  // throws when not initialized

// Whether small exchanges are tuned: TCP_NODELAY on Gloo's sockets, and a
// small all_reduce in one exchange (backend/collective.cpp). On unless
// LAZYSCOPE_GLOO_TUNING=0, which runs collectives as they ran before, for
// benchmarks/distributed_bench.py to measure both side by side.
bool small_message_tuning();

// Cumulative totals of this process's collectives, for the metrics report
// and the benchmark.
struct Totals {
  int64_t collectives = 0;
  int64_t bytes_sent = 0;  // this rank's contributions
  int64_t wait_ns = 0;     // time blocked in Gloo
};
Totals totals();

// Every rank's `bytes` bytes at `in`, concatenated in rank order into `out`
// (world_size * bytes). `what` names the collective in errors. `counted`:
// the bytes that count as this rank's contribution in the totals and the
// CollectiveBytes counter (-1: all of them; less when some are a header or
// padding).
void all_gather(const std::string& what, const void* in, size_t bytes, void* out, int64_t counted = -1);
// (broadcast, all_gather and reduce_scatter of tensors are all_reduce ops:
// lazyscope.distributed writes them so, and they stay in the step's graph.)
void barrier(const std::string& what);

}  // namespace lazyscope::distributed
