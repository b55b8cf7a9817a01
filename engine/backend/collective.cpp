#include "backend/collective.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/settings.h"
#include "distributed/process_group.h"
#include "events/event_bus.h"

namespace lazyscope::collective {
namespace {

// One collective (the n-th of every rank) while its ranks gather.
struct Slot {
  std::vector<const Buffer*> inputs;
  std::vector<Buffer*> outputs;
  std::vector<int64_t> steps;  // each rank's step, for messages
  std::vector<bool> arrived;
  int64_t reduce = -1;
  int count = 0;
  int taken = 0;  // ranks that left with the result
  bool done = false;
  std::string error;  // set instead of done when the contributions disagree
};

struct Group {
  int64_t key = 0;
  std::vector<int> devices;   // rank -> lazy device ordinal
  std::vector<int64_t> next;  // rank -> number of its next collective
  std::map<int64_t, Slot> slots;
  std::string broken;  // non-empty: the reason every collective in it fails
};

struct Registry {
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<int64_t, std::shared_ptr<Group>> groups;
};

Registry& registry() {
  static auto* r = new Registry();  // leaked: replica threads may outlive static destruction
  return *r;
}

std::mutex g_totals_mu;
std::map<int, DeviceTotals> g_totals;  // by device ordinal

// Adds the scope's duration and `bytes` to the device's totals.
class Timed {
 public:
  Timed(int device, int64_t bytes) : device_(device), bytes_(bytes), start_(events::now_ns()) {}
  ~Timed() {
    const int64_t ns = events::now_ns() - start_;
    std::lock_guard lock(g_totals_mu);
    DeviceTotals& t = g_totals[device_];
    t.ns += ns;
    t.bytes += bytes_;
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  int device_;
  int64_t bytes_;
  int64_t start_;
};

thread_local int tls_device = -1;
thread_local int64_t tls_step = -1;

std::atomic<ReleaseHook> g_release{nullptr};
std::atomic<ReacquireHook> g_reacquire{nullptr};

// Releases (the GIL) for the lifetime of the scope.
class Blocking {
 public:
  Blocking() {
    if (ReleaseHook r = g_release.load()) token_ = r();
  }
  ~Blocking() {
    if (ReacquireHook r = g_reacquire.load()) r(token_);
  }
  Blocking(const Blocking&) = delete;
  Blocking& operator=(const Blocking&) = delete;

