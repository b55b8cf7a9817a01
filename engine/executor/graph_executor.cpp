#include "executor/graph_executor.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "backend/backend.h"
#include "backend/collective.h"
#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/pool.h"
#include "core/settings.h"
#include "events/event_bus.h"
#include "executor/compile_cache.h"
#include "executor/graph_signature.h"
#include "lazyscope/event_text.h"
#include "metrics/metrics.h"

namespace lazyscope::executor {
namespace {

struct CallSite {
  const std::string* file;
  int line;
  pb::SyncCause cause;
  bool operator==(const CallSite&) const = default;
};

struct CallSiteHash {
  size_t operator()(const CallSite& s) const {
    return hash_combine(hash_combine(reinterpret_cast<uintptr_t>(s.file), static_cast<uint64_t>(s.line)),
                        static_cast<uint64_t>(s.cause));
  }
};

// Process-wide unique epochs for the marks nodes carry (Node::counted_epoch,
// Node::visit_epoch): a new epoch forgets every mark at once, where a hash
// set keyed by node address cost an allocation per node.
uint64_t new_epoch() {
  static std::atomic<uint64_t> epoch{0};
  return epoch.fetch_add(1, std::memory_order_relaxed) + 1;
}

// Post-order over the nodes the roots need; leaves become parameters in the
// order they are first reached. The graph hash folds in each node's local
// hash and its operand positions, which covers structure, attributes, input
// shapes and dtypes, and input aliasing — never input values.
struct LoweredGraph {
  GraphView view;  // operands filled only by fill_operands() (a cached step needs none)
  uint64_t hash = 0;
  uint64_t epoch = 0;  // the walk's: a node with this visit_epoch is in the graph
  // Scratch of the walk and of donor_refs, kept with the graph's vectors
  // from sync to sync (SpareGraph): thread_local vectors cost a TLS lookup
  // per access in a shared library.
  std::vector<std::pair<const Node*, size_t>> stack;
  std::vector<long> inside, held;
  // donor_refs' first pass, kept for the same walk (lower() clears it): per
  // parameter, the graph's references to it and one of them (an operand
  // slot of a graph node: nodes and their operands never change).
  std::vector<std::pair<const NodePtr*, long>> parameter_refs;
  std::vector<const NodePtr*> leaf_ref;  // scratch: a graph reference to each leaf, by position
  std::vector<const Node*> roots;        // what the walk started from (addresses only: never read)
  bool bf16 = false;                     // settings::bf16_mode() at the walk (it changes the hash)
};

// The epoch of the latest walk of any graph (lower()): a walk re-marks the
// nodes it reaches, so an earlier walk's positions stay valid only while it
// is the latest.
std::atomic<uint64_t> g_latest_walk{0};

// A lowered graph whose vectors keep their capacity from one sync to the
// next on a device: taken by a sync (a nested sync finds none and makes its
// own) and given back at its end, still describing its graph (same_walk).
struct SpareGraph {
  LoweredGraph graph;
  void give_back(LoweredGraph& g) { graph = std::move(g); }
};

// Whether `g`, lowered at an earlier sync, is the graph of `roots`: the same
// root nodes in the same order (nodes never change, and each owns its
// operands, so the same roots reach the same graph), no other walk since
// (its marks are still the nodes'), bf16 mode as it was. A root is the node
// it was, not a new one at a freed one's address, when it still carries
// that walk's mark: a node made after the walk carries none. Saves the
// walk and the hash of a step whose nodes were all reused (trace_reused).
bool same_walk(const LoweredGraph& g, const std::vector<const Node*>& roots) {
  if (g.epoch == 0 || g.epoch != g_latest_walk.load(std::memory_order_relaxed) || roots.size() != g.roots.size() ||
      g.bf16 != settings::bf16_mode()) {
    return false;
  }
  for (size_t i = 0; i < roots.size(); ++i) {
    if (roots[i] != g.roots[i] || roots[i]->visit_epoch != g.epoch || roots[i]->visit_position != g.view.outputs[i]) {
      return false;
    }
  }
  return true;
}

// A lock held for a few pointer writes per traced op (the registry's): a
// mutex's lock and unlock cost more than the rest of registering.
class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// A chain of tensors linked through the tensors themselves
// (TensorImpl::pending_link), under its device's list lock: the device's
// pending tensors (PendingList::chain), or those a sync is running (a chain
// of that sync's own, on its stack). A tensor is in one chain at most; its
// link names the chain, and a tensor that dies unlinks itself, on whichever
// thread, under the lock (unregister_pending). So a chain holds bare
// pointers and no reference: a linked tensor's destructor waits for the
// lock before its members go, so under the lock a linked tensor's members
// are there to read and write.
struct Chain {
  TensorImpl* head = nullptr;
  TensorImpl* tail = nullptr;

  void unlink(TensorImpl& t) {
    PendingLink& l = t.pending_link;
    (l.prev ? l.prev->pending_link.next : head) = l.next;
    (l.next ? l.next->pending_link.prev : tail) = l.prev;
    l.prev = l.next = nullptr;
    l.list.store(nullptr, std::memory_order_release);
  }
  // `t` is in no chain.
  void push_back(TensorImpl& t) {
    PendingLink& l = t.pending_link;
    l.prev = tail;
    (tail ? tail->pending_link.next : head) = &t;
    tail = &t;
    l.list.store(this, std::memory_order_release);
  }
};

// The chain a tensor is linked in, or null.
Chain* chain_of(const TensorImpl& t, std::memory_order order) {
  return static_cast<Chain*>(const_cast<void*>(t.pending_link.list.load(order)));
}

// The pending tensors of a device in the order of their latest registration.
// A tensor registered again (rebound in place) moves to the end: the graph
// lists it once among its outputs, at the place its latest value was traced,
// so a training loop that updates in place lists its outputs in the same
// order every step (the same hash, no recompile).
struct PendingList {
  SpinLock lock;  // guards the device's chains, and the graph-limit count below
  Chain chain;

