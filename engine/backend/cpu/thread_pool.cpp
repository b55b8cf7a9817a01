#include "backend/cpu/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/settings.h"

extern "C" void openblas_set_num_threads(int);

namespace lazyscope::cpu {
namespace {

thread_local bool t_in_region = false;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How long an idle worker spins after its last region before it sleeps
// (LAZYSCOPE_POOL_SPIN_US, default 2000), unless wake() asked for longer.
// A training step's regions come in bursts a step apart, with the Python
// tracing of the next step (0.1-0.3 ms for the MLP) in between. With a
// ~100 us spin the worker slept between every two steps, and on a VM a
// sleeping vCPU is slow to wake once the host has stopped polling for it:
// after a 0.25 s pause the MLP's steps ran at one thread's speed (3.5 ms
// against 1.8) for more than ten steps, the worker waking after each region
// had ended (benchmarks/README.md, "Session 8"). OpenBLAS's own threads
// spin ~0.1 s for the same reason. 2 ms covers a step's gap and costs an
// idle core, bounded, once a burst of work ends. A process of a
// multi-process job (LAZYSCOPE_WORLD_SIZE > 1, set by `lazyscope run
// --nproc-per-node`) shares the cores with the others, where a spinning
// worker takes one from a sibling: 100 us there, as before.
int64_t spin_ns() {
  static const int64_t ns = [] {
    const char* env = std::getenv("LAZYSCOPE_POOL_SPIN_US");
    if (env && *env) return std::clamp<int64_t>(std::atoll(env), 0, 1000000) * 1000;
    const char* world = std::getenv("LAZYSCOPE_WORLD_SIZE");
    return (world && std::atoll(world) > 1 ? int64_t{100} : int64_t{2000}) * 1000;
  }();
  return ns;
}
// A child of fork() has none of the pool's threads: its regions run on the
// calling thread (a data-loader worker forked from a process that used the
// pool would otherwise wait forever for workers that do not exist).
std::atomic<bool> g_forked{false};

class Pool {
 public:
  explicit Pool(int n) : n_(n) {
    // GEMM runs on the pool's threads (one OpenBLAS thread per caller);
    // OpenBLAS's own pool would otherwise busy-wait beside ours.
    openblas_set_num_threads(1);
    pthread_atfork(nullptr, nullptr, [] { g_forked.store(true); });
    for (int i = 1; i < n_; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    if (g_forked.load()) return;  // no threads to join in a forked child
    stop_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int size() const { return n_; }
  int sleeping() const { return sleeping_.load(); }
  void park() { park_.store(true, std::memory_order_relaxed); }

  // Workers asleep are woken now (a region with no parts: they join none
  // and go back to spinning) and every idle worker spins until `spin_us`
  // from now, unless the pool ran no region since the last call: a program
  // that uses one thread (a small graph) wakes nobody, so a loop of them
  // leaves the other cores alone.
  void wake(int64_t spin_us) {
    if (n_ <= 1 || g_forked.load(std::memory_order_relaxed) || !ran_region_.exchange(false)) return;
    const int64_t until = now_ns() + spin_us * 1000;
    // Sequentially consistent, as the worker's count of sleepers and its
    // read of the deadline below: a worker about to sleep either sees this
    // deadline and spins on, or is counted here and woken.
    spin_until_.store(until);
    park_.store(false, std::memory_order_relaxed);
    if (sleeping_.load() == 0) return;
    std::unique_lock lock(busy_, std::try_to_lock);  // a region running: its workers are awake
    if (!lock.owns_lock()) return;
    generation_.store(generation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    generation_.notify_all();
  }

  // Parts are claimed from a counter by whoever is running: the caller
  // starts at once and takes every part a late worker has not claimed, so a
  // worker the OS has descheduled (a loaded machine) delays nothing. The
  // caller waits only for workers that joined while the region was open.
  void run(int nth, RegionBody body) {
    if (t_in_region || nth <= 1 || n_ <= 1 || g_forked.load(std::memory_order_relaxed)) {
      serial(nth, body);
      return;
    }
    std::unique_lock lock(busy_, std::try_to_lock);  // after the t_in_region check: no recursive try_lock
    if (!lock.owns_lock()) {
      serial(nth, body);
      return;
    }
    ran_region_.store(true, std::memory_order_relaxed);
    body_ = &body;
    nth_ = nth;
    error_ = nullptr;
    next_.store(0, std::memory_order_relaxed);
    park_.store(false, std::memory_order_relaxed);
    const uint64_t g = generation_.load(std::memory_order_relaxed) + 1;
    open_.store(g, std::memory_order_release);
    generation_.store(g, std::memory_order_release);
    generation_.notify_all();
    t_in_region = true;
    claim_parts();
    t_in_region = false;
    // Sequentially consistent: this store and the load of active_ below
    // pair with the worker's increment and load of open_ (a store then a
    // load on each side, which x86 may otherwise reorder).
    open_.store(0);  // no worker joins from here on
    for (int spin = 0; spin < 4000 && active_.load() != 0; ++spin) __builtin_ia32_pause();
    for (int a = active_.load(); a != 0; a = active_.load()) {
      active_.wait(a);
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static void serial(int nth, RegionBody body) {
    for (int ith = 0; ith < (nth < 1 ? 1 : nth); ++ith) body(ith, nth < 1 ? 1 : nth);
  }

  void record(std::exception_ptr e) {
    std::lock_guard lock(error_mu_);
    if (!error_) error_ = std::move(e);
  }

  void claim_parts() {
    const int nth = nth_;
    for (int ith = next_.fetch_add(1, std::memory_order_relaxed); ith < nth;
         ith = next_.fetch_add(1, std::memory_order_relaxed)) {
      try {
        (*body_)(ith, nth);
      } catch (...) {
        record(std::current_exception());
      }
    }
  }

  void work() {
    t_in_region = true;
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = generation_.load(std::memory_order_acquire);
      // spin_ns() of pauses after a region, longer until the deadline a
      // wake() set (the clock read every 64 pauses).
      const int64_t spin_end = now_ns() + spin_ns();
      for (int spin = 1; g == seen && !park_.load(std::memory_order_relaxed); ++spin) {
        if (spin % 64 == 0) {
          const int64_t now = now_ns();
          if (now >= spin_end && now >= spin_until_.load(std::memory_order_relaxed)) break;
        }
        __builtin_ia32_pause();
        g = generation_.load(std::memory_order_acquire);
      }
      if (g == seen) {
        sleeping_.fetch_add(1);
        // A wake() that came after the spin ended but did not count this
        // worker: spin again rather than sleep through it.
        const bool woken = now_ns() < spin_until_.load() && !park_.load(std::memory_order_relaxed);
        if (!woken) {
          while (g == seen) {
            generation_.wait(seen);
            g = generation_.load(std::memory_order_acquire);
          }
        }
        sleeping_.fetch_sub(1);
        if (woken) continue;
      }
      seen = g;
      if (stop_.load()) return;
      // Join only while the region is open; counted first, so the caller
      // either sees this worker active or the worker sees the region closed.
      active_.fetch_add(1);
      if (open_.load() == g) claim_parts();
      if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) active_.notify_all();
    }
  }

  const int n_;
  std::vector<std::thread> workers_;
  std::mutex busy_;  // one region at a time
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> open_{0};  // the generation of the open region, 0: none
  std::atomic<int> next_{0};       // the next part to claim
  std::atomic<int> active_{0};     // workers inside the open region
  std::atomic<bool> stop_{false};
  std::atomic<bool> park_{false};        // park_workers(): idle workers sleep at once
  std::atomic<bool> ran_region_{false};  // a region ran since the last wake()
  std::atomic<int64_t> spin_until_{0};   // wake(): idle workers spin until this steady-clock time (ns)
  std::atomic<int> sleeping_{0};         // workers asleep or about to be
  const RegionBody* body_ = nullptr;
  int nth_ = 1;
  std::mutex error_mu_;
  std::exception_ptr error_;
};

Pool& pool() {
  // Leaked on purpose: workers must not be joined during static destruction,
  // when a kernel may still run from another static's destructor.
  static Pool* p = new Pool(static_cast<int>(std::max<int64_t>(1, settings::num_threads())));
  return *p;
}

}  // namespace

namespace {
std::atomic<int> g_active{1 << 20};  // no limit
}  // namespace

int num_threads() { return std::min(pool().size(), g_active.load(std::memory_order_relaxed)); }

int set_active_threads(int n) {
  const int previous = num_threads();
  g_active.store(std::max(1, n));
  return previous;
}

void parallel_region(int nth, RegionBody body) { pool().run(nth, body); }

void park_workers() { pool().park(); }

void wake_workers(int64_t spin_us) { pool().wake(spin_us); }

int pool_size() { return pool().size(); }

int sleeping_workers() { return pool().sleeping(); }

bool in_parallel_region() { return t_in_region; }

}  // namespace lazyscope::cpu
