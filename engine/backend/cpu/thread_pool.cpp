#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/settings.h"

extern "C" void openblas_set_num_threads(int);

namespace lazyscope::cpu {
namespace {

thread_local bool t_in_region = false;

class Pool {
 public:
  explicit Pool(int n) : n_(n) {
    // GEMM runs on the pool's threads (one OpenBLAS thread per caller);
    // OpenBLAS's own pool would otherwise busy-wait beside ours.
    openblas_set_num_threads(1);
    for (int i = 1; i < n_; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~Pool() {
    stop_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int size() const { return n_; }

  void run(int nth, RegionBody body) {
    if (nth > n_) nth = n_;
    if (t_in_region || nth <= 1) {  // checked first: try_lock on a mutex this thread holds is undefined
      serial(nth, body);
      return;
    }
    std::unique_lock lock(busy_, std::try_to_lock);
    if (!lock.owns_lock()) {
      serial(nth, body);
      return;
    }
    body_ = &body;
    nth_ = nth;
    error_ = nullptr;
    // Every worker acknowledges every region, those beyond nth without
    // working: a worker waking late then cannot mistake the next region's
    // body for this one's.
    pending_.store(n_ - 1);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    t_in_region = true;
    try {
      body(0, nth);
    } catch (...) {
      record(std::current_exception());
    }
    t_in_region = false;
    // Short parts finish within microseconds: spin a little before sleeping.
    for (int spin = 0; spin < 2000 && pending_.load(std::memory_order_acquire) != 0; ++spin) __builtin_ia32_pause();
    for (int p = pending_.load(std::memory_order_acquire); p != 0; p = pending_.load(std::memory_order_acquire)) {
      pending_.wait(p);
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

  void work(int ith) {
    t_in_region = true;
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = generation_.load(std::memory_order_acquire);
      for (int spin = 0; g == seen && spin < 2000; ++spin) {
        __builtin_ia32_pause();
        g = generation_.load(std::memory_order_acquire);
      }
      while (g == seen) {
        generation_.wait(seen);
        g = generation_.load(std::memory_order_acquire);
      }
      seen = g;
      if (stop_.load()) return;
      if (ith < nth_) {
        try {
          (*body_)(ith, nth_);
        } catch (...) {
          record(std::current_exception());
        }
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
      }
    }
  }

  const int n_;
  std::vector<std::thread> workers_;
  std::mutex busy_;  // one region at a time
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
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

}  // namespace lazyscope::cpu