  // Appends `t`, taken out of whichever chain of this device holds it (a
  // tensor never changes device: each of its chains is under this lock).
  void append(TensorImpl& t) {
    if (Chain* c = chain_of(t, std::memory_order_relaxed)) c->unlink(t);
    chain.push_back(t);
  }
};

// Trace replay (settings::reuse_ir_nodes): the nodes of apply()'s direct
// path by their place (slot) in the step, this step's and those kept of the
// previous one; executor::trace_reused hands the previous step's node at a
// slot back to an op that matches it. Guarded by the pending list's lock.
// The lists hold references: what they keep is decided at each barrier
// (settle_reuse): a node is kept only when every device-data leaf it
// depends on is still held by something outside the lists (a tensor), and
// a sync inside a step lets go of the slots before it, so they keep no
// buffer alive that nothing else would beyond the step in which it was
// let go. Buffer donation counts the lists'
// references as the graph's own (donor_refs).
struct TraceReuse {
  std::vector<NodePtr> previous;  // slot -> kept node of the last step (null: none)
  std::vector<NodePtr> current;   // slot -> this step's node (null: the op took the general path)
  std::vector<NodePtr> spare;     // the storage of the list before `previous`, kept for the next step
  std::vector<NodePtr> dropping;  // scratch of settle_reuse
  // What the last settle_reuse at a step's end kept: how many nodes, and the
  // device-data leaves they read with the references the kept nodes hold
  // to each (a leaf once per reading node: repeats are harmless). A step
  // that reused every one of them, in every slot, has the same nodes with
  // the same operands: it keeps them all again when these leaves are still
  // held from outside, found without a pass over the nodes.
  size_t kept = 0;
  std::vector<std::pair<const NodePtr*, long>> anchors;  // the kept nodes' operand references
  size_t reused = 0;  // slots of this step given a kept node (trace_reused; counted at the barrier)
  // A sync inside the step lets go of the slots traced before it (never
  // matched again this step): `settled_upto` of them so far.
  bool settled_in_step = false;
  size_t settled_upto = 0;
};
// Slots recorded per step at most: a script that never calls mark_step
// would otherwise grow the list without end.
constexpr size_t kMaxTraceSlots = size_t{1} << 17;

struct DeviceState {
  std::recursive_mutex mu;    // one sync at a time; recursive for sync-within-sync safety
  PendingList pending;        // its own lock: tracing does not take `mu`
  int64_t pending_nodes = 0;  // nodes traced since the last sync, for the graph limit (pending.lock)
  // The nodes counted in pending_nodes are those marked with this epoch:
  // each op's result and the leaves it reads (a `x + 1e-6` adds two nodes,
  // the sum and the scalar's leaf), each once however often it is used.
  uint64_t count_epoch = new_epoch();
  int64_t step = 0;
  std::atomic<int64_t> step_start_ns{-1};    // set by the first op of a step (pending.lock) or the barrier (mu)
  int64_t last_snapshot_ns = INT64_MIN / 2;  // the first barrier publishes one
  int64_t compile_ns = 0, execute_ns = 0, host_wait_ns = 0;
  // Transfers are noted by other threads too (ParallelLoader's upload
  // thread, holding the GIL) while a replica's sync holds `mu` — possibly
  // for long, waiting in a collective for other replicas that need the GIL.
  // So they take only this small lock, and read the step from an atomic
  // copy, never `mu`.
  std::mutex transfer_mu;
  int64_t transfer_ns = 0;           // guarded by transfer_mu
  std::atomic<int64_t> step_now{0};  // == step, readable without mu
  // Scalars logged this step, read once the barrier has run the step's graph.
  std::vector<std::pair<std::string, std::shared_ptr<TensorImpl>>> scalar_logs;
  // Last graph compiled at each call site, to explain the next recompile.
  std::unordered_map<CallSite, std::shared_ptr<const GraphSignature>, CallSiteHash> last_at_site;
  SpareGraph spare;  // the lowered graph's vectors, kept across syncs
  TraceReuse reuse;  // pending.lock
  // The last sync's phases, and its graph (for its kernel time, read on demand).
  SyncProfile last_profile;
  // Weak: the profile must not keep an executable (and its arena) alive
  // after the compile cache let it go.
  std::weak_ptr<CompiledGraph> last_compiled;
};

// States live as long as the process, so a state once found is cached
// lock-free by ordinal: every traced op registers with its device's state.
std::array<std::atomic<DeviceState*>, 64> g_found_states{};

// The first lookup of a device (or one past the cache), out of line: the
// fast path then saves no registers (~14 instructions per traced op).
[[gnu::noinline]] DeviceState& find_state(const Device& device) {
  static std::mutex mu;
  static auto* states = new std::unordered_map<int, std::unique_ptr<DeviceState>>();
  const auto index = static_cast<size_t>(device.ordinal);
  std::lock_guard lock(mu);
  auto& slot = (*states)[device.ordinal];
  if (!slot) slot = std::make_unique<DeviceState>();
  if (index < g_found_states.size()) g_found_states[index].store(slot.get(), std::memory_order_release);
  return *slot;
}

DeviceState& state(const Device& device) {
  const auto index = static_cast<size_t>(device.ordinal);
  if (index < g_found_states.size()) {
    if (DeviceState* s = g_found_states[index].load(std::memory_order_acquire)) return *s;
  }
  return find_state(device);
}

// The "SyncCause.<name>" counter of each cause, resolved once: every sync
// counts its cause, and building the name and looking it up in the registry
// each time is work the executor need not repeat.
metrics::Counter* sync_cause_counter(pb::SyncCause cause) {
  static const auto counters = [] {
    std::array<metrics::Counter*, pb::SyncCause_ARRAYSIZE> table{};
    for (int c = 0; c < pb::SyncCause_ARRAYSIZE; ++c) {
      if (pb::SyncCause_IsValid(c)) {
        table[static_cast<size_t>(c)] = metrics::counter(event_text::sync_cause_counter(static_cast<pb::SyncCause>(c)));
      }
    }
    return table;
  }();
  return counters[static_cast<size_t>(cause)];
}

void set_source(pb::SourceLocation* out, const SourceLocation& loc) {
  if (!loc.known()) return;
  out->set_file(*loc.file);
  out->set_line(loc.line);
  if (loc.function) out->set_function(*loc.function);
}

// Each node reached is marked with the walk's epoch and its position
// (Node::visit_epoch/visit_position: no map from node to position, no
// allocation per node); the graph's operand lists are built only when
// needed, on a compile (fill_operands).
//
// `g` arrives empty, possibly with capacity kept from an earlier sync (see
// SpareGraph): a 1,000-node step's vectors are large allocations, each of
// which made glibc consolidate the small blocks the trace had freed.
void lower(const std::vector<const Node*>& roots, size_t expected_nodes, LoweredGraph& g) {
  g.view.nodes.clear();
  g.view.operands.clear();
  g.view.parameters.clear();
  g.view.outputs.clear();
  g.parameter_refs.clear();
  g.hash = 0;
  g.roots = roots;
  g.bf16 = settings::bf16_mode();
  const uint64_t epoch = new_epoch();
  g.epoch = epoch;
  g_latest_walk.store(epoch, std::memory_order_relaxed);
  const auto position = [epoch](const Node* node) { return node->visit_epoch == epoch ? node->visit_position : -1; };
  g.view.nodes.reserve(expected_nodes);
  std::vector<std::pair<const Node*, size_t>>& stack = g.stack;
  stack.clear();
  for (const Node* root : roots) {
    if (position(root) >= 0) continue;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const std::span<const NodePtr> operands = node->operands();
      if (next < operands.size()) {
        const Node* operand = operands[next++].get();
        if (position(operand) < 0) stack.emplace_back(operand, 0);
        continue;
      }
      const int pos = static_cast<int>(g.view.nodes.size());
      node->visit_epoch = epoch;
      node->visit_position = pos;
      g.view.nodes.push_back(node);
      uint64_t h = node->local_hash();
      for (const NodePtr& operand : operands) h = hash_combine(h, static_cast<uint64_t>(operand->visit_position));
      g.hash = hash_combine(g.hash, h);
      if (node->is_leaf()) g.view.parameters.push_back(pos);
      stack.pop_back();
    }
  }
  for (const Node* root : roots) {
    const int p = position(root);
    g.view.outputs.push_back(p);
    g.hash = hash_combine(g.hash, 0x6f7574ULL ^ static_cast<uint64_t>(p));
  }
  // A program compiled in bf16 mode rounds differently: never share it.
  if (g.bf16) g.hash = hash_combine(g.hash, 0xbf16ULL);
}

LoweredGraph lower(const std::vector<const Node*>& roots, size_t expected_nodes) {
  LoweredGraph g;
  lower(roots, expected_nodes, g);
  return g;
}

// The operand positions of every node of a graph just lowered (its marks
// are still the walk's: nothing walks in between, under the device's lock).
void fill_operands(GraphView& view) {
  view.operands.resize(view.nodes.size());
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const std::span<const NodePtr> operands = view.nodes[i]->operands();
    view.operands[i].clear();
    view.operands[i].reserve(operands.size());
    for (const NodePtr& operand : operands) view.operands[i].push_back(operand->visit_position);
  }
}

