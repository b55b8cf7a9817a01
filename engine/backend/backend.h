// The backend boundary, in the spirit of PJRT: a Backend says what it lowers
// and compiles a graph into an Executable; an Executable runs on parameter
// buffers and returns output buffers. Buffers are backend memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/buffer.h"
#include "ir/node.h"

namespace lazyscope {

// A graph ready to compile: nodes in post-order (operands first). Each entry
// of `operands` holds positions into `nodes`. Parameters are the leaf
// positions in the order their buffers are passed to execute(); outputs are
// the positions whose values are returned, in order.
struct GraphView {
  std::vector<const Node*> nodes;
  std::vector<std::vector<int>> operands;
  std::vector<int> parameters;
  std::vector<int> outputs;
};

// One kernel of a lowered program and its sampled timings, cumulative over
// the executable's life (the engine's side of pb::KernelProfile).
struct KernelTiming {
  int index = 0;                 // position in the program
  std::string name;              // "fused_elementwise", "gemm", or the op's name
  std::vector<int> nodes;        // post-order positions of the IR nodes it covers
  int64_t flops = 0, bytes = 0;  // estimated, per run
  int64_t samples = 0, total_ns = 0;
  // How a generated kernel ran in the timed calls, e.g. "avx512 tiles" (the
  // interpreter) or "avx512 compiled"; empty for a library kernel.
  std::string code;
};

// The machine's peaks a roofline compares kernels with.
struct MachinePeaks {
  double gemm_gflops = 0, stream_gbps = 0;
  // A triad whose arrays stay in the last-level cache, and its working set:
  // kernels whose bytes fit are rated against this roof instead (0: unknown).
  double cache_gbps = 0;
  int64_t cache_bytes = 0;
  int threads = 0;
  std::string isa;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Executions so far, and how many of them were timed kernel by kernel.
  virtual int64_t executions() const { return 0; }
  virtual int64_t sampled_executions() const { return 0; }
  // Per-kernel timings of the sampled executions (empty: not profiled).
  virtual std::vector<KernelTiming> kernel_profile() const { return {}; }
  // Bytes the executable's buffers take at most while it runs.
  virtual int64_t peak_bytes() const { return 0; }
  // `parameters` is [graph.parameters.size()]; returns [graph.outputs.size()].
  // Buffer donation (XLA's input/output aliasing). `donor_refs` is empty or
  // [parameters.size()]: for a parameter whose value dies with this
  // execution (nothing outside the step's graph holds its leaf or any node
  // that reads it), the number of references to its buffer the caller
  // accounts for (its leaf's and its own entry in `parameters`), else 0.
  // An executable may write an output over such a buffer once it has read
  // it, if it finds no other reference (counting those it keeps itself).
  virtual std::vector<BufferPtr> execute(std::span<const BufferPtr> parameters, std::span<const int> donor_refs) = 0;
  // Whether any output may be written over a parameter's buffer: the caller
  // then works out `donor_refs` (a walk over the graph), else skips it.
  virtual bool accepts_donations() const { return false; }
  // The lowered program, human-readable: kernels, buffers, sizes.
  virtual std::string program_text() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Whether `op` producing `dtype` runs on the device; anything else falls
  // back to the host.
  virtual bool lowers(OpKind op, DType dtype) const = 0;
  // The executable must not keep pointers into `graph`: its nodes die when
  // the tensors that traced them are bound to results.
  virtual std::unique_ptr<Executable> compile(const GraphView& graph) = 0;
  // Measured once, on first call (a short GEMM and a STREAM triad at the
  // backend's thread count); zeros where the backend does not measure.
  virtual MachinePeaks machine_peaks() { return {}; }
  // A sync is about to run a program (called as it starts, before the graph
  // is lowered and looked up): the CPU backend may wake its pool's workers
  // (LAZYSCOPE_POOL_WAKE_US), so the program's first parallel kernel does
  // not wait for them.
  virtual void will_run() {}
};

// The backend of the lazy devices (the CPU backend for now).
Backend& default_backend();
// Replaces it (nullptr: back to the CPU backend) and returns the previous
// one; the caller keeps `backend` alive while installed. For tests and for
// backends that lower less, whose missing ops then fall back to the host.
Backend* set_default_backend(Backend* backend);
// Moves on with every set_default_backend(): what was learnt of the default
// backend (which ops it lowers) under an older generation is stale. An
// installed backend's lowers() must not change while it stays installed.
namespace detail {
inline std::atomic<uint64_t> g_backend_generation{0};
}  // namespace detail
// Inline: every replayed op reads it (a call was ~4 instructions of ~690).
inline uint64_t backend_generation() { return detail::g_backend_generation.load(std::memory_order_acquire); }

// A backend that lowers what `inner` lowers, except the (op, dtype) pairs it
// was told to refuse (dtype nullopt: every dtype). It compiles through
// `inner`. Tests use it to make an op "unlowered" without a new backend.
class RestrictedBackend final : public Backend {
 public:
  struct Refusal {
    OpKind op;
    std::optional<DType> dtype;
  };
  RestrictedBackend(Backend& inner, std::vector<Refusal> refused) : inner_(inner), refused_(std::move(refused)) {}
  std::string_view name() const override { return inner_.name(); }
  bool lowers(OpKind op, DType dtype) const override;
  std::unique_ptr<Executable> compile(const GraphView& graph) override { return inner_.compile(graph); }
  MachinePeaks machine_peaks() override { return inner_.machine_peaks(); }
  void will_run() override { inner_.will_run(); }

 private:
  Backend& inner_;
  std::vector<Refusal> refused_;
};

}  // namespace lazyscope
