#include "backend/cpu/onednn.h"

#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace lazyscope::cpu::onednn {
namespace {

std::atomic<int64_t> g_created{0};
std::atomic<bool> g_on_pool{true};

// A per-thread buffer that only grows, 64-byte aligned for the vector units.
class Slot {
 public:
  void* at_least(size_t bytes) {
    if (bytes > size_) {
      const size_t rounded = (bytes + 63) / 64 * 64;
      data_.reset(static_cast<char*>(std::aligned_alloc(64, rounded)));
      size_ = rounded;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0;
};

struct ThreadState {
  dnnl::stream stream{engine()};
  std::vector<Slot> slots, named;
  static Slot& at(std::vector<Slot>& v, size_t i) {
    if (v.size() <= i) v.resize(i + 1);
    return v[i];
  }
  Slot& slot(size_t i) { return at(slots, i); }
};

// The calling thread's OpenMP count set to `want` (0: left as it is) for
// the object's life. oneDNN's OpenMP build reads it per thread (libgomp keeps
// it per thread): a primitive fixes its thread count when it is created
// (most of its kernels) and a reorder or a few others read it per call, so
// both creation and execution run under it.
class OmpThreads {
 public:
  explicit OmpThreads(int want) : before_(omp_get_max_threads()), during_(want > 0 ? want : before_) {
    if (during_ != before_) omp_set_num_threads(during_);
  }
  ~OmpThreads() {
    if (during_ != before_) omp_set_num_threads(before_);
  }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;
  int threads() const { return during_; }

 private:
  int before_, during_;
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

}  // namespace

const dnnl::engine& engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::primitive_attr attributes() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory::desc plain(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag) {
  return {dims, dnnl::memory::data_type::f32, tag};
}

void add_arg(Plan& plan, int id, const dnnl::memory::desc& user, const dnnl::memory::desc& inner, bool output) {
  Arg a{id, user, inner, output, !(user == inner), {}};
  if (a.reordered) {
    a.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(engine(), inner, engine(), user))
                       : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), inner));
    ++g_created;
  }
  plan.args.push_back(std::move(a));
}

const Plan& cached(std::vector<int64_t> key, const std::function<Plan()>& make, int omp_threads) {
  const OmpThreads count(omp_threads);
  key.push_back(count.threads());  // a plan made for one thread count runs on that many
  // Plans are never evicted: one per distinct conv/pool geometry of the
  // process, a handful for a model. Entries are shared_ptr so a reference
  // stays valid while other threads insert.
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::shared_ptr<const Plan>> plans;
  {
    std::lock_guard lock(mu);
    auto it = plans.find(key);
    if (it != plans.end()) return *it->second;
  }
  auto plan = std::make_shared<const Plan>(make());  // outside the lock: creation is slow
  ++g_created;
  std::lock_guard lock(mu);
  return *plans.emplace(key, std::move(plan)).first->second;  // a racing twin's plan wins; both work
}

void execute(const Plan& plan, std::initializer_list<void*> data, int omp_threads) {
  // oneDNN's OpenMP build runs a primitive (and a reorder) on
  // omp_get_max_threads() of the calling thread, a per-thread setting in
  // libgomp: set for the call (one: no team, whose threads, asleep under
  // OMP_WAIT_POLICY=PASSIVE, each primitive had to wake, and which spin
  // beside the pool's otherwise), restored after.
  const OmpThreads count(omp_threads);
  ThreadState& ts = thread_state();
  std::unordered_map<int, dnnl::memory> args;
  std::vector<std::pair<const Arg*, dnnl::memory>> outputs;  // reordered outputs to copy back
  size_t slot = 0;
  auto ptr = data.begin();
  for (const Arg& a : plan.args) {
    dnnl::memory user(a.user, engine(), *ptr++);
    if (!a.reordered) {
      args.emplace(a.id, user);
      continue;
    }
    dnnl::memory inner(a.inner, engine(), ts.slot(slot++).at_least(a.inner.get_size()));
    if (a.output) {
      outputs.emplace_back(&a, user);
    } else {
      a.reorder.execute(ts.stream, user, inner);
    }
    args.emplace(a.id, inner);
  }
  if (plan.scratchpad.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 dnnl::memory(plan.scratchpad, engine(), ts.slot(slot++).at_least(plan.scratchpad.get_size())));
  }
  plan.primitive.execute(ts.stream, args);
  for (auto& [a, user] : outputs) a->reorder.execute(ts.stream, args.at(a->id), user);
  ts.stream.wait();
}

void* thread_buffer(int which, size_t bytes) {
  return ThreadState::at(thread_state().named, static_cast<size_t>(which)).at_least(bytes);
}

int64_t primitives_created() { return g_created.load(); }

bool on_pool() { return g_on_pool.load(std::memory_order_relaxed); }
bool set_on_pool(bool on) { return g_on_pool.exchange(on); }

}  // namespace lazyscope::cpu::onednn