static_assert(static_cast<int>(OpCategory::kElementwise) == pb::OP_CATEGORY_ELEMENTWISE &&
                  static_cast<int>(OpCategory::kMatmulConv) == pb::OP_CATEGORY_MATMUL_CONV &&
                  static_cast<int>(OpCategory::kReduction) == pb::OP_CATEGORY_REDUCTION &&
                  static_cast<int>(OpCategory::kLayout) == pb::OP_CATEGORY_LAYOUT &&
                  static_cast<int>(OpCategory::kData) == pb::OP_CATEGORY_DATA &&
                  static_cast<int>(OpCategory::kIndexing) == pb::OP_CATEGORY_INDEXING &&
                  static_cast<int>(OpCategory::kCollective) == pb::OP_CATEGORY_COLLECTIVE,
              "engine and proto op categories agree");

pb::IrGraph to_proto(const GraphView& view, uint64_t hash) {
  pb::IrGraph graph;
  graph.set_hash(hash);
  graph.set_parameter_count(static_cast<int32_t>(view.parameters.size()));
  std::vector<int> parameter_of(view.nodes.size(), -1);
  for (size_t p = 0; p < view.parameters.size(); ++p) parameter_of[view.parameters[p]] = static_cast<int>(p);
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const Node* n = view.nodes[i];
    pb::IrNode* out = graph.add_nodes();
    out->set_id(static_cast<int32_t>(i));
    out->set_op(std::string(op_name(n->op())));
    // OpCategory's values are pb::OpCategory's, except kOther, which the
    // proto leaves unspecified.
    out->set_category(static_cast<pb::OpCategory>(op_category(n->op())));
    for (int p : view.operands[i]) out->add_operands(p);
    for (int64_t d : n->shape()) out->add_shape(d);
    out->set_dtype(std::string(dtype_name(n->dtype())));
    for (const Attr& a : n->attrs().items()) (*out->mutable_attrs())[a.name] = Attrs::value_str(a.value);
    set_source(out->mutable_source(), n->source());
    if (n->scope()) out->set_scope(*n->scope());
    out->set_hash(n->hash());
    out->set_parameter_index(parameter_of[i]);
  }
  for (int o : view.outputs) graph.add_outputs(o);
  return graph;
}

// The roots of a sync of every pending tensor, held by the sync: the
// tensors' nodes (a tensor may die on another thread while its graph runs;
// its node, and the graph, stay) and the dtypes they report.
struct Roots {
  std::vector<NodePtr> nodes;
  std::vector<DType> dtypes;
};

// A sync's own chain of the tensors it binds (bare pointers: no reference
// count per tensor, no weak self-reference per tensor made). A tensor
// dropped meanwhile leaves it (its destructor, under the lock); one rebound
// in place meanwhile moves back to the device's chain; whatever is left when
// the sync ends without binding (its graph failed) leaves it too, so later
// steps run without them.
struct SyncingChain {
  DeviceState& st;
  Chain chain;
  explicit SyncingChain(DeviceState& s) : st(s) {}
  ~SyncingChain() {
    std::lock_guard lock(st.pending.lock);
    while (TensorImpl* t = chain.head) chain.unlink(*t);
  }
  SyncingChain(const SyncingChain&) = delete;
  SyncingChain& operator=(const SyncingChain&) = delete;
};

// Moves the device's pending tensors, in registration order, to `syncing`,
// each with its place among the outputs (PendingLink::output), and holds
// their nodes in `roots`; those of the list no longer pending (bound by a
// sync of their own since) leave it. Hands back and resets the graph-limit
// count.
void take_pending(DeviceState& st, SyncingChain& syncing, Roots& roots, int64_t* counted_nodes) {
  std::lock_guard lock(st.pending.lock);
  for (TensorImpl* t = st.pending.chain.head; t;) {
    TensorImpl* next = t->pending_link.next;
    st.pending.chain.unlink(*t);
    if (t->pending()) {
      t->pending_link.output = roots.nodes.size();
      roots.nodes.push_back(t->ir);
      roots.dtypes.push_back(t->spec.dtype);
      syncing.chain.push_back(*t);
    }
    t = next;
  }
  *counted_nodes = st.pending_nodes;
  st.pending_nodes = 0;
  st.count_epoch = new_epoch();
}

// The nodes of the device's pending tensors, in registration order (a look:
// the list stays), and the graph-limit count.
std::vector<NodePtr> pending_roots(DeviceState& st, int64_t* counted_nodes) {
  std::vector<NodePtr> roots;
  std::lock_guard lock(st.pending.lock);
  for (TensorImpl* t = st.pending.chain.head; t; t = t->pending_link.next) {
    if (t->pending()) roots.push_back(t->ir);
  }
  *counted_nodes = st.pending_nodes;
  return roots;
}

void forget_pending(DeviceState& st, const std::vector<std::shared_ptr<TensorImpl>>& failed) {
  std::lock_guard lock(st.pending.lock);
  for (const auto& t : failed) {
    if (chain_of(*t, std::memory_order_relaxed) == &st.pending.chain) st.pending.chain.unlink(*t);
  }
}