 private:
  void* token_ = nullptr;
};

std::string lazy_name(int ordinal) { return "lazy:" + std::to_string(ordinal); }

std::string describe(const Group& g) {
  std::string out = "replica group " + std::to_string(g.key) + " (";
  for (size_t r = 0; r < g.devices.size(); ++r) out += (r ? ", " : "") + lazy_name(g.devices[r]);
  return out + ")";
}

std::string spec_text(const Buffer& b) { return std::string(dtype_name(b.dtype())) + shape_str(b.shape()); }

// The header each rank sends ahead of its contribution to a cross-process
// collective, so that ranks that traced different collectives get an error
// naming both instead of a hang or garbage.
struct ContributionHeader {
  int64_t number;  // the n-th collective of this process
  int64_t step;
  int64_t dtype;
  int64_t numel;
  int64_t shape_hash;
  int64_t reduce;
};

int64_t shape_hash(const Shape& shape) {
  uint64_t h = 1469598103934665603ULL;
  for (int64_t d : shape) h = (h ^ static_cast<uint64_t>(d + 1)) * 1099511628211ULL;
  return static_cast<int64_t>(h >> 1);
}

// The first exchange of a cross-process collective has the same size on
// every rank whatever it brings (Gloo aborts the process on a size
// mismatch): the header and the first kFirstExchangeBytes of the data,
// padded. A small all_reduce is then one Gloo all-gather, not two (a
// header, then the data): on a loaded machine each exchange costs several
// process wake-ups, which dominated small all_reduces. Larger data sends
// its rest in a second exchange, once the headers agree.
constexpr size_t kFirstExchangeBytes = 16 * 1024;

// Replicas that are processes: every rank gathers every rank's contribution
// (Gloo all-gather), then reduces them in rank order with the same reduce_fn
// as thread replicas, so every rank gets the same bits as the thread
// replicas would on the same data.
void process_rendezvous(const std::string& name, int64_t reduce, const Buffer& input, Buffer& output,
                        const ReduceFn& reduce_fn) {
  static std::atomic<int64_t> next_number{0};
  const int world = distributed::world_size();
  const int rank = distributed::rank();
  const auto ranks = static_cast<size_t>(world);
  const ContributionHeader mine{
      next_number++, tls_step, static_cast<int64_t>(input.dtype()), input.numel(), shape_hash(input.shape()), reduce};
  const size_t bytes = input.bytes();
  const size_t first_limit = distributed::small_message_tuning() ? kFirstExchangeBytes : 0;
  const size_t first = std::min(bytes, first_limit);
  const size_t slot_bytes = sizeof(ContributionHeader) + first_limit;
  std::vector<char> slot(slot_bytes, 0);
  std::memcpy(slot.data(), &mine, sizeof mine);
  std::memcpy(slot.data() + sizeof mine, input.data(), first);
  std::vector<char> slots(slot_bytes * ranks);
  distributed::all_gather(name, slot.data(), slot_bytes, slots.data(), static_cast<int64_t>(first));
  for (int r = 0; r < world; ++r) {
    ContributionHeader h{};
    std::memcpy(&h, slots.data() + slot_bytes * static_cast<size_t>(r), sizeof h);
    if (h.dtype != mine.dtype || h.numel != mine.numel || h.shape_hash != mine.shape_hash || h.reduce != mine.reduce ||
        h.number != mine.number) {
      throw EngineError(name + ": the ranks disagree at collective #" + std::to_string(mine.number) + ": rank " +
                        std::to_string(rank) + " (step " + std::to_string(mine.step) + ") brought " + spec_text(input) +
                        " and rank " + std::to_string(r) + " (step " + std::to_string(h.step) + ", its collective #" +
                        std::to_string(h.number) + ") a " + std::string(dtype_name(static_cast<DType>(h.dtype))) +
                        " tensor of " + std::to_string(h.numel) +
                        " elements — every rank must trace the same collectives in the same order");
    }
  }
  // Every rank brings the same size (the headers agree): the rest in one
  // more exchange.
  std::vector<char> rest;
  if (bytes > first) {
    rest.resize((bytes - first) * ranks);
    distributed::all_gather(name, static_cast<const char*>(input.data()) + first, bytes - first, rest.data());
  }
  std::vector<std::shared_ptr<Buffer>> held;
  std::vector<const Buffer*> inputs;
  for (int r = 0; r < world; ++r) {
    held.push_back(Buffer::allocate(input.dtype(), input.shape()));
    char* data = static_cast<char*>(held.back()->data());
    std::memcpy(data, slots.data() + slot_bytes * static_cast<size_t>(r) + sizeof(ContributionHeader), first);
    if (bytes > first) std::memcpy(data + first, rest.data() + (bytes - first) * static_cast<size_t>(r), bytes - first);
    inputs.push_back(held.back().get());
  }
  Buffer* outputs[] = {&output};
  reduce_fn(inputs, outputs);
}

}  // namespace

int64_t register_group(const std::vector<int>& device_ordinals) {
  if (device_ordinals.empty()) throw EngineError("register_replica_group: a replica group needs at least one device");
  for (size_t i = 0; i < device_ordinals.size(); ++i) {
    if (std::count(device_ordinals.begin(), device_ordinals.end(), device_ordinals[i]) > 1) {
      throw EngineError(std::string("register_replica_group: ") + lazy_name(device_ordinals[i]) +
                        " is listed twice; each replica needs its own lazy device");
    }
  }
  // The key is a function of the devices (FNV-1a over the ordinals), not a
  // counter: it is an attribute of the graph's all_reduce nodes, so a new
  // group over the same devices (DataParallel's next epoch, the next spawn)
  // must trace the same graph and hit the compile cache.
  uint64_t h = 1469598103934665603ULL;
  for (int d : device_ordinals) h = (h ^ static_cast<uint64_t>(d + 1)) * 1099511628211ULL;
  const auto key = static_cast<int64_t>(h & 0x7fffffffffffULL);
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  if (reg.groups.contains(key)) {
    throw EngineError("register_replica_group: " + describe(*reg.groups.at(key)) +
                      " is still registered; a device takes part in one replica group at a time "
                      "(unregister_replica_group when its replicas finish)");
  }
  auto g = std::make_shared<Group>();
  g->key = key;
  g->devices = device_ordinals;
  g->next.assign(device_ordinals.size(), 0);
  reg.groups.emplace(g->key, g);
  return g->key;
}

void abort_group(int64_t key, const std::string& reason) {
  Registry& reg = registry();
  {
    std::lock_guard lock(reg.mu);
    auto it = reg.groups.find(key);
    if (it == reg.groups.end() || !it->second->broken.empty()) return;
    it->second->broken = describe(*it->second) + " was aborted: " + reason;
  }
  reg.cv.notify_all();
}

void unregister_group(int64_t key) {
  abort_group(key, "the group was unregistered (its replicas finished)");
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.groups.erase(key);  // waiters hold their own reference
}

DeviceTotals take_device_totals(int device_ordinal) {
  std::lock_guard lock(g_totals_mu);
  auto it = g_totals.find(device_ordinal);
  if (it == g_totals.end()) return {};
  return std::exchange(it->second, DeviceTotals{});
}

size_t group_count() {
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  return reg.groups.size();
}

ExecutingDevice::ExecutingDevice(int device_ordinal, int64_t step)
    : previous_device_(tls_device), previous_step_(tls_step) {
  tls_device = device_ordinal;
  tls_step = step;
}

ExecutingDevice::~ExecutingDevice() {
  tls_device = previous_device_;
  tls_step = previous_step_;
}

void set_blocking_hooks(ReleaseHook release, ReacquireHook reacquire) {
  g_release.store(release);
  g_reacquire.store(reacquire);
}

void rendezvous(std::string_view op, int64_t group, int64_t reduce, const Buffer& input, Buffer& output,
                const ReduceFn& reduce_fn) {
  const std::string name(op);
  if (tls_device < 0) {
    throw EngineError(name +
                      " runs only inside a lazy device's graph, as one replica of a replica group "
                      "(lazy_model.all_reduce in a DataParallel or spawn replica); it cannot run eagerly or "
                      "on the host");
  }
  const int device = tls_device;
  const int64_t step = tls_step;
  Blocking unlocked_python;  // everything below may wait for the other replica threads
  Timed timed(device, static_cast<int64_t>(input.bytes()));
  if (group == distributed::kProcessGroupKey) {
    process_rendezvous(name, reduce, input, output, reduce_fn);
    return;
  }
  Registry& reg = registry();
  std::unique_lock lock(reg.mu);
  auto found = reg.groups.find(group);
  if (found == reg.groups.end()) {
    throw EngineError(name + ": replica group " + std::to_string(group) +
                      " is not registered (its replicas finished, or it was never registered with "
                      "register_replica_group)");
  }
  const std::shared_ptr<Group> g = found->second;  // alive while we wait, even if unregistered
  if (!g->broken.empty()) throw EngineError(name + ": " + g->broken);
  const auto rank_it = std::find(g->devices.begin(), g->devices.end(), device);
  if (rank_it == g->devices.end()) {
    throw EngineError(name + ": " + lazy_name(device) + " is not a member of " + describe(*g));
  }
  const auto rank = static_cast<size_t>(rank_it - g->devices.begin());
  const size_t world = g->devices.size();
  const int64_t number = g->next[rank]++;
  Slot& slot = g->slots[number];
  if (slot.inputs.empty()) {
    slot.inputs.assign(world, nullptr);
    slot.outputs.assign(world, nullptr);
    slot.steps.assign(world, -1);
    slot.arrived.assign(world, false);
    slot.reduce = reduce;
  }
  slot.inputs[rank] = &input;
  slot.outputs[rank] = &output;
  slot.steps[rank] = step;
  slot.arrived[rank] = true;
  ++slot.count;
  const std::string where = " (collective #" + std::to_string(number) + " of " + describe(*g) + ")";

  if (static_cast<size_t>(slot.count) == world) {
    // Last arrival: every other rank is blocked below, so their buffers live.
    for (size_t r = 0; r < world && slot.error.empty(); ++r) {
      const Buffer& other = *slot.inputs[r];
      if (other.dtype() != input.dtype() || other.shape() != input.shape() || slot.reduce != reduce) {
        slot.error = name + ": the replicas disagree" + where + ": " + lazy_name(g->devices[rank]) + " brought " +
                     spec_text(input) + " and " + lazy_name(g->devices[r]) + " " + spec_text(other) +
                     " — every replica must trace the same collectives in the same order";
      }
    }
    if (slot.error.empty()) {
      try {
        reduce_fn(slot.inputs, slot.outputs);
        slot.done = true;
      } catch (const std::exception& e) {
        slot.error = name + where + ": " + e.what();
      }
    }
  } else {
    const auto timeout = settings::collective_timeout_s();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    const bool ready = reg.cv.wait_until(lock, deadline,
                                         [&] { return slot.done || !slot.error.empty() || !g->broken.empty(); });
    if (!ready) {
      std::string missing;
      for (size_t r = 0; r < world; ++r) {
        if (!slot.arrived[r])
          missing += (missing.empty() ? "" : ", ") + std::to_string(r) + " (" + lazy_name(g->devices[r]) + ")";
      }
      g->broken = name + where + ": replica " + missing + " never arrived within " + std::to_string(timeout) +
                  " s (LAZYSCOPE_COLLECTIVE_TIMEOUT_S); " + lazy_name(device) + " waited at step " +
                  std::to_string(step) +
                  ". A replica that raised, or traced a different graph, leaves the "
                  "others waiting here";
      reg.cv.notify_all();
      throw EngineError(g->broken);
    }
    if (!slot.done && slot.error.empty()) throw EngineError(name + where + ": " + g->broken);
  }
  const std::string error = slot.error;
  if (++slot.taken == static_cast<int>(world)) g->slots.erase(number);
  lock.unlock();
  reg.cv.notify_all();
  if (!error.empty()) throw EngineError(error);
}

}  // namespace lazyscope::collective
