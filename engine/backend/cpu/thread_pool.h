// One thread pool for every CPU kernel, and one convention: a parallel
// region runs body(ith, nth) once for each ith in [0, nth), the caller
// being ith 0. Work is split by index arithmetic inside the body (split()),
// never by queueing tasks, so a region costs one wake-up and one join.
//
// GEMM shares the pool: OpenBLAS is set to one thread and the pool splits
// the output rows (see kernels_layout.cpp), so OpenBLAS's own threads never
// spin against the pool's (they did: ~30% of an MLP step in sched_yield).
//
// Parts are claimed from a counter by the caller and the workers that wake
// in time, so body(ith, nth) may run any of the nth parts on any thread.
//
// A region started while another runs (a replica thread, or a kernel
// called from inside a region) runs its nth parts in turn on its own
// thread: correct, just not parallel.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

namespace lazyscope::cpu {

// The threads a region uses: the pool's size (settings::num_threads(), at
// least 1), unless narrowed by set_active_threads.
int num_threads();
// Uses at most n (>= 1) of the pool's threads from now on; returns the
// previous limit. For benchmarks comparing thread counts in one process.
int set_active_threads(int n);

// A non-owning reference to a callable body(int ith, int nth).
class RegionBody {
 public:
  template <typename F>
  RegionBody(F& f) : object_(&f), call_([](void* o, int ith, int nth) { (*static_cast<F*>(o))(ith, nth); }) {}
  void operator()(int ith, int nth) const { call_(object_, ith, nth); }

 private:
  void* object_;
  void (*call_)(void*, int, int);
};

// Runs body(ith, nth) for ith in [0, nth) on the pool; returns when all are
// done. The first exception thrown by any part is rethrown here.
void parallel_region(int nth, RegionBody body);

// Ends the idle workers' spin now: they sleep (futex) until the next
// region instead of spinning ~4000 pauses after the last one. Called before
// handing the cores to another library's threads for a while (one oneDNN
// or OpenBLAS call on its own threads), which a spinning worker would
// otherwise compete with on a small machine.
void park_workers();

// Wakes the pool's idle workers, if asleep, and keeps them spinning for up
// to `spin_us` microseconds or until the next region: called when a program
// is about to run (CpuBackend::will_run, at a sync's start, when
// LAZYSCOPE_POOL_WAKE_US is set), so the first kernels do not pay a
// sleeping worker's wake-up (~30 us on this VM) while the executor
// prepares the run. Does nothing with one thread, or when no
// region ran since the last call (a program on one thread wakes nobody).
void wake_workers(int64_t spin_us);

// The pool's threads, the caller's included (set_active_threads aside), and
// how many of its workers are asleep (or about to be): for tests.
int pool_size();
int sleeping_workers();

// Whether the calling thread is a pool worker or runs inside a region: a
// kernel called there must not start threads of its own.
bool in_parallel_region();

// [begin, end) of part ith of nth over [0, n), in multiples of `align`.
inline std::pair<int64_t, int64_t> split(int64_t n, int ith, int nth, int64_t align = 1) {
  const int64_t blocks = (n + align - 1) / align;
  const int64_t per = blocks / nth, extra = blocks % nth;
  const int64_t b0 = ith * per + (ith < extra ? ith : extra);
  const int64_t b1 = b0 + per + (ith < extra ? 1 : 0);
  const int64_t begin = b0 * align, end = b1 * align;
  return {begin < n ? begin : n, end < n ? end : n};
}

// f(begin, end) over [0, n) split across the pool, in one part when n is
// under `grain` elements (a wake-up costs more than a small loop).
// Up to 4 parts per thread, claimed dynamically: a thread that starts late
// (a loaded machine) leaves its parts to the others.
template <typename F> void parallel_for(int64_t n, int64_t grain, F&& f) {
  const int threads = num_threads();
  if (grain < 1) grain = 1;
  int nth = threads <= 1 ? 1 : static_cast<int>(std::min<int64_t>(n / grain, 4 * threads));
  if (nth <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  auto body = [&](int ith, int parts) {
    const auto [b, e] = split(n, ith, parts, 16);  // 16 elements: a cache line of float32
    if (b < e) f(b, e);
  };
  parallel_region(nth, RegionBody(body));
}

}  // namespace lazyscope::cpu