// Element 0 of a materialized buffer as a double, whatever its dtype (the
// cast kernel does the conversion; bf16-stored floats included).
double first_value(const Buffer& buffer) {
  BufferPtr one = Buffer::allocate(DType::kFloat64, {});
  const Buffer* in = &buffer;
  cpu::find_kernel(OpKind::kCast,
                   DType::kFloat64)(cpu::KernelArgs{std::span<const Buffer* const>(&in, 1), *one, Attrs{}});
  return *one->as<double>();
}

void publish_scalar_event(const Device& device, int64_t step, const std::string& name, double value) {
  pb::Event e;
  e.set_replica(device.ordinal);
  auto* s = e.mutable_scalar();
  s->set_step(step);
  s->set_name(name);
  s->set_value(value);
  events::publish(e);
}

void publish_step(const Device& device, DeviceState& st, int64_t end_ns) {
  LAZYSCOPE_COUNTER("MarkStep")->add(1);
  int64_t transfer_ns = 0;
  {
    std::lock_guard lock(st.transfer_mu);
    transfer_ns = std::exchange(st.transfer_ns, 0);
  }
  if (events::enabled()) {
    pb::Event e;
    e.set_replica(device.ordinal);
    auto* s = e.mutable_step();
    s->set_step(st.step);
    s->set_start_ns(st.step_start_ns.load(std::memory_order_relaxed));
    s->set_end_ns(end_ns);
    s->set_compile_ns(st.compile_ns);
    s->set_execute_ns(st.execute_ns);
    s->set_transfer_ns(transfer_ns);
    s->set_host_wait_ns(st.host_wait_ns);
    const collective::DeviceTotals collectives = collective::take_device_totals(device.ordinal);
    s->set_collective_ns(collectives.ns);
    s->set_collective_bytes(collectives.bytes);
    const int64_t busy = st.compile_ns + st.execute_ns + transfer_ns + st.host_wait_ns;
    s->set_trace_ns(std::max<int64_t>(0, end_ns - st.step_start_ns.load(std::memory_order_relaxed) - busy));
    events::publish(e);
  }
  ++st.step;
  st.step_now.store(st.step);
  st.step_start_ns.store(end_ns, std::memory_order_relaxed);
  st.compile_ns = st.execute_ns = st.host_wait_ns = 0;
}

// The machine's peaks (measured once per process by the backend, on first
// use: tens of milliseconds, spent only when someone listens), published
// with each graph's first kernel profile, so that a subscriber that came
// late still gets them with the graphs it sees.
void publish_machine_peaks(const Device& device) {
  const MachinePeaks peaks = default_backend().machine_peaks();
  pb::Event e;
  e.set_replica(device.ordinal);
  auto* m = e.mutable_machine_peak();
  m->set_gemm_gflops(peaks.gemm_gflops);
  m->set_stream_gbps(peaks.stream_gbps);
  m->set_cache_gbps(peaks.cache_gbps);
  m->set_cache_bytes(peaks.cache_bytes);
  m->set_threads(peaks.threads);
  m->set_isa(peaks.isa);
  events::publish(e);
}

// A cumulative KernelProfileEvent of the graph, when this execution added a
// timed sample (the executable samples a few executions, not every one).
void publish_kernel_profile(const Device& device, int64_t step, CompiledGraph& compiled) {
  const Executable& exe = *compiled.executable;
  const int64_t samples = exe.sampled_executions();
  const int64_t published = compiled.profiled_samples.exchange(samples);
  if (samples == published) return;
  if (published == 0) publish_machine_peaks(device);
  pb::Event e;
  e.set_replica(device.ordinal);
  auto* p = e.mutable_kernel_profile();
  p->set_step(step);
  p->set_graph_hash(compiled.hash);
  p->set_executions(exe.executions());
  p->set_peak_bytes(exe.peak_bytes());
  for (const KernelTiming& k : exe.kernel_profile()) {
    auto* kp = p->add_kernels();
    kp->set_index(k.index);
    kp->set_name(k.name);
    for (int n : k.nodes) kp->add_nodes(n);
    kp->set_flops(k.flops);
    kp->set_bytes(k.bytes);
    kp->set_samples(k.samples);
    kp->set_total_ns(k.total_ns);
    kp->set_code(k.code);
  }
  events::publish(e);
}

// Buffer donation: for each parameter of the graph, the references to its
// buffer this sync accounts for (its leaf's and the parameter list's: 2)
// when its value dies with the step, else 0 (Executable::execute). Only at a
// sync that runs every pending tensor (a barrier, a graph-limit split):
// after it no registered tensor refers to a node of the graph. Every other
// reference to a node must be an operand of another graph node or a target
// about to be rebound: a node held from outside (an unregistered snapshot,
// an autograd record of a pending value) could be run again later and read
// the parameter's old value, so then nothing is donated; a parameter's leaf
// held from outside (a detached tensor still showing the old value) is not
// donated. Reference counts are read through the operand pointers (the
// graph lists bare pointers): O(edges), a few microseconds per 1,000 nodes.
std::vector<int> donor_refs(LoweredGraph& lowered, const Roots& roots, const SyncingChain& syncing, DeviceState& st) {
  const GraphView& g = lowered.view;
  const size_t n = g.nodes.size();
  std::vector<long>& inside = lowered.inside;
  std::vector<long>& held = lowered.held;
  // First the parameters alone (the leaves' entries, the rest left as they
  // are): those whose every reference is the graph's could give their
  // buffer. None, often (an input held by the caller): then nothing else
  // is counted. The graph's references to each are a property of the walk
  // (targets are pending, never leaves), so a sync of the same walk reads
  // only each parameter's count, not every edge of the graph (O(edges) of
  // pointer chasing, 3% of a cached 1,000-node step's time).
  std::vector<int> refs(g.parameters.size(), 0);
  if (refs.empty()) return refs;
  auto& known = lowered.parameter_refs;
  if (known.size() == g.parameters.size()) {
    bool any_known = false;
    for (size_t i = 0; i < known.size(); ++i) {
      if (known[i].first->use_count() == known[i].second && g.nodes[static_cast<size_t>(g.parameters[i])]->data()) {
        any_known = true;  // could give its buffer: the full count below decides
      }
    }
    if (!any_known) return refs;
  }
  inside.resize(n);
  held.resize(n);
  for (const int p : g.parameters) {
    inside[static_cast<size_t>(p)] = 0;
    held[static_cast<size_t>(p)] = -1;
  }
  const auto note = [&](const NodePtr& node) {
    const auto pos = static_cast<size_t>(node->visit_position);
    ++inside[pos];
    held[pos] = node.use_count();
  };
  lowered.leaf_ref.assign(n, nullptr);
  for (const Node* node : g.nodes) {
    for (const NodePtr& operand : node->operands()) {
      if (operand->is_leaf()) {
        note(operand);
        lowered.leaf_ref[static_cast<size_t>(operand->visit_position)] = &operand;
      }
    }
  }
  known.resize(g.parameters.size());
  for (size_t i = 0; i < g.parameters.size(); ++i) {
    const auto p = static_cast<size_t>(g.parameters[i]);
    known[i] = {lowered.leaf_ref[p], inside[p]};
  }
  // A parameter no graph node reads (only a target could: never, targets are pending): no shortcut.
  if (std::any_of(known.begin(), known.end(), [](const auto& k) { return k.first == nullptr; })) known.clear();
  bool any = false;
  for (size_t i = 0; i < g.parameters.size(); ++i) {
    const auto p = static_cast<size_t>(g.parameters[i]);
    if (held[p] == inside[p] && g.nodes[p]->data()) {
      refs[i] = 2;
      any = true;
    }
  }
  if (!any) return refs;
  // Then every computed node must be referenced only from inside the graph
  // (see above).
  for (size_t i = 0; i < n; ++i) {
    if (!g.nodes[i]->is_leaf()) {
      inside[i] = 0;
      held[i] = -1;
    }
  }
  for (const Node* node : g.nodes) {
    for (const NodePtr& operand : node->operands()) {
      if (!operand->is_leaf()) note(operand);
    }
  }
  for (const NodePtr& root : roots.nodes) note(root);  // the sync's own (roots are pending: never leaves)
  {
    std::lock_guard lock(st.pending.lock);
    // The targets' references: each is about to be rebound. (One rebound
    // in place since holds a node of no graph, if any, and left the chain.)
    for (const TensorImpl* t = syncing.chain.head; t; t = t->pending_link.next) {
      if (t->ir->visit_epoch == lowered.epoch) note(t->ir);
    }
  }
  {
    // The reuse lists' references are the graph's own: a node they keep is
    // given out again only to an op on the very same operand nodes, which
    // after this sync no tensor holds unless they are held from outside
    // (and then not donated). Leaves are never in the lists.
    std::lock_guard lock(st.pending.lock);
    const auto listed = [&](const std::vector<NodePtr>& list) {
      for (const NodePtr& node : list) {
        if (node && node->visit_epoch == lowered.epoch) ++inside[static_cast<size_t>(node->visit_position)];
      }
    };
    listed(st.reuse.previous);
    listed(st.reuse.current);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!g.nodes[i]->is_leaf() && held[i] != inside[i]) return std::vector<int>(g.parameters.size(), 0);
  }
  return refs;
}

int64_t sync_locked(const Device& device, DeviceState& st, std::vector<std::shared_ptr<TensorImpl>> targets,
                    pb::SyncCause cause) {
  const int64_t collect_start = events::now_ns();
  // Every pending tensor (no targets given): bound through the sync's own
  // chain, by bare pointer. Else the caller's targets, held.
  const bool every_pending = targets.empty();
  SyncingChain syncing(st);
  Roots roots_held;
  int64_t traced_nodes = 0;
  if (every_pending) {
    take_pending(st, syncing, roots_held, &traced_nodes);
  } else {
    std::erase_if(targets, [](const auto& t) { return !t->pending(); });
    for (const auto& t : targets) {
      roots_held.nodes.push_back(t->ir);
      roots_held.dtypes.push_back(t->spec.dtype);
    }
    std::lock_guard lock(st.pending.lock);
    traced_nodes = std::exchange(st.pending_nodes, 0);
    st.count_epoch = new_epoch();
  }
  // Nodes traced since the last sync: the size to expect (parameters add a few).
  const size_t outputs_count = roots_held.nodes.size();
  const auto expected_nodes = static_cast<size_t>(traced_nodes) + outputs_count;
  if (outputs_count == 0) return 0;
  default_backend().will_run();  // the CPU pool's workers may wake while the graph is walked and looked up
  const int64_t start = events::now_ns();
  SyncProfile profile;
  profile.collect_ns = start - collect_start;
  const SourceLocation sync_site = current_source_location();

  std::vector<const Node*> roots;
  roots.reserve(outputs_count);
  for (const NodePtr& root : roots_held.nodes) roots.push_back(root.get());
  LoweredGraph graph = std::move(st.spare.graph);
  if (!same_walk(graph, roots)) lower(roots, expected_nodes, graph);
  const int64_t lowered = events::now_ns();
  profile.lower_ns = lowered - start;

  std::shared_ptr<CompiledGraph> compiled = compile_cache().get(graph.hash);
  const bool cache_hit = compiled != nullptr;
  profile.lookup_ns = events::now_ns() - lowered;
  int64_t compile_ns = 0;
  if (cache_hit) {
    LAZYSCOPE_COUNTER("CachedCompile")->add(1);
  } else {
    const bool was_evicted = compile_cache().was_evicted(graph.hash);  // before put() forgets it
    const int64_t compile_start = events::now_ns();
    compiled = std::make_shared<CompiledGraph>();
    compiled->hash = graph.hash;
    compiled->node_count = static_cast<int>(graph.view.nodes.size());
    fill_operands(graph.view);
    compiled->executable = default_backend().compile(graph.view);
    compile_cache().put(compiled);
    compile_ns = events::now_ns() - compile_start;
    LAZYSCOPE_COUNTER("UncachedCompile")->add(1);
    LAZYSCOPE_METRIC("CompileTime")->add(static_cast<double>(compile_ns) / 1e6);

    // Explain the compile against the last graph from the same call site.
    auto signature = std::make_shared<const GraphSignature>(make_signature(graph.view, graph.hash));
    const CallSite site{sync_site.file, sync_site.line, cause};
    auto previous = st.last_at_site.find(site);
    const CompileReason reason = explain_recompile(
        *signature, previous == st.last_at_site.end() ? nullptr : previous->second.get(), was_evicted);
    st.last_at_site[site] = signature;
    if (events::enabled()) {
      pb::Event e;
      e.set_replica(device.ordinal);
      auto* c = e.mutable_compile();
      c->set_step(st.step);
      c->set_graph_hash(graph.hash);
      c->set_start_ns(compile_start);
      c->set_duration_ns(compile_ns);
      c->set_reason_kind(reason.kind);
      c->set_reason(reason.text);
      c->set_compared_with(reason.compared_with);
      set_source(c->mutable_source(), sync_site);
      *c->mutable_graph() = to_proto(graph.view, graph.hash);
      c->set_program_text(compiled->executable->program_text());
      events::publish(e);
    }
  }

  const int64_t bind_start = events::now_ns();
  std::vector<BufferPtr> parameters;
  parameters.reserve(graph.view.parameters.size());
  for (int p : graph.view.parameters) parameters.push_back(graph.view.nodes[p]->data());
  const std::vector<int> donors = every_pending && settings::buffer_donation() &&
                                          compiled->executable->accepts_donations()
                                      ? donor_refs(graph, roots_held, syncing, st)
                                      : std::vector<int>{};
  const int64_t execute_start = events::now_ns();
  profile.bind_inputs_ns = execute_start - bind_start;
  std::vector<BufferPtr> outputs;
  try {
    // The all_reduce kernel finds its replica rank from the executing device.
    collective::ExecutingDevice executing(device.ordinal, st.step);
    outputs = compiled->executable->execute(parameters, donors);
  } catch (...) {
    // A kernel refused a value only known at run time (an out-of-range
    // target, say). The failed tensors leave the barrier's set, so later
    // steps run; reading one of them runs its graph, and raises, again.
    // (Those of `syncing` leave it as it goes.)
    forget_pending(st, targets);
    LAZYSCOPE_COUNTER("FailedExecutions")->add(1);
    try {
      throw;
    } catch (const KernelFailure& f) {
      // The error surfaces at the sync, far from the op: name the user's
      // line that traced the failing node, keeping the error's class.
      const auto node = static_cast<size_t>(f.node());
      const SourceLocation where = node < graph.view.nodes.size() ? graph.view.nodes[node]->source() : SourceLocation{};
      rethrow_with_message(f.error(),
                           where.known() ? std::string(f.what()) + " (traced at " + where.str() + ")" : f.what());
    }
  }
  const int64_t execute_ns = events::now_ns() - execute_start;
  LAZYSCOPE_COUNTER("ExecuteCount")->add(1);
  LAZYSCOPE_METRIC("ExecuteTime")->add(static_cast<double>(execute_ns) / 1e6);

  // Bind: each target now holds its buffer behind a device-data leaf, which
  // releases the traced graph it no longer needs. The leaves are made
  // first: under the lock only pointers are swapped, and the old nodes go
  // after it (with `roots_held`, below).
  std::vector<NodePtr> leaves(outputs_count);
  for (size_t i = 0; i < outputs_count; ++i) {
    leaves[i] = make_leaf(outputs[i], roots_held.nodes[i]->source(), roots_held.dtypes[i]);
  }
  if (every_pending) {
    std::lock_guard lock(st.pending.lock);
    while (TensorImpl* t = syncing.chain.head) {
      const size_t i = t->pending_link.output;
      t->buffer = outputs[i];
      t->ir.swap(leaves[i]);
      syncing.chain.unlink(*t);
    }
  } else {
    for (size_t i = 0; i < targets.size(); ++i) {
      targets[i]->buffer = outputs[i];
      targets[i]->ir = std::move(leaves[i]);
    }
  }
  leaves.clear();
  const int64_t bound = events::now_ns();

  st.compile_ns += compile_ns;
  st.execute_ns += execute_ns;
  if (cause != pb::SYNC_CAUSE_MARK_STEP) {
    // A value read inside the step: the host waited for the device.
    st.host_wait_ns += events::now_ns() - start - compile_ns - execute_ns;
  }
  sync_cause_counter(cause)->add(1);
  if (events::enabled()) {
    pb::Event e;
    e.set_replica(device.ordinal);
    auto* x = e.mutable_execute();
    x->set_step(st.step);
    x->set_graph_hash(graph.hash);
    x->set_start_ns(execute_start);
    x->set_duration_ns(execute_ns);
    x->set_cause(cause);
    set_source(x->mutable_source(), sync_site);
    x->set_cache_hit(cache_hit);
    x->set_node_count(static_cast<int32_t>(graph.view.nodes.size()));
    events::publish(e);
    publish_kernel_profile(device, st.step, *compiled);
  }
  const int64_t end = events::now_ns();
  profile.compile_ns = compile_ns;
  profile.execute_ns = execute_ns;
  profile.publish_ns = end - bound;
  profile.nodes = static_cast<int64_t>(graph.view.nodes.size());
  profile.cache_hit = cache_hit;
  st.last_compiled = compiled;
  // The roots' graph is released here (`graph.view` holds bare pointers;
  // `roots_held` holds the last references to the roots' old nodes, and
  // `targets` may hold the last ones to tensors): counted with the output
  // bind.
  st.spare.give_back(graph);
  roots_held.nodes.clear();
  targets.clear();
  const int64_t released = events::now_ns();
  profile.bind_outputs_ns = bound - (execute_start + execute_ns) + (released - end);
  profile.total_ns = released - collect_start;
  st.last_profile = profile;
  return profile.nodes - static_cast<int64_t>(parameters.size());
}

void publish_snapshot(const Device& device, int64_t step, bool only_changed);

// After a sync: which of this step's direct-path nodes the lists keep.
// At a barrier (`step_end`), a node is kept when each operand is a kept
// node of the list, or a device-data leaf that something outside the lists
// still holds (more references than the list's nodes account for: a
// tensor, say); the kept nodes become the previous step's, the previous
// step's go, and the others leave. A sync inside a step lets go of the
// slots traced since the last one: they are never matched again this step,
// and a loop that reads a value each iteration without a barrier must not
// pile up nodes (and the inputs they read) until the barrier. So the lists
// never hold a buffer alive that nothing else holds beyond a step.
void settle_reuse(DeviceState& st, bool step_end) {
  TraceReuse& r = st.reuse;
  const bool on = settings::reuse_ir_nodes();
  if (!step_end) {
    {
      std::lock_guard lock(st.pending.lock);
      r.settled_in_step = true;
      // The previous step's nodes at those places go too: they could only be
      // matched at their own place, now passed. A script that ends its steps
      // with reads and no barrier (an evaluation loop after training) kept
      // them, and every buffer they read, until a mark_step that never came.
      const size_t passed = std::min(r.current.size(), r.previous.size());
      for (size_t i = r.settled_upto; i < r.current.size(); ++i) {
        if (r.current[i]) r.dropping.push_back(std::move(r.current[i]));
        if (i < passed && r.previous[i]) r.dropping.push_back(std::move(r.previous[i]));
      }
      r.settled_upto = r.current.size();
      if (!on) {
        for (NodePtr& node : r.previous) {
          if (node) r.dropping.push_back(std::move(node));
        }
        r.previous.clear();
      }
    }
    r.dropping.clear();  // released outside the lock
    return;
  }
  if (on) {
    std::lock_guard lock(st.pending.lock);
    if (r.reused > 0) LAZYSCOPE_COUNTER("ReusedIrNodes")->add(static_cast<int64_t>(r.reused));
    // The counts first: the anchors point into the kept nodes, which are
    // alive while every slot of the step holds one of them.
    if (!r.settled_in_step && r.reused == r.kept && r.current.size() == r.kept && r.previous.size() == r.kept &&
        std::all_of(r.anchors.begin(), r.anchors.end(),
                    [](const auto& a) { return a.first->use_count() > a.second; })) {
      // Every slot reused: `previous` holds only nulls now (trace_reused
      // moved its nodes over), and this step's list is the next step's.
      r.previous.swap(r.current);
      r.current.clear();
      r.reused = 0;
      return;
    }
  }
  {
    std::lock_guard lock(st.pending.lock);
    r.spare.swap(r.previous);
  }
  r.spare.clear();  // the last step's nodes not reused: released outside the lock
  {
    std::lock_guard lock(st.pending.lock);
    std::vector<NodePtr>& current = r.current;
    r.anchors.clear();
    r.kept = 0;
    r.reused = 0;
    r.settled_in_step = false;
    r.settled_upto = 0;
    if (!on) {
      r.dropping.swap(current);
      current.clear();
      r.previous.swap(r.spare);
      r.spare.clear();
    } else {
      const uint64_t epoch = new_epoch();
      for (const NodePtr& node : current) {
        if (!node) continue;
        for (const NodePtr& operand : node->operands()) {
          if (!operand->is_leaf()) continue;
          if (operand->reuse_epoch != epoch) {
            operand->reuse_epoch = epoch;
            operand->reuse_refs = 0;
          }
          ++operand->reuse_refs;
        }
      }
      for (NodePtr& node : current) {
        if (!node) continue;
        bool keep = true;
        for (const NodePtr& operand : node->operands()) {
          keep = keep && (operand->is_leaf() ? operand.use_count() > operand->reuse_refs
                                             : operand->reuse_epoch == epoch && operand->reuse_refs == 1);
        }
        if (keep) {
          node->reuse_epoch = epoch;
          node->reuse_refs = 1;
          ++r.kept;
          for (const NodePtr& operand : node->operands()) {
            if (operand->is_leaf()) r.anchors.emplace_back(&operand, operand->reuse_refs);
          }
        } else {
          r.dropping.push_back(std::move(node));  // released after the lock
        }
      }
      r.previous.swap(current);  // `previous` was emptied above
      current.swap(r.spare);     // the old storage, for this step's
    }
  }
  r.dropping.clear();
}

}  // namespace

namespace {
// Appends a tensor with a pending node to the list and counts its node
// toward the graph limit; under st.pending.lock. True: over the limit.
// Inline: a replayed op's registration (trace_reused) is most of its work
// under the lock, and the call saved registers around it.
[[gnu::always_inline]] inline bool register_locked(DeviceState& st, TensorImpl& tensor) {
  if (st.step_start_ns.load(std::memory_order_relaxed) < 0) {
    st.step_start_ns.store(events::now_ns(), std::memory_order_relaxed);
  }
  st.pending.append(tensor);
  // Graph nodes, not op results (issue 15 item 9): a chain of `x + 1e-6`
  // counted per op was cut into graphs twice the limit.
  const auto count = [&st](const Node* node) {
    if (node->counted_epoch == st.count_epoch) return;
    node->counted_epoch = st.count_epoch;
    ++st.pending_nodes;
  };
  const Node* node = tensor.ir.get();
  count(node);
  if (node->reads_leaf()) {
    for (const NodePtr& operand : node->operands()) {
      if (operand->is_leaf()) count(operand.get());
    }
  }
  return st.pending_nodes > settings::graph_node_limit();
}

void split_at_limit(const Device& device) {
  LAZYSCOPE_COUNTER("GraphNodeLimitSplits")->add(1);
  sync(device, {}, pb::SYNC_CAUSE_GRAPH_LIMIT);
}

// Attrs::operator== compares doubles by value, and 0.0 == -0.0: the
// previous step's clamp(min=0.0) would be handed to clamp(min=-0.0), whose
// result differs in sign (and 1/x in infinity), and its graph hash too (the
// hash reads the bytes). A reused node must carry the very constants the op
// was given: doubles are compared as their bits, as the hash reads them.
bool same_attr_bits(const Attrs& a, const Attrs& b) {
  const std::vector<Attr>&x = a.items(), &y = b.items();
  if (x.empty()) return y.empty();  // most ops: no attribute, no loop
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if ((x[i].name != y[i].name && std::strcmp(x[i].name, y[i].name) != 0) ||
        x[i].value.index() != y[i].value.index()) {
      return false;
    }
    const double* u = std::get_if<double>(&x[i].value);
    if (u ? std::bit_cast<uint64_t>(*u) != std::bit_cast<uint64_t>(std::get<double>(y[i].value))
          : x[i].value != y[i].value) {
      return false;
    }
  }
  return true;
}
}  // namespace

bool trace_reused(const Device& device, OpKind op, std::span<const Node* const> operands, const Attrs& attrs,
                  const SourceLocation& source, const std::string* scope, size_t* slot, Tensor& out) {
  *slot = kNoTraceSlot;
  if (!settings::reuse_ir_nodes()) return false;
  DeviceState& st = state(device);
  bool over_limit = false;
  {
    std::lock_guard lock(st.pending.lock);
    TraceReuse& r = st.reuse;
    const size_t place = r.current.size();
    if (place >= kMaxTraceSlots) return false;
    r.current.emplace_back();  // a new node goes in at its registration (register_pending)
    *slot = place;
    if (place >= r.previous.size() || !r.previous[place]) return false;
    const Node& p = *r.previous[place];
    const std::span<const NodePtr> was = p.operands();
    if (p.op() != op || was.size() != operands.size() || p.scope() != scope || p.source().line != source.line ||
        p.source().file != source.file || p.source().function != source.function) {
      return false;
    }
    for (size_t i = 0; i < was.size(); ++i) {
      if (was[i].get() != operands[i]) return false;
    }
    if (!same_attr_bits(p.attrs(), attrs)) return false;
    // Asked again when a backend was installed since, or some op is forced
    // off the device (either may move this op off it); else the answer
    // kept with the node (fallback_reason: ~40 instructions per op).
    const uint64_t generation = backend_generation() + 1;
    if (p.lowered_generation != generation || settings::any_forced_fallback()) {
      if (fallback_reason(op, p.dtype()) != pb::FALLBACK_REASON_UNSPECIFIED) return false;
      p.lowered_generation = settings::any_forced_fallback() ? 0 : generation;
    }
    // The previous step's place gives the node up (never read again this
    // step). The result's reference is taken first: an atomic increment
    // waits for every store before it to drain, and the lock's exchange
    // just drained them (after the result's ~30 stores it was 12% of a
    // replayed op's time).
    r.current.back() = std::move(r.previous[place]);
    NodePtr node(r.current.back());
    ++r.reused;
    // The result, made here (from the thread's pool) so that binding and
    // registering it take no second lock.
    auto tensor = pool::make_pooled<TensorImpl>();
    tensor->device = device;
    pool::assign_stashed(tensor->spec.shape, p.shape());  // no allocation per traced op
    tensor->spec.dtype = p.dtype();
    tensor->ir = std::move(node);
    over_limit = register_locked(st, *tensor);
    out = Tensor(std::move(tensor));
  }
  if (over_limit) split_at_limit(device);
  return true;
}

void register_pending(const std::shared_ptr<TensorImpl>& tensor, size_t trace_slot) {
  DeviceState& st = state(tensor->device);
  bool over_limit = false;
  {
    std::lock_guard lock(st.pending.lock);
    if (trace_slot < st.reuse.current.size()) st.reuse.current[trace_slot] = tensor->ir;
    over_limit = register_locked(st, *tensor);
  }
  if (over_limit) split_at_limit(tensor->device);
}

void unregister_pending(TensorImpl& tensor) noexcept {
  // The chain is its device's or a running sync's, both under the device's
  // lock (device states live as long as the process; a sync's chain, on its
  // stack, is read only under the lock: it empties it before it ends). The
  // tensor may have moved between them, or been bound (its link null),
  // before the lock was had.
  if (!chain_of(tensor, std::memory_order_acquire)) return;
  DeviceState& st = state(tensor.device);
  std::lock_guard lock(st.pending.lock);
  if (Chain* now = chain_of(tensor, std::memory_order_relaxed)) now->unlink(tensor);
}

int64_t sync(const Device& device, const std::vector<std::shared_ptr<TensorImpl>>& targets, pb::SyncCause cause) {
  DeviceState& st = state(device);
  std::lock_guard lock(st.mu);
  const int64_t ran = sync_locked(device, st, targets, cause);
  settle_reuse(st, /*step_end=*/false);
  return ran;
}

void mark_step(const Device& device) {
  DeviceState& st = state(device);
  std::lock_guard lock(st.mu);
  if (st.step_start_ns.load(std::memory_order_relaxed) < 0) {
    st.step_start_ns.store(events::now_ns(), std::memory_order_relaxed);
  }
  // Taken before the sync: a step whose graph fails drops its logs with it.
  auto logs = std::move(st.scalar_logs);
  st.scalar_logs.clear();
  sync_locked(device, st, {}, pb::SYNC_CAUSE_MARK_STEP);
  settle_reuse(st, /*step_end=*/true);
  if (events::enabled()) {
    for (const auto& [name, t] : logs) {
      // Computed by the graph just run (it was pending and alive), or read
      // earlier by the script: either way its buffer is here, no sync needed.
      if (t->buffer) publish_scalar_event(device, st.step, name, first_value(*t->buffer));
    }
  }
  const int64_t closed = st.step;
  const int64_t now = events::now_ns();
  publish_step(device, st, now);
  // Throttled (settings::metric_snapshot_ms): the snapshot was most of what
  // recording cost a tiny step (issue 15). Changes accumulate meanwhile.
  if (events::enabled() && now - st.last_snapshot_ns >= settings::metric_snapshot_ms() * 1'000'000) {
    st.last_snapshot_ns = now;
    publish_snapshot(device, closed, /*only_changed=*/true);
  }
}

void log_scalar(const std::string& name, const Tensor& value) {
  if (value.numel() != 1) {
    throw EngineError("log('" + name + "'): expected a one-element tensor, got shape " + shape_str(value.shape()));
  }
  if (!events::enabled()) return;  // nobody listens: keep nothing alive
  if (!value.device().is_lazy()) {
    publish_scalar(value.device(), name, first_value(*value.impl()->buffer));
    return;
  }
  DeviceState& st = state(value.device());
  std::lock_guard lock(st.mu);
  st.scalar_logs.emplace_back(name, value.impl());
}

void publish_scalar(const Device& device, const std::string& name, double value) {
  if (!events::enabled()) return;
  const Device d = device.is_lazy() ? device : Device{DeviceKind::kLazy, 0};
  publish_scalar_event(d, current_step(d), name, value);
}

void publish_metric_snapshot(const Device& device, bool only_changed) {
  publish_snapshot(device, current_step(device), only_changed);
}

namespace {
void publish_snapshot(const Device& device, int64_t step, bool only_changed) {
  if (!events::enabled()) return;
  const std::vector<metrics::SnapshotEntry> entries = metrics::snapshot(only_changed);
  if (only_changed && entries.empty()) return;
  pb::Event e;
  e.set_replica(device.ordinal);
  auto* m = e.mutable_metrics();
  m->set_step(step);
  m->set_time_ns(events::now_ns());
  for (const metrics::SnapshotEntry& entry : entries) {
    auto* v = m->add_metrics();
    v->set_name(entry.name);
    v->set_is_counter(entry.is_counter);
    if (entry.is_counter) {
      v->set_value(entry.value);
    } else {
      v->set_count(entry.stats.count);
      v->set_total_ms(entry.stats.total);
      v->set_p50_ms(entry.stats.p50);
      v->set_p90_ms(entry.stats.p90);
      v->set_p99_ms(entry.stats.p99);
    }
  }
  events::publish(e);
}
}  // namespace

int64_t current_step(const Device& device) { return state(device).step_now.load(); }

void note_transfer(const Device& device, bool to_device, int64_t start_ns, int64_t duration_ns, int64_t bytes) {
  DeviceState& st = state(device);
  {
    std::lock_guard lock(st.transfer_mu);
    st.transfer_ns += duration_ns;
  }
  const int64_t step = st.step_now.load();
  if (events::enabled()) {
    pb::Event e;
    e.set_replica(device.ordinal);
    auto* t = e.mutable_transfer();
    t->set_step(step);
    t->set_to_device(to_device);
    t->set_start_ns(start_ns);
    t->set_duration_ns(duration_ns);
    t->set_bytes(bytes);
    events::publish(e);
  }
}

SyncProfile last_sync_profile(const Device& device, bool with_kernels) {
  DeviceState& st = state(device);
  std::lock_guard lock(st.mu);
  SyncProfile p = st.last_profile;
  if (const std::shared_ptr<CompiledGraph> compiled = with_kernels ? st.last_compiled.lock() : nullptr) {
    const Executable& exe = *compiled->executable;
    p.kernel_samples = exe.sampled_executions();
    for (const KernelTiming& k : exe.kernel_profile()) p.kernel_total_ns += k.total_ns;
  }
  return p;
}

pb::IrGraph pending_graph(const Device& device, const std::vector<std::shared_ptr<TensorImpl>>& targets) {
  DeviceState& st = state(device);
  std::lock_guard lock(st.mu);
  int64_t traced_nodes = 0;
  std::vector<NodePtr> held;
  if (targets.empty()) {
    held = pending_roots(st, &traced_nodes);
  } else {
    for (const auto& t : targets) {
      if (t->ir) held.push_back(t->ir);
    }
  }
  std::vector<const Node*> roots;
  for (const NodePtr& node : held) roots.push_back(node.get());
  LoweredGraph graph = lower(roots, static_cast<size_t>(traced_nodes) + roots.size());
  fill_operands(graph.view);
  return to_proto(graph.view, graph.hash);
}

}  // namespace lazyscope::executor
