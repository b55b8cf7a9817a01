#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>
#include <utility>

#include "backend/cpu/fusion.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"
#include "core/settings.h"
#include "events/event_bus.h"
#include "metrics/metrics.h"

namespace lazyscope {

namespace cpu {
namespace {

// What an instruction runs: a kernel of the table, or a matmul reading
// transposed operands through the BLAS flags (the permute it replaces is
// not run when nothing else reads it), possibly with a fused elementwise
// epilogue, or a fused elementwise kernel, or several independent fused
// kernels sharing one parallel region (kFusedGroup: the optimizer update
// of every parameter at once), or a view (kView: a reshape, or a slice that
// is one contiguous run of its operand, whose result is its operand's bytes
// under another shape; no kernel runs).
enum class Kind : uint8_t { kKernel, kMatmul, kFused, kFusedGroup, kView };

struct Instruction {
  Kind kind = Kind::kKernel;
  KernelFn kernel = nullptr;
  OpKind op = OpKind::kAdd;
  std::vector<int> inputs;  // slots
  int output = -1;          // slot (the node's post-order position)
  TensorSpec spec;
  Attrs attrs;
  bool transpose_a = false, transpose_b = false;  // kMatmul
  // kMatmul over stacked rows: a [..., K] and b [..., N] as [R, K] and
  // [R, N] (R all their other elements), out [K, N] = a^T b, whatever its
  // shape: the sum over a batch of per-batch products a_i^T b_i (a weight
  // gradient of a linear layer on a 3-d input) as the single GEMM it is.
  bool stacked = false;
  // kMatmul reading an operand, or writing its product, in place through a
  // permute of a contiguous value (attention's head split and merge,
  // matmul_strided): the layouts of a, b (as stored: transposed where the
  // flag says so) and the product; empty when every one is its slot's
  // contiguous buffer.
  std::vector<MatrixLayout> layouts;
  std::vector<int> nodes;                    // IR nodes it covers, post-order positions
  std::shared_ptr<const FusedKernel> fused;  // kFused
  std::vector<int> outputs;                  // kFused: every slot it writes (output is the first); kFusedGroup and a
                                             // kMatmul with an epilogue: every slot of every member too
  // kFusedGroup: its kernels; kMatmul: at most one, its epilogue (a kFused
  // reading the product, run on each part of the product as it is written).
  std::vector<Instruction> members;
};

// Where each value lives during execution (plan_memory). Parameters are the
// caller's; outputs are handed out, so each execution gives fresh (or
// recycled: see CpuExecutable::output_buffer) buffers; every other value is
// a range of bytes at a fixed offset in the executable's arena, one block
// kept across executions. A view (Kind::kView) is the bytes of the value it
// lays out: in the arena at the same offset, or a view of a parameter or
// output made when it runs.
struct MemoryPlan {
  static constexpr int64_t kParameter = -1, kOutput = -2, kUnused = -3, kView = -4;
  std::vector<int64_t> offset_of_slot;  // per slot: byte offset in the arena, or one of the above
  std::vector<int> view_of;             // per slot: the slot a view lays out, else -1
  std::vector<int64_t> view_offset;     // per slot: a view's first byte in the slot it lays out
  std::vector<int> over;                // per slot: the operand whose bytes it is written over in place, else -1
  int64_t arena_bytes = 0;              // the block
  int64_t arena_live_bytes = 0;         // the most bytes its values hold at once: what no packing goes below
  int64_t values_bytes = 0;             // the arena's values if each had bytes of its own
  int arena_values = 0, in_place = 0, views = 0;
  int64_t parameter_bytes = 0;  // every parameter buffer the program is given
  int64_t output_bytes = 0;     // outputs computed by the program
  int64_t donatable_bytes = 0;  // outputs that can take a parameter's buffer (Donation), each once
  // The most bytes live at once in this program order (parameters, arena
  // values from their kernel to their last reader, outputs from their
  // kernel on), less donatable_bytes: no plan of this program holds less.
  int64_t live_bytes = 0;
};

// Every arena value starts on a cache line (and an AVX-512 vector).
constexpr int64_t kArenaAlignment = 64;

// An output the program may write over a parameter's buffer when the
// parameter's value dies with the execution (Executable::execute): the
// fused kernel computing it is the parameter's last reader and reads each
// element before writing it (an optimizer update: w' = w - lr * v').
struct Donation {
  int parameter;  // index into the parameters
  int output;     // slot
};

metrics::Counter* donated_counter() {
  static metrics::Counter* c = metrics::counter("CpuDonatedBuffers");
  return c;
}

// Estimated cost of one kernel, for the program listing: floating-point
// operations and bytes read plus written. Rows by cost shape; an op with no
// row (a newly added one) counts one operation per output element, the
// elementwise estimate — a lower bound for anything heavier.
enum class Cost : uint8_t { kFree, kPerOutput, kPerInput, kMatmul, kConv, kAttention, kFactorization };
struct CostRow {
  OpKind op;
  Cost cost;
  int per_element;  // operations per element counted
};
constexpr CostRow kCostRows[] = {
    {OpKind::kCast, Cost::kFree, 0},
    {OpKind::kReshape, Cost::kFree, 0},
    {OpKind::kPermute, Cost::kFree, 0},
    {OpKind::kExpand, Cost::kFree, 0},
    {OpKind::kCat, Cost::kFree, 0},
    {OpKind::kSlice, Cost::kFree, 0},
    {OpKind::kSliceBackward, Cost::kFree, 0},
    {OpKind::kIndexSelect, Cost::kFree, 0},
    {OpKind::kOneHot, Cost::kFree, 0},
    {OpKind::kMatmul, Cost::kMatmul, 2},
    {OpKind::kConv2d, Cost::kConv, 2},
    {OpKind::kConv2dBackwardInput, Cost::kConv, 2},
    {OpKind::kConv2dBackwardWeight, Cost::kConv, 2},
    {OpKind::kConv3d, Cost::kConv, 2},
    {OpKind::kConv3dBackwardInput, Cost::kConv, 2},
    {OpKind::kConv3dBackwardWeight, Cost::kConv, 2},
    {OpKind::kSum, Cost::kPerInput, 1},
    {OpKind::kMean, Cost::kPerInput, 1},
    {OpKind::kProd, Cost::kPerInput, 1},
    {OpKind::kAmax, Cost::kPerInput, 1},
    {OpKind::kAmin, Cost::kPerInput, 1},
    {OpKind::kArgmax, Cost::kPerInput, 1},
    {OpKind::kArgmin, Cost::kPerInput, 1},
    {OpKind::kAny, Cost::kPerInput, 1},
    {OpKind::kAll, Cost::kPerInput, 1},
    {OpKind::kVar, Cost::kPerInput, 3},
    {OpKind::kLogsumexp, Cost::kPerInput, 3},
    {OpKind::kSoftmax, Cost::kPerInput, 4},
    {OpKind::kLogSoftmax, Cost::kPerInput, 4},
    {OpKind::kNllLoss, Cost::kPerOutput, 1},
    {OpKind::kNllLossBackward, Cost::kPerOutput, 1},
    {OpKind::kLayerNorm, Cost::kPerOutput, 8},
    {OpKind::kLayerNormBackward, Cost::kPerOutput, 14},
    {OpKind::kLayerNormParamGrads, Cost::kPerInput, 6},
    {OpKind::kIndexAdd, Cost::kPerInput, 1},
    {OpKind::kAttention, Cost::kAttention, 2},
    {OpKind::kAttentionBackward, Cost::kAttention, 2},
    // Factorizations: thirds of m n min(m, n) per matrix (per_element / 3),
    // the textbook counts: LU 2/3 n^3 (+ 2 n^2 k for the solve), inverse
    // 2 n^3, Cholesky 1/3 n^3, symmetric eigendecomposition ~9 n^3 with
    // vectors, Householder QR ~2 m n^2 (+ forming Q), SVD ~12 m n^2; a
    // triangular solve n^2 k (counted below).
    {OpKind::kLinalgSolve, Cost::kFactorization, 2},
    {OpKind::kLinalgInv, Cost::kFactorization, 6},
    {OpKind::kLinalgSlogdet, Cost::kFactorization, 2},
    {OpKind::kLinalgCholesky, Cost::kFactorization, 1},
    {OpKind::kLinalgSolveTriangular, Cost::kFactorization, 0},
    {OpKind::kLinalgEigh, Cost::kFactorization, 27},
    {OpKind::kLinalgQr, Cost::kFactorization, 12},
    {OpKind::kLinalgSvd, Cost::kFactorization, 36},
};

struct KernelCost {
  int64_t flops = 0;
  int64_t bytes = 0;
};

int64_t spec_bytes(const TensorSpec& s) { return numel(s.shape) * static_cast<int64_t>(dtype_size(s.dtype)); }

KernelCost estimate(OpKind op, const std::vector<const TensorSpec*>& inputs, const TensorSpec& out) {
  KernelCost c;
  c.bytes = spec_bytes(out);
  for (const TensorSpec* in : inputs) c.bytes += spec_bytes(*in);
  Cost cost = Cost::kPerOutput;
  int per = 1;
  for (const CostRow& row : kCostRows) {
    if (row.op == op) {
      cost = row.cost;
      per = row.per_element;
      break;
    }
  }
  switch (cost) {
    case Cost::kFree: break;
    case Cost::kPerOutput: c.flops = per * numel(out.shape); break;
    case Cost::kPerInput: c.flops = inputs.empty() ? 0 : per * numel(inputs[0]->shape); break;
    case Cost::kMatmul:  // a multiply and an add per (output element, k)
      c.flops = inputs.empty() || inputs[0]->shape.empty() ? 0 : per * numel(out.shape) * inputs[0]->shape.back();
      break;
    case Cost::kFactorization: {
      if (inputs.empty() || inputs[0]->shape.size() < 2) break;
      const Shape& a = inputs[0]->shape;
      const int64_t m = a[a.size() - 2], n = a.back(), batch = numel(a) / std::max<int64_t>(1, m * n);
      c.flops = batch * (per * m * n * std::min(m, n) / 3);
      // A solve's right-hand sides: 2 n^2 k for LU's two triangles, n^2 k for one.
      if ((op == OpKind::kLinalgSolve || op == OpKind::kLinalgSolveTriangular) && inputs.size() > 1) {
        c.flops += batch * (op == OpKind::kLinalgSolve ? 2 : 1) * n * n * inputs[1]->shape.back();
      }
      break;
    }
    case Cost::kAttention: {  // its products: q k^T and P v; backward dO v^T, P^T dO, dS k and dS^T q
      const Shape& q = inputs[0]->shape;
      const bool packed = q.size() == 5;  // [N, L, 3, H, D]
      if (inputs.size() < (packed ? 1 : 3) || q.size() < 4) break;
      const int64_t heads = q[packed ? 3 : 2], d = q.back(), keys = packed ? q[1] : inputs[1]->shape[1];
      const int64_t dv = packed ? d : inputs[2]->shape.back();
      const int64_t scores = q[0] * heads * q[1] * keys;
      c.flops = op == OpKind::kAttention ? per * scores * (d + dv) : per * scores * (2 * d + 2 * dv);
      break;
    }
    case Cost::kConv: {  // a multiply and an add per (output position, weight element of one output channel)
      if (inputs.size() < 2) break;
      const auto tail = [](const Shape& s) { return s.empty() ? int64_t{0} : numel(s) / s[0]; };
      // forward (input, weight) -> out; backward_input (grad, weight) -> input;
      // backward_weight (input, grad) -> weight: the same products each time.
      if (op == OpKind::kConv2dBackwardWeight || op == OpKind::kConv3dBackwardWeight) {
        c.flops = per * numel(inputs[1]->shape) * tail(out.shape);
      } else if (op == OpKind::kConv2dBackwardInput || op == OpKind::kConv3dBackwardInput) {
        c.flops = per * numel(inputs[0]->shape) * tail(inputs[1]->shape);
      } else {
        c.flops = per * numel(out.shape) * tail(inputs[1]->shape);
      }
      break;
    }
  }
  return c;
}

// Every how many executions a program times its kernels
// (LAZYSCOPE_PROFILE_EVERY, default 64; 1: every one). A benchmark sets 1 to
// split each execution into its kernels and the rest (step_overhead.py: the
// program's own overhead measured on the same executions as its kernels).
int64_t profile_period() {
  static const int64_t every = [] {
    const char* env = std::getenv("LAZYSCOPE_PROFILE_EVERY");
    return env && *env ? std::clamp<int64_t>(std::atoll(env), 1, int64_t{1} << 30) : int64_t{64};
  }();
  return every;
}

metrics::Counter* allocations_counter() {
  static metrics::Counter* c = metrics::counter("CpuProgramAllocations");
  return c;
}

BufferPtr allocate_counted(DType dtype, const Shape& shape) {
  allocations_counter()->add(1);
  return Buffer::allocate_on_device(dtype, shape);
}

// Every slot an instruction writes (defined with the passes below).
std::span<const int> written_slots(const Instruction& ins);

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(int slot_count, std::vector<int> parameter_slots, std::vector<DType> parameter_dtypes,
                std::vector<Instruction> program, std::vector<int> output_slots, bool bf16,
                std::vector<TensorSpec> slot_specs, MemoryPlan plan, std::vector<Donation> donations)
      : slot_count_(slot_count),
        parameter_slots_(std::move(parameter_slots)),
        parameter_dtypes_(std::move(parameter_dtypes)),
        program_(std::move(program)),
        output_slots_(std::move(output_slots)),
        bf16_(bf16),
        slot_specs_(std::move(slot_specs)),
        plan_(std::move(plan)),
        donations_(std::move(donations)) {
    // The slots an execution sets (execute() clears only those after it).
    touched_slots_ = parameter_slots_;
    const auto touch = [this](const Instruction& ins) {
      if (ins.output >= 0) touched_slots_.push_back(ins.output);
      touched_slots_.insert(touched_slots_.end(), ins.outputs.begin(), ins.outputs.end());
    };
    for (const Instruction& ins : program_) {
      touch(ins);
      for (const Instruction& member : ins.members) touch(member);
    }
    std::sort(touched_slots_.begin(), touched_slots_.end());
    touched_slots_.erase(std::unique(touched_slots_.begin(), touched_slots_.end()), touched_slots_.end());
    // Fused kernels whose compile runs in the background, for execute() to
    // switch between executions.
    for (const Instruction& ins : program_) {
      if (ins.kind == Kind::kFused && ins.fused->adopt()) compiling_.push_back(ins.fused.get());
      if (ins.kind != Kind::kFusedGroup && ins.kind != Kind::kMatmul) continue;
      for (const Instruction& member : ins.members) {
        if (member.kind == Kind::kFused && member.fused->adopt()) compiling_.push_back(member.fused.get());
      }
    }
  }

  bool accepts_donations() const override { return !donations_.empty(); }

  std::vector<BufferPtr> execute(std::span<const BufferPtr> parameters, std::span<const int> donor_refs) override {
    if (parameters.size() != parameter_slots_.size()) {
      throw EngineError("executable expects " + std::to_string(parameter_slots_.size()) + " parameters, got " +
                        std::to_string(parameters.size()));
    }
    // Replicas on threads may run one cached program at once: the first
    // holds the arena, the others run on buffers of their own.
    std::unique_lock lock(mu_, std::try_to_lock);
    const bool own = lock.owns_lock();
    const bool switched = adopt_compiled(own);
    State local;
    State& st = own ? state_ : local;
    // The arena is allocated on first use, inside the instruction that
    // first needs it, so an allocation failure names its op.
    if (st.views.size() != static_cast<size_t>(slot_count_)) st.views.assign(static_cast<size_t>(slot_count_), nullptr);
    // All null after a completed execution (it clears the slots it set):
    // a fused 1,000-node chain has ~1,000 slots and sets a handful, and
    // assigning all of them twice per step was ~17 instructions per node.
    if (!st.slots_clear || st.slots.size() != static_cast<size_t>(slot_count_)) {
      st.slots.assign(static_cast<size_t>(slot_count_), nullptr);
    }
    st.slots_clear = false;
    std::vector<BufferPtr>& slots = st.slots;
    take_donations(st, parameters, donor_refs);
    for (size_t i = 0; i < parameters.size(); ++i) {
      // A bf16-stored float parameter is widened to the dtype the kernels expect.
      slots[parameter_slots_[i]] = parameters[i]->dtype() == parameter_dtypes_[i]
                                       ? parameters[i]
                                       : converted(*parameters[i], parameter_dtypes_[i]);
    }
    std::vector<const Buffer*>& inputs = st.inputs;
    // Kernel timings on a sample of executions (the first 4, then every
    // 64th): a clock read per kernel costs ~20 ns, under 2% of a step even
    // when sampled, and nothing on the others. The first execution pays
    // what no later one does (the arena's first touch, oneDNN generating
    // code for each new GEMM shape, the pool's first wake-up: a GEMM at 2%
    // of its roof), so its timings stand only until a later sample comes,
    // which drops them. An execution that switched a fused kernel to its
    // compiled code is sampled and drops the earlier timings too: they
    // were of the interpreter, and the profile names the code that ran.
    const int64_t execution = executions_.fetch_add(1, std::memory_order_relaxed);
    const bool sampled = own && (execution <= 3 || execution % profile_period() == 0 || switched);
    if (sampled && (st.timings.size() != program_.size() || first_only_ || switched)) {
      if (first_only_ || switched) dropped_samples_ = sampled_.load(std::memory_order_relaxed);
      st.timings.assign(program_.size(), 0);
    }
    if (sampled) first_only_ = execution == 0;
    st.timing = sampled;
    st.untimed = 0;
    for (size_t pc = 0; pc < program_.size(); ++pc) {
      const Instruction& ins = program_[pc];
      const int64_t kernel_start = sampled ? events::now_ns() : 0;
      inputs.clear();
      for (int s : ins.inputs) inputs.push_back(slots[s].get());
      BufferPtr out;
      try {
        if (ins.kind == Kind::kFused) {
          st.fused_out.clear();
          for (int slot : ins.outputs) {
            slots[slot] = slot_buffer(st, slot);
            st.fused_out.push_back(slots[slot].get());
          }
          ins.fused->run(inputs, st.fused_out, bf16_);  // rounds in bf16 mode itself
          if (sampled) st.timings[pc] += events::now_ns() - kernel_start - std::exchange(st.untimed, 0);
          continue;
        }
        if (ins.kind == Kind::kFusedGroup) {
          run_group(st, ins);
          if (sampled) st.timings[pc] += events::now_ns() - kernel_start - std::exchange(st.untimed, 0);
          continue;
        }
        if (ins.kind == Kind::kView) {
          slots[ins.output] = plan_.offset_of_slot[static_cast<size_t>(ins.output)] >= 0
                                  ? slot_buffer(st, ins.output)  // the arena's, made once
                                  : Buffer::view(
                                        slots[ins.inputs[0]],
                                        static_cast<size_t>(plan_.view_offset[static_cast<size_t>(ins.output)]),
                                        ins.spec.dtype, ins.spec.shape);
          if (sampled) st.timings[pc] += events::now_ns() - kernel_start - std::exchange(st.untimed, 0);
          continue;
        }
        out = slot_buffer(st, ins.output);
        switch (ins.kind) {
          case Kind::kKernel: ins.kernel(KernelArgs{inputs, *out, ins.attrs}); break;
          case Kind::kMatmul:
            if (ins.stacked && ins.members.empty()) {
              matmul_stacked_rows(*inputs[0], *inputs[1], *out);
            } else if (ins.members.empty() && !ins.layouts.empty()) {
              matmul_strided(*inputs[0], ins.layouts[0], ins.transpose_a, *inputs[1], ins.layouts[1], ins.transpose_b,
                             *out, ins.layouts[2]);
            } else if (ins.members.empty()) {
              matmul_into(*inputs[0], ins.transpose_a, *inputs[1], ins.transpose_b, *out);
            } else {
              // The epilogue reads the product: its slot is set first.
              slots[ins.output] = out;
              prepare_members(st, ins);
              const Instruction& epi = ins.members[0];
              const auto& in = st.member_inputs[0];
              const auto& outs = st.member_outputs[0];
              auto apply = [&](int64_t begin, int64_t end) { epi.fused->run_range(in, outs, bf16_, begin, end); };
              const Epilogue epilogue(apply);
              if (ins.stacked) {
                matmul_stacked_rows(*inputs[0], *inputs[1], *out, &epilogue);
              } else if (ins.layouts.empty()) {
                matmul_into(*inputs[0], ins.transpose_a, *inputs[1], ins.transpose_b, *out, &epilogue);
              } else {
                matmul_strided(*inputs[0], ins.layouts[0], ins.transpose_a, *inputs[1], ins.layouts[1], ins.transpose_b,
                               *out, ins.layouts[2], &epilogue);
              }
            }
            break;
          case Kind::kFused:
          case Kind::kFusedGroup:
          case Kind::kView: break;
        }
      } catch (const EngineError& e) {
        // Which node failed, for the executor to name the line that traced it.
        const std::string op(op_name(ins.op));
        const std::string what = e.what();
        std::fill(slots.begin(), slots.end(), nullptr);
        st.donated.clear();
        // A fused kernel is named after its first op, whose node this is.
        const int node = ins.nodes.empty() ? ins.output : ins.nodes.front();
        throw KernelFailure(node, std::current_exception(), what.starts_with(op) ? what : op + ": " + what);
      }
      // bf16 mode computes in bfloat16 precision: every float result is
      // rounded as a bf16 device would store it.
      if (bf16_ && stored_as_bf16(ins.spec.dtype)) round_to_bf16(*out);
      slots[ins.output] = std::move(out);
      if (sampled) st.timings[pc] += events::now_ns() - kernel_start - std::exchange(st.untimed, 0);
    }
    if (sampled) sampled_.fetch_add(1, std::memory_order_relaxed);
    std::vector<BufferPtr> outputs;
    outputs.reserve(output_slots_.size());
    for (int s : output_slots_) {
      const BufferPtr& value = slots[s];
      // Results stay on the device as bfloat16 (exact: already rounded).
      outputs.push_back(bf16_ && stored_as_bf16(value->dtype()) ? converted(*value, DType::kBFloat16) : value);
    }
    // Keep this execution's outputs to recycle once their users drop them.
    if (own) {
      // Once each: a value returned twice (a parameter's new value that is
      // also its optimizer state's) would count its own copies as users.
      std::vector<BufferPtr>& keep = st.returned[st.generation % 2];
      keep.clear();
      for (const BufferPtr& b : outputs) {
        if (std::find(keep.begin(), keep.end(), b) == keep.end()) keep.push_back(b);
      }
      ++st.generation;
    }
    for (int s : touched_slots_) slots[static_cast<size_t>(s)] = nullptr;  // no parameter kept alive past the call
    st.slots_clear = true;
    st.donated.clear();
    return outputs;
  }

  std::string program_text() const override {
    std::ostringstream os;
    os << "cpu program: " << parameter_slots_.size() << " parameters, " << program_.size() << " kernels"
       << (bf16_ ? ", bf16 storage" : "") << "\n";
    for (size_t i = 0; i < parameter_slots_.size(); ++i) {
      os << "  %" << parameter_slots_[i] << " = parameter " << i << "\n";
    }
    KernelCost total;
    for (const Instruction& ins : program_) {
      const KernelCost c = cost(ins);
      total.flops += c.flops;
      total.bytes += c.bytes;
      if (ins.kind == Kind::kFusedGroup) {
        // Each member as a kernel of its own, then where it runs.
        for (size_t m = 0; m < ins.members.size(); ++m) {
          print_instruction(os, ins.members[m], cost(ins.members[m]),
                            ", kernel " + std::to_string(m + 1) + " of " + std::to_string(ins.members.size()) +
                                " sharing one parallel region (multi-tensor)");
        }
        continue;
      }
      if (ins.kind == Kind::kMatmul && !ins.members.empty()) {
        // The product and its epilogue on lines of their own, each with its
        // own estimate (the total adds both, as if the product went to memory).
        Instruction product = ins;
        product.members.clear();
        product.inputs.resize(2);
        const KernelCost mm = cost(product), epi = cost(ins.members[0]);
        total.flops += mm.flops + epi.flops - c.flops;
        total.bytes += mm.bytes + epi.bytes - c.bytes;
        print_instruction(os, product, mm, ", its epilogue on the next line");
        print_instruction(os, ins.members[0], epi, ", the epilogue of the matmul above");
        continue;
      }
      print_instruction(os, ins, c, "");
    }
    os << "  return";
    for (size_t i = 0; i < output_slots_.size(); ++i) os << (i ? ", " : " ") << "%" << output_slots_[i];
    os << "\n";
    if (!donations_.empty()) {
      // Outputs written over their parameter's buffer when the parameter's
      // value dies with the step (checked on each execution).
      os << "in place:";
      for (const Donation& d : donations_) os << " %" << d.output << " over parameter " << d.parameter;
      os << " (when donated)\n";
    }
    os << "total: flops=" << total.flops << " traffic=" << total.bytes << " bytes (estimated: flops per kernel, bytes "
       << "read and written)\n";
    // The executable's own bytes, then the step's: with the parameters it
    // is given, less the outputs written over them when donated.
    const int64_t own = plan_.arena_bytes + plan_.output_bytes, step = plan_.parameter_bytes + own;
    os << "memory: peak=" << own << " bytes (arena " << plan_.arena_bytes << " bytes in one block, its values live "
       << plan_.arena_live_bytes << " at most at once, for " << plan_.values_bytes << " bytes of " << plan_.arena_values
       << " intermediate values, " << plan_.in_place << " written in place, " << plan_.views
       << " reshapes and slices as views; outputs " << plan_.output_bytes << ")\n";
    os << "memory with the parameters' " << plan_.parameter_bytes << " bytes: step peak=" << step << " bytes, "
       << step - plan_.donatable_bytes << " when the outputs that can take a parameter's buffer do ("
       << plan_.donatable_bytes << " bytes); at least " << plan_.live_bytes << " bytes live at once in this order\n";
    return os.str();
  }

  // Two lines per kernel: the value it computes (parseable as it was), then
  // what the compiler made of it; `note` ends the second.
  void print_instruction(std::ostream& os, const Instruction& ins, const KernelCost& c, const std::string& note) const {
    os << "  %" << ins.output << " = "
       << (ins.kind == Kind::kFused ? std::string("fused") : std::string(op_name(ins.op))) << "(";
    const size_t shown = ins.kind == Kind::kMatmul ? std::min<size_t>(2, ins.inputs.size()) : ins.inputs.size();
    for (size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << "%" << ins.inputs[i];
    os << ") : " << dtype_name(ins.spec.dtype) << shape_str(ins.spec.shape) << "  " << spec_bytes(ins.spec)
       << " bytes  flops=" << c.flops << " traffic=" << c.bytes << "\n";
    os << "      ; nodes ";
    for (size_t i = 0; i < ins.nodes.size(); ++i) os << (i ? "," : "") << ins.nodes[i];
    if (ins.kind == Kind::kFused) {
      os << " (" << ins.fused->step_count() << " ops, " << ins.fused->code() << ":";
      for (size_t i = 0; i < ins.fused->step_count(); ++i) os << " " << op_name(ins.fused->step_op(i));
      // The listing is of the compile; such a kernel switches to its
      // compiled loop at the start of an execution after this one.
      os << ")";
      if (ins.fused->compiling()) os << ", compiling in the background";
      os << ", writes";
      for (int slot : ins.outputs) os << " %" << slot << placement(slot);
    } else if (ins.kind == Kind::kView) {
      os << ", a view of %" << ins.inputs[0];
      const int64_t offset = plan_.view_offset[static_cast<size_t>(ins.output)];
      if (offset) os << " from byte " << offset;
      os << " (no kernel, no bytes)";
    } else {
      os << "," << placement(ins.output);
    }
    if (ins.transpose_a || ins.transpose_b) {
      os << ", reads " << (ins.transpose_a ? "a" : "") << (ins.transpose_a && ins.transpose_b ? " and " : "")
         << (ins.transpose_b ? "b" : "") << " transposed (BLAS flag)";
    }
    if (!ins.layouts.empty()) {
      // Which of a, b and the product a permute's layout replaces.
      const char* names[3] = {"a", "b", "its product"};
      os << ", reads or writes in place through strides:";
      for (size_t i = 0; i < 3; ++i) {
        if (ins.layouts[i].strides != contiguous_strides(ins.layouts[i].shape)) os << " " << names[i];
      }
    }
    os << note << "\n";
  }

  // Where a value the program writes lives, for the listing.
  std::string placement(int slot) const {
    const int64_t at = plan_.offset_of_slot[static_cast<size_t>(slot)];
    if (at < 0) return " as an output";
    const int over = plan_.over[static_cast<size_t>(slot)];
    return " at arena offset " + std::to_string(at) +
           (over >= 0 ? " (in place over %" + std::to_string(over) + ")" : "");
  }

  int64_t peak_bytes() const override { return plan_.arena_bytes + plan_.output_bytes; }

  PlanLayout layout() const {
    PlanLayout out;
    out.arena_bytes = plan_.arena_bytes;
    for (const Instruction& ins : program_) {
      out.reads.push_back(ins.inputs);
      const auto written = written_slots(ins);
      out.writes.emplace_back(written.begin(), written.end());
    }
    for (size_t s = 0; s < slot_specs_.size(); ++s) {
      out.values.push_back({std::max<int64_t>(plan_.offset_of_slot[s], -1), spec_bytes(slot_specs_[s]),
                            plan_.view_of[s], plan_.over[s]});
    }
    return out;
  }
  int64_t executions() const override { return executions_.load(std::memory_order_relaxed); }
  int64_t sampled_executions() const override { return sampled_.load(std::memory_order_relaxed); }

  std::vector<KernelTiming> kernel_profile() const override {
    std::lock_guard lock(mu_);
    std::vector<KernelTiming> out;
    out.reserve(program_.size());
    const int64_t samples = sampled_.load(std::memory_order_relaxed) - dropped_samples_;
    for (size_t pc = 0; pc < program_.size(); ++pc) {
      const Instruction& ins = program_[pc];
      KernelTiming k;
      k.index = static_cast<int>(pc);
      k.name = ins.kind == Kind::kFused || ins.kind == Kind::kFusedGroup ? "fused_elementwise"
               : ins.kind == Kind::kMatmul ? "gemm"  // with its epilogue's nodes, if it has one
                                           : std::string(op_name(ins.op));
      k.nodes = ins.nodes;
      const KernelCost c = cost(ins);
      k.flops = c.flops;
      k.bytes = c.bytes;
      k.samples = samples;
      k.total_ns = pc < state_.timings.size() ? state_.timings[pc] : 0;
      k.code = fused_code(ins);
      out.push_back(std::move(k));
    }
    return out;
  }

 private:
  struct State {
    BufferPtr arena;               // the block
    std::vector<BufferPtr> views;  // per slot placed in the arena: its view of the block, made once
    std::vector<BufferPtr> slots;
    bool slots_clear = false;  // every slot null: the last execution completed
    std::vector<const Buffer*> inputs;
    std::vector<Buffer*> fused_out;
    // Per member of a kFusedGroup or epilogue: its operands and outputs
    // (kept, so a warm step allocates nothing).
    std::vector<std::vector<const Buffer*>> member_inputs;
    std::vector<std::vector<Buffer*>> member_outputs;
    std::vector<int64_t> timings;                    // per instruction, summed over sampled executions
    bool timing = false;                             // this execution is sampled
    int64_t untimed = 0;                             // ns of the current instruction not its kernel's (see fresh())
    std::array<std::vector<BufferPtr>, 2> returned;  // the outputs of the last two executions
    uint64_t generation = 0;
    std::vector<std::pair<int, BufferPtr>> donated;  // this execution: output slot, the parameter buffer it takes
  };

  // The parameters' buffers this execution may write outputs over: a
  // planned donation whose parameter the caller vouches for (its value dies
  // with the step) and whose buffer nobody else holds: the caller's
  // references, plus the copies this executable keeps of its past outputs.
  // Counted before the parameters are bound to slots.
  void take_donations(State& st, std::span<const BufferPtr> parameters, std::span<const int> donor_refs) const {
    st.donated.clear();
    if (donor_refs.size() != parameters.size()) return;
    for (const Donation& d : donations_) {
      const auto i = static_cast<size_t>(d.parameter);
      const BufferPtr& b = parameters[i];
      if (donor_refs[i] <= 0 || !b || b->dtype() != parameter_dtypes_[i]) continue;
      const bool taken = std::any_of(st.donated.begin(), st.donated.end(),
                                     [&](const auto& o) { return o.first == d.output || o.second == b; });
      if (taken) continue;
      long kept = 0;
      for (const auto& list : st.returned) kept += std::count(list.begin(), list.end(), b);
      if (b.use_count() != donor_refs[i] + kept) continue;
      st.donated.emplace_back(d.output, b);
    }
    if (!st.donated.empty()) donated_counter()->add(static_cast<int64_t>(st.donated.size()));
  }

  KernelCost cost(const Instruction& ins) const {
    std::vector<const TensorSpec*> inputs;
    for (int slot : ins.inputs) inputs.push_back(&slot_specs_[static_cast<size_t>(slot)]);
    // A strided matmul's operands and product as it sees them, not as the
    // buffers it reads are shaped.
    TensorSpec seen[3];
    if (!ins.layouts.empty()) {
      for (size_t i = 0; i < 3; ++i) seen[i] = {ins.layouts[i].shape, ins.spec.dtype};
      inputs[0] = &seen[0];
      inputs[1] = &seen[1];
    }
    const TensorSpec& product = ins.layouts.empty() ? ins.spec : seen[2];
    // A matmul reading its left operand through the transpose flag holds the
    // untransposed spec: the cost rule wants [..., m, k].
    TensorSpec transposed_a;
    if (ins.transpose_a && !inputs.empty() && inputs[0]->shape.size() >= 2) {
      transposed_a = *inputs[0];
      std::swap(transposed_a.shape[transposed_a.shape.size() - 1], transposed_a.shape[transposed_a.shape.size() - 2]);
      inputs[0] = &transposed_a;
    }
    if (ins.kind == Kind::kFusedGroup) {
      KernelCost sum;
      for (const Instruction& member : ins.members) {
        const KernelCost c = cost(member);
        sum.flops += c.flops;
        sum.bytes += c.bytes;
      }
      return sum;
    }
    if (ins.stacked) {
      // The operands as stored ([..., K] and [..., N]), not as transposed above.
      KernelCost c;
      const TensorSpec& a_spec = slot_specs_[static_cast<size_t>(ins.inputs[0])];
      c.bytes = spec_bytes(a_spec) + spec_bytes(slot_specs_[static_cast<size_t>(ins.inputs[1])]) + spec_bytes(ins.spec);
      const Shape& a = a_spec.shape;
      c.flops = a.empty() || a.back() == 0 ? 0 : 2 * numel(ins.spec.shape) * (numel(a) / a.back());
      if (!ins.members.empty()) {  // its epilogue, as below
        const KernelCost epi = cost(ins.members[0]);
        c.flops += epi.flops;
        c.bytes += epi.bytes - spec_bytes(ins.spec);
      }
      return c;
    }
    if (ins.kind == Kind::kMatmul && !ins.members.empty()) {
      inputs.resize(2);  // the epilogue's operands are its own
      KernelCost c = estimate(ins.op, inputs, product), epi = cost(ins.members[0]);
      // The product is written once and read back from cache, not memory.
      c.flops += epi.flops;
      c.bytes += epi.bytes - spec_bytes(ins.spec);
      return c;
    }
    if (ins.kind == Kind::kView) return {};  // no kernel, no bytes
    if (ins.kind != Kind::kFused) return estimate(ins.op, inputs, product);
    // Reads each input once, writes each materialized value once.
    KernelCost c;
    for (const TensorSpec* in : inputs) c.bytes += spec_bytes(*in);
    for (int slot : ins.outputs) c.bytes += spec_bytes(slot_specs_[static_cast<size_t>(slot)]);
    c.flops = static_cast<int64_t>(ins.fused->step_count()) * numel(ins.spec.shape);
    return c;
  }

  // Buffers of each member of `ins` (its output slots set in st.slots).
  void prepare_members(State& st, const Instruction& ins) const {
    if (st.member_inputs.size() < ins.members.size()) {
      st.member_inputs.resize(ins.members.size());
      st.member_outputs.resize(ins.members.size());
    }
    for (size_t m = 0; m < ins.members.size(); ++m) {
      const Instruction& member = ins.members[m];
      auto& outs = st.member_outputs[m];
      outs.clear();
      for (int slot : member.outputs) {
        st.slots[static_cast<size_t>(slot)] = slot_buffer(st, slot);
        outs.push_back(st.slots[static_cast<size_t>(slot)].get());
      }
    }
    // Inputs after every output: no member reads another's (compile checks).
    for (size_t m = 0; m < ins.members.size(); ++m) {
      auto& in = st.member_inputs[m];
      in.clear();
      for (int slot : ins.members[m].inputs) in.push_back(st.slots[static_cast<size_t>(slot)].get());
    }
  }

  // Independent fused kernels in one parallel region: their elements are
  // laid end to end and split across the pool like one kernel's, so a dozen
  // small parameter updates cost one wake-up and keep both cores busy.
  void run_group(State& st, const Instruction& ins) const {
    prepare_members(st, ins);
    int64_t total = 0;
    for (const Instruction& member : ins.members) total += member.fused->element_count();
    parallel_for(total, 4 * FusedKernel::kTile, [&](int64_t begin, int64_t end) {
      int64_t offset = 0;
      for (size_t m = 0; m < ins.members.size() && offset < end; ++m) {
        const FusedKernel& k = *ins.members[m].fused;
        const int64_t lo = std::max(begin, offset), hi = std::min(end, offset + k.element_count());
        if (lo < hi) k.run_range(st.member_inputs[m], st.member_outputs[m], bf16_, lo - offset, hi - offset);
        offset += k.element_count();
      }
    });
  }

  // The buffer of a value the program computes: its view of the arena
  // (the block allocated on first use, each view made once), or an output
  // buffer.
  BufferPtr slot_buffer(State& st, int slot) const {
    const int64_t where = plan_.offset_of_slot[static_cast<size_t>(slot)];
    if (where < 0) {
      for (auto& [output, buffer] : st.donated) {
        if (output == slot && buffer) return std::move(buffer);
      }
      return output_buffer(st, slot_specs_[static_cast<size_t>(slot)]);
    }
    BufferPtr& v = st.views[static_cast<size_t>(slot)];
    if (!v) {
      if (!st.arena) st.arena = fresh(st, DType::kUInt8, {plan_.arena_bytes});
      const TensorSpec& spec = slot_specs_[static_cast<size_t>(slot)];
      v = Buffer::view(st.arena, static_cast<size_t>(where), spec.dtype, spec.shape);
    }
    return v;
  }

  // A new buffer. On a timed execution its pages are touched here and the
  // time set aside (st.untimed): a kernel's profile is its own work, not
  // the page faults of the step's first executions (they made a 784x512
  // SGD update look 5x slower than it runs once warm).
  static BufferPtr fresh(State& st, DType dtype, const Shape& shape) {
    if (!st.timing) return allocate_counted(dtype, shape);
    const int64_t t0 = events::now_ns();
    BufferPtr b = allocate_counted(dtype, shape);
    if (b->bytes()) std::memset(b->data(), 0, b->bytes());
    st.untimed += events::now_ns() - t0;
    return b;
  }

  // An output buffer: one this program returned before and whose every user
  // has let go (a training step's old weights, once the new ones replaced
  // them), else a fresh one.
  static BufferPtr output_buffer(State& st, const TensorSpec& spec) {
    for (auto& list : st.returned) {
      for (BufferPtr& b : list) {
        if (b && b.use_count() == 1 && b->dtype() == spec.dtype && b->shape() == spec.shape) {
          BufferPtr mine = std::move(b);
          b = nullptr;
          return mine;
        }
      }
    }
    return fresh(st, spec.dtype, spec.shape);
  }

  static bool stored_as_bf16(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }

  static BufferPtr converted(const Buffer& src, DType dtype) {
    BufferPtr out = allocate_counted(dtype, src.shape());
    const Buffer* in = &src;
    find_kernel(OpKind::kCast, dtype)(KernelArgs{std::span<const Buffer* const>(&in, 1), *out, Attrs{}});
    return out;
  }

  static void round_to_bf16(Buffer& b) {
    const auto round = [](float v) { return bfloat16_to_float(float_to_bfloat16(v)); };
    if (b.dtype() == DType::kFloat32) {
      float* p = b.as<float>();
      for (int64_t i = 0; i < b.numel(); ++i) p[i] = round(p[i]);
    } else {
      double* p = b.as<double>();
      for (int64_t i = 0; i < b.numel(); ++i) p[i] = round(static_cast<float>(p[i]));
    }
  }

  int slot_count_;
  std::vector<int> touched_slots_;  // parameters' and every instruction's output slots, each once
  std::vector<int> parameter_slots_;
  std::vector<DType> parameter_dtypes_;  // what the kernels read: the leaves' reported dtypes
  std::vector<Instruction> program_;
  std::vector<int> output_slots_;
  bool bf16_;
  std::vector<TensorSpec> slot_specs_;  // per slot: what its value holds, for the cost estimates
  MemoryPlan plan_;
  std::vector<Donation> donations_;
  mutable std::mutex mu_;  // guards state_ and compiling_
  State state_;
  // Fused kernels still compiling in the background (FusedKernel::adopt).
  std::vector<const FusedKernel*> compiling_;

  // Switches the fused kernels whose background compile is done to their
  // compiled code, before this execution runs any: only by the execution
  // holding the lock. Replicas on threads running the program at that
  // moment on buffers of their own may see the switch within a kernel:
  // both codes compute the same values (bit for bit but for transcendental
  // rows, within libmvec's ulps).
  // Returns whether one switched.
  bool adopt_compiled(bool own) {
    if (!own || compiling_.empty()) return false;
    bool switched = false;
    std::erase_if(compiling_, [&](const FusedKernel* k) {
      if (k->adopt()) return false;
      switched |= k->is_compiled();
      return true;
    });
    return switched;
  }

  // How a fused kernel (or a group of them) runs now, for the profile:
  // "<isa> tiles" or "<isa> compiled", "<isa> compiled+tiles" for a group
  // whose members differ; empty for a library kernel.
  static std::string fused_code(const Instruction& ins) {
    if (ins.kind == Kind::kFused) return ins.fused->code();
    if (ins.kind != Kind::kFusedGroup || ins.members.empty()) return {};
    bool compiled = false, tiles = false;
    for (const Instruction& m : ins.members) (m.fused->is_compiled() ? compiled : tiles) = true;
    const std::string isa = fused_isa();
    return isa + (compiled && tiles ? " compiled+tiles" : compiled ? " compiled" : " tiles");
  }
  std::atomic<int64_t> executions_{0}, sampled_{0};
  // Under mu_: the timings are the first execution's alone, and how many
  // sampled executions their reset dropped.
  bool first_only_ = false;
  int64_t dropped_samples_ = 0;
};

// Whether `sum` (a node reading mm's product) sums mm = a_i^T b_i over its
// one batch dim, a and b batched alike (no broadcast): a stacked-rows GEMM.
bool sums_a_batch_of_products(const GraphView& graph, const struct Instruction& mm, const Node& sum);

// Whether `node` swaps the last two dims and keeps the others in place: a
// transpose a matmul can read through a BLAS flag.
bool is_last_two_transpose(const Node& node) {
  if (node.op() != OpKind::kPermute) return false;
  const auto& dims = node.attrs().get_ints("dims");
  const auto rank = static_cast<int64_t>(dims.size());
  if (rank < 2) return false;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = dims[static_cast<size_t>(i)] < 0 ? dims[static_cast<size_t>(i)] + rank
                                                       : dims[static_cast<size_t>(i)];
    const int64_t want = i == rank - 2 ? rank - 1 : (i == rank - 1 ? rank - 2 : i);
    if (d != want) return false;
  }
  return true;
}

// Whether layout ops fold into their neighbours (LAZYSCOPE_FOLD_LAYOUTS,
// default 1): matmuls read and write permutes in place, slice gradients
// summed are one cat. 0 runs them as before: for benchmarks/xfmr_kernels.py's
// A/B and as a way out.
bool fold_layouts() {
  static const bool on = [] {
    const char* env = std::getenv("LAZYSCOPE_FOLD_LAYOUTS");
    return !env || std::string_view(env) != "0";
  }();
  return on;
}

bool same_attrs(const Attrs& a, const Attrs& b) {
  return std::equal(
      a.items().begin(), a.items().end(), b.items().begin(), b.items().end(),
      [](const Attr& x, const Attr& y) { return std::strcmp(x.name, y.name) == 0 && x.value == y.value; });
}

// Where each element of permute(x, dims) lies in x's contiguous buffer:
// the permute's strides, per dim of its output.
std::vector<int64_t> permuted_strides(const Node& permute, const Shape& input) {
  const auto& dims = permute.attrs().get_ints("dims");
  const auto own = contiguous_strides(input);
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(own[static_cast<size_t>(d < 0 ? d + static_cast<int64_t>(input.size()) : d)]);
  return out;
}

// A matrix batch of `shape` with `strides` as matmul_strided reads it: rows
// contiguous (the last stride 1), else columns (then stored transposed:
// the last two dims swapped and `flip` set); nullopt when neither.
std::optional<MatrixLayout> matrix_layout(Shape shape, std::vector<int64_t> strides, bool& flip) {
  const size_t r = shape.size();
  flip = false;
  if (r < 3 || strides.size() != r) return std::nullopt;
  if (strides[r - 1] != 1 || shape[r - 1] == 1) {
    if (strides[r - 2] != 1) return std::nullopt;
    std::swap(shape[r - 1], shape[r - 2]);
    std::swap(strides[r - 1], strides[r - 2]);
    flip = true;
  }
  // A single row's stride steps nowhere, and a size-1 dim of a permute can
  // have any stride (1, say), but BLAS refuses a leading dimension below the
  // row's length ("DGEMM parameter number 10 had an illegal value" for a
  // [.., 1, 7] product written through a permute): give it the row's length.
  if (shape[r - 2] == 1) strides[r - 2] = std::max({strides[r - 2], shape[r - 1], int64_t{1}});
  return MatrixLayout{std::move(shape), std::move(strides)};
}

// The matmul's operands and product as contiguous layouts of their stored
// shapes, before one of them is made strided.
void contiguous_layouts(Instruction& mm, const GraphView& graph) {
  if (!mm.layouts.empty()) return;
  for (int side = 0; side < 2; ++side) {
    const Shape& s = graph.nodes[static_cast<size_t>(mm.inputs[static_cast<size_t>(side)])]->spec().shape;
    mm.layouts.push_back({s, contiguous_strides(s)});
  }
  mm.layouts.push_back({mm.spec.shape, contiguous_strides(mm.spec.shape)});
}

// Whether each operand, as the matmul stores it, has the product's batch
// dims: matmul_strided broadcasts none, so a [B, H, S, D] @ [D, E] (a 2-d
// weight) or a [1, H, S, D] @ [B, H, D, T] cannot have its product written
// through a permute's strides (it threw "strided operands ... do not
// make"). Strided operands were checked when they were made strided.
bool batches_as_product(const Instruction& mm, const GraphView& graph) {
  if (!mm.layouts.empty()) return true;
  const Shape& out = mm.spec.shape;
  for (int side = 0; side < 2; ++side) {
    const Shape& s = graph.nodes[static_cast<size_t>(mm.inputs[static_cast<size_t>(side)])]->spec().shape;
    if (s.size() != out.size() || !std::equal(s.begin(), s.end() - 2, out.begin())) return false;
  }
  return true;
}

bool contiguous_product(const Instruction& mm) {
  return mm.layouts.empty() || mm.layouts[2].strides == contiguous_strides(mm.layouts[2].shape);
}

bool sums_a_batch_of_products(const GraphView& graph, const Instruction& mm, const Node& sum) {
  if (mm.stacked || !mm.transpose_a || mm.transpose_b || mm.spec.shape.size() != 3) return false;
  if (mm.spec.dtype != DType::kFloat32 && mm.spec.dtype != DType::kFloat64) return false;
  const Shape& a = graph.nodes[static_cast<size_t>(mm.inputs[0])]->spec().shape;
  const Shape& b = graph.nodes[static_cast<size_t>(mm.inputs[1])]->spec().shape;
  if (a.size() != 3 || b.size() != 3 || a[0] != b[0] || a[1] != b[1]) return false;
  const auto& dims = sum.attrs().get_ints("dims");
  return dims.size() == 1 && (dims[0] == 0 || dims[0] == -3) && sum.dtype() == mm.spec.dtype;
}

std::span<const int> written_slots(const Instruction& ins) {
  return ins.outputs.empty() ? std::span<const int>(&ins.output, 1) : std::span<const int>(ins.outputs);
}

// Fuses runs of elementwise instructions of one shape into FusedKernels. A
// group stays open across instructions that do not read it (they run
// first: they cannot depend on the group, which is later in post-order);
// an instruction reading a group value closes it, so the fused kernel runs
// before its first outside reader. Values read outside the group, or
// returned, are written; the others live only in tiles.
std::vector<Instruction> fuse_elementwise(std::vector<Instruction> program, const GraphView& graph,
                                          const std::vector<char>& is_output) {
  const size_t n = graph.nodes.size();
  std::vector<int> row(program.size(), -1);
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction& ins = program[i];
    if (ins.kind != Kind::kKernel) continue;
    std::vector<DType> operand_dtypes;
    for (int s : ins.inputs) operand_dtypes.push_back(graph.nodes[static_cast<size_t>(s)]->dtype());
    row[i] = fused_row(ins.op, ins.spec.dtype, operand_dtypes);
  }
  // Pass 1: the order of entries, each one instruction or a group.
  std::vector<std::vector<size_t>> entries;
  std::vector<int> group_of(n, -1);  // slot -> entry index of its group
  int open = -1;
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction& ins = program[i];
    const bool reads_open = open >= 0 && std::any_of(ins.inputs.begin(), ins.inputs.end(),
                                                     [&](int s) { return group_of[static_cast<size_t>(s)] == open; });
    if (row[i] >= 0 && open >= 0 && ins.spec.shape == program[entries[static_cast<size_t>(open)][0]].spec.shape) {
      entries[static_cast<size_t>(open)].push_back(i);
      group_of[static_cast<size_t>(ins.output)] = open;
      continue;
    }
    if (row[i] >= 0) {
      open = static_cast<int>(entries.size());
      entries.push_back({i});
      group_of[static_cast<size_t>(ins.output)] = open;
      continue;
    }
    if (reads_open) open = -1;
    // Placed before the open group, which is emitted at its own position
    // in `entries` — so move the group after this instruction.
    if (open >= 0) {
      entries.insert(entries.begin() + open, {i});
      for (int& g : group_of) {
        if (g >= open) ++g;
      }
      ++open;
    } else {
      entries.push_back({i});
    }
  }
  // Pass 2: which group values are read outside their group.
  std::vector<char> read_outside(n, 0);
  for (size_t e = 0; e < entries.size(); ++e) {
    for (size_t i : entries[e]) {
      for (int s : program[i].inputs) {
        if (group_of[static_cast<size_t>(s)] != static_cast<int>(e)) read_outside[static_cast<size_t>(s)] = 1;
      }
    }
  }
  std::vector<Instruction> out;
  out.reserve(entries.size());
  for (size_t e = 0; e < entries.size(); ++e) {
    const std::vector<size_t>& members = entries[e];
    // A lone op without a row stays a table kernel; one with a row runs as
    // a one-step fused kernel all the same: vectorised and threaded, where
    // the table's kernels are scalar loops.
    if (members.size() == 1 && row[members[0]] < 0) {
      out.push_back(std::move(program[members[0]]));
      continue;
    }
    const Shape& shape = program[members[0]].spec.shape;
    std::vector<FusedKernel::Input> inputs;
    std::vector<int> input_slots;
    std::vector<int> value_of(n, -1);  // slot -> value id inside the kernel
    std::vector<FusedKernel::Step> steps;
    std::vector<int> output_slots, output_steps;
    std::vector<DType> output_dtypes;
    for (size_t i : members) {
      for (int s : program[i].inputs) {
        if (group_of[static_cast<size_t>(s)] == static_cast<int>(e) || value_of[static_cast<size_t>(s)] >= 0) continue;
        value_of[static_cast<size_t>(s)] = static_cast<int>(inputs.size());
        inputs.push_back(
            {graph.nodes[static_cast<size_t>(s)]->dtype(), graph.nodes[static_cast<size_t>(s)]->spec().shape});
        input_slots.push_back(s);
      }
    }
    // Value ids of steps follow the inputs: fix them after all inputs are known.
    const int ni = static_cast<int>(inputs.size());
    Instruction fused;
    fused.kind = Kind::kFused;
    fused.inputs = input_slots;
    for (size_t k = 0; k < members.size(); ++k) {
      const Instruction& ins = program[members[k]];
      FusedKernel::Step st{row[members[k]], ins.op, {-1, -1, -1}};
      for (size_t a = 0; a < ins.inputs.size() && a < 3; ++a) st.args[a] = value_of[static_cast<size_t>(ins.inputs[a])];
      // The row's parameters, looked up by name once here, not on every run.
      if (ins.op == OpKind::kLeakyRelu) st.p0 = ins.attrs.get_double("negative_slope");
      if (ins.op == OpKind::kSoftplus) {
        st.p0 = ins.attrs.get_double("beta");
        st.p1 = ins.attrs.get_double("threshold");
      }
      if (ins.op == OpKind::kClamp) {
        st.p0 = ins.attrs.get_double("min");
        st.p1 = ins.attrs.get_double("max");
      }
      const auto slot = static_cast<size_t>(ins.output);
      value_of[slot] = ni + static_cast<int>(k);
      if (read_outside[slot] || is_output[slot] || k + 1 == members.size()) {
        st.output = static_cast<int>(output_slots.size());
        output_slots.push_back(ins.output);
        output_steps.push_back(static_cast<int>(k));
        output_dtypes.push_back(ins.spec.dtype);
      }
      steps.push_back(st);
      fused.nodes.push_back(ins.output);
    }
    const int first = output_slots.empty() ? program[members.back()].output : output_slots.front();
    fused.output = first;
    fused.spec = graph.nodes[static_cast<size_t>(first)]->spec();
    // Named after its first op for errors: every member has the kernel's
    // shape, and the first one made it (an expand whose result cannot be
    // allocated is the expand's failure).
    fused.op = program[members.front()].op;
    fused.outputs = output_slots;
    fused.fused = std::make_shared<const FusedKernel>(shape, std::move(inputs), std::move(steps),
                                                      std::move(output_steps), std::move(output_dtypes));
    out.push_back(std::move(fused));
  }
  return out;
}

// Whether a fused kernel only sums its inputs, each once, into its one
// output: a tree of adds.
bool sums_its_inputs(const FusedKernel& f, const std::vector<int>& outputs) {
  const size_t ni = f.input_count(), steps = f.step_count();
  if (ni < 2 || steps != ni - 1 || outputs.size() != 1 || f.step(steps - 1).output != 0) return false;
  std::vector<int> uses(ni + steps, 0);
  for (size_t i = 0; i < steps; ++i) {
    const FusedKernel::Step& st = f.step(i);
    if (st.op != OpKind::kAdd || (i + 1 < steps && st.output >= 0)) return false;
    for (int a = 0; a < 2; ++a) {
      if (st.args[a] < 0 || static_cast<size_t>(st.args[a]) >= ni + i) return false;
      ++uses[static_cast<size_t>(st.args[a])];
    }
  }
  return std::all_of(uses.begin(), uses.end() - 1, [](int u) { return u == 1; });
}

// The sum of slice gradients that tile their output along one dim without
// overlap (the q, k and v projections' gradients of an attention's packed
// in_proj weight and bias: three slice_backwards, each a zero fill and a
// copy, then an add of the three) is the concatenation of the slices'
// gradients: one cat kernel, each value copied once, no zeros written or
// read. The slice_backwards then have no reader and are dropped.
// A layer norm's input gradient added to another gradient of the same
// input (the residual stream's: x + f(layer_norm(x)) in a pre-norm block)
// is one more pass over both; the add, a fused kernel of that one op whose
// other operand is there before the layer_norm_backward, becomes that
// kernel's last operand, added to each row as the kernel writes it.
bool same_spec(const TensorSpec& a, const TensorSpec& b) { return a.shape == b.shape && a.dtype == b.dtype; }

std::vector<Instruction> fold_residual_into_layer_norm_backward(std::vector<Instruction> program,
                                                                const GraphView& graph,
                                                                const std::vector<char>& is_output) {
  std::map<int, int> readers, producer;
  for (size_t i = 0; i < program.size(); ++i) {
    for (int s : program[i].inputs) ++readers[s];
    for (int s : written_slots(program[i])) producer[s] = static_cast<int>(i);
  }
  std::vector<char> dropped(program.size(), 0);
  for (size_t j = 0; j < program.size(); ++j) {
    Instruction& add = program[j];
    if (add.kind != Kind::kFused || add.fused->step_count() != 1 || add.fused->step_op(0) != OpKind::kAdd ||
        add.inputs.size() != 2 || add.outputs.size() > 1) {
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      const int from = add.inputs[static_cast<size_t>(side)], other = add.inputs[static_cast<size_t>(1 - side)];
      const auto p = producer.find(from);
      if (p == producer.end() || readers[from] != 1 || is_output[static_cast<size_t>(from)]) continue;
      Instruction& ln = program[static_cast<size_t>(p->second)];
      const auto q = producer.find(other);
      const bool ready = q == producer.end() || q->second < p->second;  // a parameter, or made before
      if (ln.kind != Kind::kKernel || ln.op != OpKind::kLayerNormBackward || !ready || !same_spec(ln.spec, add.spec) ||
          !same_spec(graph.nodes[static_cast<size_t>(other)]->spec(), add.spec) ||
          ln.inputs.size() != (ln.attrs.get_bool("weight") ? 3u : 2u)) {
        continue;
      }
      ln.inputs.push_back(other);
      ln.output = add.output;
      ln.nodes.insert(ln.nodes.end(), add.nodes.begin(), add.nodes.end());
      dropped[j] = 1;
      break;
    }
  }
  std::vector<Instruction> kept;
  kept.reserve(program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    if (!dropped[i]) kept.push_back(std::move(program[i]));
  }
  return kept;
}

std::vector<Instruction> concat_slice_gradients(std::vector<Instruction> program, const GraphView& graph,
                                                const std::vector<char>& is_output) {
  std::map<int, int> writer, readers;
  for (size_t i = 0; i < program.size(); ++i) {
    writer[program[i].output] = static_cast<int>(i);
    for (int s : program[i].inputs) ++readers[s];
  }
  std::vector<char> dropped(program.size(), 0);
  for (Instruction& ins : program) {
    if (ins.kind != Kind::kFused || !sums_its_inputs(*ins.fused, ins.outputs)) continue;
    struct Part {
      int64_t start, end;
      size_t at;
    };
    // The terms summed: through sums read only by this one (gradients
    // accumulated as they arrive can be split across fused kernels).
    std::vector<int> terms;
    std::vector<size_t> inner_sums;
    const std::function<void(int)> gather = [&](int slot) {
      const auto w = writer.find(slot);
      if (w != writer.end() && readers[slot] == 1 && !is_output[static_cast<size_t>(slot)]) {
        const Instruction& in = program[static_cast<size_t>(w->second)];
        if (in.kind == Kind::kFused && in.spec.shape == ins.spec.shape && sums_its_inputs(*in.fused, in.outputs)) {
          inner_sums.push_back(static_cast<size_t>(w->second));
          for (int s : in.inputs) gather(s);
          return;
        }
      }
      terms.push_back(slot);
    };
    for (int s : ins.inputs) gather(s);
    std::vector<Part> parts;
    int64_t dim = -1;
    bool ok = true;
    for (int s : terms) {
      const auto w = writer.find(s);
      ok = w != writer.end() && readers[s] == 1 && !is_output[static_cast<size_t>(s)];
      const Instruction* sb = ok ? &program[static_cast<size_t>(w->second)] : nullptr;
      ok = ok && sb->kind == Kind::kKernel && sb->op == OpKind::kSliceBackward && sb->spec.shape == ins.spec.shape &&
           sb->spec.dtype == ins.spec.dtype;
      if (!ok) break;
      const auto& starts = sb->attrs.get_ints("starts");
      const auto& ends = sb->attrs.get_ints("ends");
      const auto& steps = sb->attrs.get_ints("steps");
      for (size_t d = 0; ok && d < starts.size(); ++d) {
        if (steps[d] != 1) ok = false;
        if (starts[d] == 0 && ends[d] == ins.spec.shape[d]) continue;
        ok = ok && (dim < 0 || dim == static_cast<int64_t>(d));
        dim = static_cast<int64_t>(d);
      }
      if (!ok || dim < 0) break;
      parts.push_back(
          {starts[static_cast<size_t>(dim)], ends[static_cast<size_t>(dim)], static_cast<size_t>(w->second)});
    }
    if (!ok || dim < 0 || parts.size() != terms.size()) continue;
    std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.start < b.start; });
    int64_t next = 0;  // where the next part must start: no gap, no overlap
    for (const Part& p : parts) {
      ok = ok && p.start == next && p.end > p.start;
      next = p.end;
    }
    if (!ok || next != ins.spec.shape[static_cast<size_t>(dim)]) continue;
    Instruction cat;
    cat.kind = Kind::kKernel;
    cat.op = OpKind::kCat;
    cat.kernel = find_kernel(OpKind::kCat, ins.spec.dtype);
    if (!cat.kernel) continue;
    cat.output = ins.output;
    cat.outputs = {};
    cat.spec = ins.spec;
    cat.attrs = Attrs{{"dim", dim}};
    for (const Part& p : parts) {
      const Instruction& sb = program[p.at];
      cat.inputs.push_back(sb.inputs[0]);
      cat.nodes.insert(cat.nodes.end(), sb.nodes.begin(), sb.nodes.end());
      dropped[p.at] = 1;
    }
    for (size_t at : inner_sums) {
      cat.nodes.insert(cat.nodes.end(), program[at].nodes.begin(), program[at].nodes.end());
      dropped[at] = 1;
    }
    cat.nodes.insert(cat.nodes.end(), ins.nodes.begin(), ins.nodes.end());
    ins = std::move(cat);
  }
  std::vector<Instruction> kept;
  kept.reserve(program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    if (!dropped[i]) kept.push_back(std::move(program[i]));
  }
  return kept;
}

// A fused elementwise kernel that alone reads a matmul's product (a linear
// layer's bias + activation, the activation's backward mask, a parameter's
// SGD update reading its weight gradient) becomes the matmul's epilogue:
// applied to each part of the product as soon as the GEMM has written it,
// while it is in cache, instead of one more pass over memory and one more
// parallel region. The fused kernel need not follow the matmul: it moves up
// to it when none of its other operands is computed in between (an
// optimizer update reads parameters and its state, all there from the
// start). But when an instruction in between reads a parameter the fused
// kernel reads (the backward's dy @ w reading the w a weight's update
// overwrites), the matmul moves down to the fused kernel instead: its
// operands are all computed by then, and the update, now the parameter's
// last reader, may write the new value over the old (buffer donation,
// plan_donations). The product is still written (it may be returned: a
// gradient). Not in bf16 mode, where every product is rounded before it is
// read.
// The instructions between program[i] (a matmul) and program[j] (its
// product's reader) that write an operand of program[j], when every one of
// them is a pure layout kernel whose own operands were all there before
// program[i] (so it may run before the matmul instead); empty otherwise.
std::vector<size_t> hoistable_producers(const std::vector<Instruction>& program, const std::vector<char>& taken,
                                        size_t i, size_t j) {
  static constexpr OpKind kPure[] = {OpKind::kSlice, OpKind::kReshape, OpKind::kExpand, OpKind::kPermute};
  const Instruction& reader = program[j];
  std::vector<int> written;  // by instructions in [i, k)
  for (int w : written_slots(program[i])) written.push_back(w);
  std::vector<size_t> hoisted;
  const auto was_written = [&](int slot) { return std::find(written.begin(), written.end(), slot) != written.end(); };
  for (size_t k = i + 1; k < j; ++k) {
    const Instruction& between = program[k];
    const auto writes = written_slots(between);
    const bool feeds = std::any_of(writes.begin(), writes.end(), [&](int w) {
      return std::find(reader.inputs.begin(), reader.inputs.end(), w) != reader.inputs.end();
    });
    if (feeds) {
      const bool pure = between.kind == Kind::kKernel && !taken[k] &&
                        std::find(std::begin(kPure), std::end(kPure), between.op) != std::end(kPure);
      if (!pure || std::any_of(between.inputs.begin(), between.inputs.end(), was_written)) return {};
      hoisted.push_back(k);
      continue;  // runs before program[i]: what it writes is no longer written in between
    }
    written.insert(written.end(), writes.begin(), writes.end());
  }
  return hoisted;
}

std::vector<Instruction> attach_epilogues(std::vector<Instruction> program, const std::vector<char>& is_parameter,
                                          bool bf16) {
  if (bf16) return program;
  std::map<int, int> readers;
  for (const Instruction& ins : program) {
    for (int s : ins.inputs) ++readers[s];
  }
  std::vector<char> taken(program.size(), 0);  // moved into an earlier matmul
  std::vector<Instruction> out;
  out.reserve(program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    if (taken[i]) continue;
    Instruction& ins = program[i];
    bool moved_down = false;
    if (ins.kind == Kind::kMatmul && ins.members.empty() && ins.spec.dtype == DType::kFloat32 &&
        readers[ins.output] == 1 && contiguous_product(ins)) {
      // The one reader of the product, and whether it can run right here.
      std::vector<int> written_between;
      for (size_t j = i + 1; j < program.size(); ++j) {
        Instruction& next = program[j];
        const bool reads = std::find(next.inputs.begin(), next.inputs.end(), ins.output) != next.inputs.end();
        if (!reads) {
          for (int w : written_slots(next)) written_between.push_back(w);
          continue;
        }
        const bool ready = std::none_of(next.inputs.begin(), next.inputs.end(), [&](int in) {
          return std::find(written_between.begin(), written_between.end(), in) != written_between.end();
        });
        const bool late = std::any_of(
            program.begin() + static_cast<std::ptrdiff_t>(i) + 1, program.begin() + static_cast<std::ptrdiff_t>(j),
            [&](const Instruction& between) {
              return std::any_of(between.inputs.begin(), between.inputs.end(), [&](int in) {
                return is_parameter[static_cast<size_t>(in)] &&
                       std::find(next.inputs.begin(), next.inputs.end(), in) != next.inputs.end();
              });
            });
        // Not ready only because a layout op in between makes one of its
        // other operands from values there before the matmul (a slice of a
        // packed bias: the attention's q/k/v projections): that op moves
        // up, above the matmul, and the fused kernel becomes the epilogue.
        std::vector<size_t> hoisted;
        if (!ready && !late && !taken[j] && next.kind == Kind::kFused && next.fused->shape() == ins.spec.shape) {
          hoisted = hoistable_producers(program, taken, i, j);
        }
        const bool hoist = !hoisted.empty();
        if (!taken[j] && next.kind == Kind::kFused && next.fused->shape() == ins.spec.shape &&
            (ready || late || hoist)) {
          for (size_t k : hoisted) {
            out.push_back(std::move(program[k]));
            taken[k] = 1;
          }
          ins.outputs = {ins.output};
          ins.outputs.insert(ins.outputs.end(), next.outputs.begin(), next.outputs.end());
          ins.inputs.insert(ins.inputs.end(), next.inputs.begin(), next.inputs.end());  // for the memory plan
          ins.nodes.insert(ins.nodes.end(), next.nodes.begin(), next.nodes.end());
          ins.members.push_back(std::move(next));
          if (late) {
            next = std::move(ins);  // runs at the fused kernel's place
            moved_down = true;
          } else {
            taken[j] = 1;
          }
        }
        break;
      }
    }
    if (!moved_down) out.push_back(std::move(ins));
  }
  return out;
}

// Runs of consecutive fused kernels of which none reads another's values
// become one kFusedGroup: one parallel region for all of them.
std::vector<Instruction> group_independent_fused(std::vector<Instruction> program) {
  std::vector<Instruction> out;
  out.reserve(program.size());
  std::vector<Instruction> run;
  std::vector<int> written;
  const auto flush = [&] {
    if (run.size() == 1) {
      out.push_back(std::move(run[0]));
    } else if (run.size() > 1) {
      Instruction group;
      group.kind = Kind::kFusedGroup;
      group.op = run[0].op;
      group.output = run[0].output;
      group.spec = run[0].spec;
      for (const Instruction& member : run) {
        group.inputs.insert(group.inputs.end(), member.inputs.begin(), member.inputs.end());
        group.outputs.insert(group.outputs.end(), member.outputs.begin(), member.outputs.end());
        group.nodes.insert(group.nodes.end(), member.nodes.begin(), member.nodes.end());
      }
      group.members = std::move(run);
      out.push_back(std::move(group));
    }
    run.clear();
    written.clear();
  };
  for (Instruction& ins : program) {
    if (ins.kind != Kind::kFused) {
      flush();
      out.push_back(std::move(ins));
      continue;
    }
    const bool depends = std::any_of(ins.inputs.begin(), ins.inputs.end(), [&](int s) {
      return std::find(written.begin(), written.end(), s) != written.end();
    });
    if (depends) flush();
    written.insert(written.end(), ins.outputs.begin(), ins.outputs.end());
    run.push_back(std::move(ins));
  }
  flush();
  return out;
}

// The first byte of a slice of `in` that is one contiguous run of it
// (steps of 1 where more than one element is taken; whole dims after the
// first dim, from the back, that is not whole; one element of each dim
// before it), else -1. Only offsets on a cache line (kArenaAlignment) count:
// every value keeps starting on one.
int64_t contiguous_slice_offset(const Instruction& ins, const TensorSpec& in) {
  const std::vector<int64_t>& starts = ins.attrs.get_ints("starts");
  const std::vector<int64_t>& ends = ins.attrs.get_ints("ends");
  const std::vector<int64_t>& steps = ins.attrs.get_ints("steps");
  const size_t rank = in.shape.size();
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank) return -1;
  int64_t offset = 0, stride = 1;
  bool partial = false;
  for (size_t d = rank; d-- > 0;) {
    if (steps[d] < 1) return -1;
    const int64_t count = (ends[d] - starts[d] + steps[d] - 1) / steps[d];
    if (count < 1 || (count > 1 && steps[d] != 1)) return -1;
    if (partial && count != 1) return -1;
    if (count != in.shape[d]) partial = true;
    offset += starts[d] * stride;
    stride *= in.shape[d];
  }
  const int64_t bytes = offset * static_cast<int64_t>(dtype_size(in.dtype));
  return bytes % kArenaAlignment == 0 ? bytes : -1;
}

// Reshapes and contiguous slices become views (Kind::kView): every value is
// a contiguous row-major buffer, so a reshape of one to a shape of as many
// elements is the same bytes, and such a slice a run of them. Not a
// returned one: an output is a buffer of its own, handed out and recycled
// (a view of the arena could not be).
void mark_views(std::vector<Instruction>& program, const GraphView& graph, const std::vector<char>& is_output) {
  for (Instruction& ins : program) {
    if (ins.kind != Kind::kKernel || ins.inputs.size() != 1 || is_output[static_cast<size_t>(ins.output)]) continue;
    const TensorSpec& in = graph.nodes[static_cast<size_t>(ins.inputs[0])]->spec();
    if (in.dtype != ins.spec.dtype) continue;
    if (ins.op == OpKind::kReshape || (ins.op == OpKind::kSlice && contiguous_slice_offset(ins, in) >= 0)) {
      ins.kind = Kind::kView;
      ins.kernel = nullptr;
    }
  }
}

// The slot whose bytes a value is: through views to the value they lay out.
int view_root(const MemoryPlan& plan, int slot) {
  while (plan.view_of[static_cast<size_t>(slot)] >= 0) slot = plan.view_of[static_cast<size_t>(slot)];
  return slot;
}

// Each fused kernel of `ins` (itself, a member of a multi-tensor group, a
// GEMM's epilogue), for the in-place and donation checks.
template <typename F> void for_each_fused(const Instruction& ins, F&& f) {
  if (ins.kind == Kind::kFused) f(ins);
  if (ins.kind == Kind::kFusedGroup || ins.kind == Kind::kMatmul) {
    for (const Instruction& member : ins.members) {
      if (member.kind == Kind::kFused) f(member);
    }
  }
}

// The memory plan: an offset in one arena block for each value that is
// neither a parameter nor an output. Values that share bytes form a unit: a
// view and the value it lays out; an output of a fused kernel written in
// place over an operand whose every reader (its views' included) is that
// kernel's instruction, which reads each element before writing it
// (FusedKernel::can_write_over_input) and in which nothing else reads the
// operand (a group's other members run at the same time; a GEMM reads its
// operands while earlier parts' epilogues write). A unit lives from the
// instruction writing its first value to the last one reading any of its
// values, both included: no kernel writes over an operand it still reads,
// unless in place. Offsets are assigned greedy by size (the largest unit
// first, each at the best-fitting gap among the units whose lifetimes meet
// its own; TFLite's and XLA's heap simulators do the same): values of any
// shape share bytes once their lifetimes are apart.
MemoryPlan plan_memory(const GraphView& graph, const std::vector<Instruction>& program, bool in_place) {
  const size_t n = graph.nodes.size();
  const auto bytes_of = [&](int slot) { return spec_bytes(graph.nodes[static_cast<size_t>(slot)]->spec()); };
  MemoryPlan plan;
  // Where a value starts in its unit's bytes: a view's offsets, summed.
  const auto within = [&](int slot) {
    int64_t offset = 0;
    for (; plan.view_of[static_cast<size_t>(slot)] >= 0; slot = plan.view_of[static_cast<size_t>(slot)]) {
      offset += plan.view_offset[static_cast<size_t>(slot)];
    }
    return offset;
  };
  plan.offset_of_slot.assign(n, MemoryPlan::kUnused);
  plan.view_of.assign(n, -1);
  plan.view_offset.assign(n, 0);
  plan.over.assign(n, -1);
  std::vector<char> pinned(n, 0);  // per unit: holds a parameter or an output (not in the arena)
  for (int p : graph.parameters) {
    plan.offset_of_slot[static_cast<size_t>(p)] = MemoryPlan::kParameter;
    plan.parameter_bytes += bytes_of(p);
    pinned[static_cast<size_t>(p)] = 1;
  }
  std::vector<char> is_output(n, 0);
  for (int o : graph.outputs) is_output[static_cast<size_t>(o)] = 1;
  std::vector<int> unit(n);  // union-find over slots; a root's entry is itself
  for (size_t s = 0; s < n; ++s) unit[s] = static_cast<int>(s);
  const auto find = [&](int s) {
    while (unit[static_cast<size_t>(s)] != s)
      s = unit[static_cast<size_t>(s)] = unit[static_cast<size_t>(unit[static_cast<size_t>(s)])];
    return s;
  };
  std::vector<int> first(n, -1), last(n, -1);  // per slot: the instruction writing it, the last one reading it
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction& ins = program[i];
    for (int s : ins.inputs) last[static_cast<size_t>(s)] = static_cast<int>(i);
    for (int w : written_slots(ins)) first[static_cast<size_t>(w)] = static_cast<int>(i);
    if (ins.kind == Kind::kView) {
      plan.view_of[static_cast<size_t>(ins.output)] = ins.inputs[0];
      if (ins.op == OpKind::kSlice) {
        plan.view_offset[static_cast<size_t>(ins.output)] = contiguous_slice_offset(
            ins, graph.nodes[static_cast<size_t>(ins.inputs[0])]->spec());
      }
      unit[static_cast<size_t>(ins.output)] = find(ins.inputs[0]);
      ++plan.views;
    }
  }
  // Per unit: its lifetime, and whether it is pinned.
  std::vector<int> begin(n, std::numeric_limits<int>::max()), end(n, -1);
  for (size_t s = 0; s < n; ++s) {
    if (first[s] < 0) continue;
    const auto u = static_cast<size_t>(find(static_cast<int>(s)));
    if (is_output[s]) pinned[u] = 1;
    begin[u] = std::min(begin[u], first[s]);
    end[u] = std::max({end[u], first[s], last[s]});
  }
  // In place: outputs of fused kernels joining their operand's unit.
  std::vector<int> written_over_at(n, -1);  // per unit: the instruction that last wrote over it
  for (size_t i = 0; in_place && i < program.size(); ++i) {
    const Instruction& owner = program[i];
    const int at = static_cast<int>(i);
    for_each_fused(owner, [&](const Instruction& f) {
      for (size_t k = 0; k < f.outputs.size(); ++k) {
        const int out = f.outputs[k];
        if (find(out) != out || pinned[static_cast<size_t>(out)]) continue;
        for (size_t j = 0; j < f.inputs.size(); ++j) {
          const int in = f.inputs[j];
          const auto u = static_cast<size_t>(find(in));
          if (pinned[u] || end[u] != at || written_over_at[u] == at || bytes_of(in) != bytes_of(out) ||
              within(in) != 0) {
            continue;
          }
          const auto same = std::count_if(owner.inputs.begin(), owner.inputs.end(),
                                          [&](int s) { return find(s) == static_cast<int>(u); });
          if (same != 1 || !f.fused->can_write_over_input(j, k)) continue;
          unit[static_cast<size_t>(out)] = static_cast<int>(u);
          end[u] = std::max(end[u], end[static_cast<size_t>(out)]);
          written_over_at[u] = at;
          plan.over[static_cast<size_t>(out)] = in;
          ++plan.in_place;
          break;
        }
      }
    });
  }
  // In place: a plain 2x2 max-pool backward over the saved input it reads
  // last (the CNN's largest activation and its gradient, otherwise live
  // together at the first pool's backward: benchmarks/memory_plan.py).
  for (size_t i = 0; in_place && i < program.size(); ++i) {
    const Instruction& ins = program[i];
    const int at = static_cast<int>(i);
    if (ins.kind != Kind::kKernel || ins.op != OpKind::kMaxPool2dBackward || ins.inputs.size() != 2) continue;
    const int out = ins.output, in = ins.inputs[1];
    const auto u = static_cast<size_t>(find(in));
    if (find(out) != out || pinned[static_cast<size_t>(out)] || pinned[u] || end[u] != at || written_over_at[u] == at ||
        bytes_of(in) != bytes_of(out) || within(in) != 0 || find(ins.inputs[0]) == static_cast<int>(u) ||
        !max_pool2d_backward_in_place_ok(graph.nodes[static_cast<size_t>(in)]->shape(),
                                         graph.nodes[static_cast<size_t>(ins.inputs[0])]->shape(), ins.attrs)) {
      continue;
    }
    unit[static_cast<size_t>(out)] = static_cast<int>(u);
    end[u] = std::max(end[u], end[static_cast<size_t>(out)]);
    written_over_at[u] = at;
    plan.over[static_cast<size_t>(out)] = in;
    ++plan.in_place;
  }
  // Offsets, greedy by size.
  struct Unit {
    int root, begin, end;
    int64_t size, offset = 0;
  };
  std::vector<Unit> units;
  std::vector<int> unit_index(n, -1);
  for (size_t s = 0; s < n; ++s) {
    if (find(static_cast<int>(s)) != static_cast<int>(s) || pinned[s] || first[s] < 0) continue;
    unit_index[s] = static_cast<int>(units.size());
    const int64_t size = (bytes_of(static_cast<int>(s)) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    units.push_back({static_cast<int>(s), begin[s], end[s], size});
  }
  std::vector<size_t> order(units.size());
  for (size_t u = 0; u < order.size(); ++u) order[u] = u;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return units[a].size != units[b].size ? units[a].size > units[b].size : units[a].begin < units[b].begin;
  });
  std::vector<size_t> placed;  // by offset
  for (size_t u : order) {
    Unit& unit_u = units[u];
    if (unit_u.size == 0) continue;
    int64_t best = -1, best_gap = std::numeric_limits<int64_t>::max(), reached = 0;
    for (size_t p : placed) {
      const Unit& q = units[p];
      if (q.end < unit_u.begin || unit_u.end < q.begin) continue;  // never live together
      const int64_t gap = q.offset - reached;
      if (gap >= unit_u.size && gap < best_gap) {
        best = reached;
        best_gap = gap;
      }
      reached = std::max(reached, q.offset + q.size);
    }
    unit_u.offset = best >= 0 ? best : reached;
    plan.arena_bytes = std::max(plan.arena_bytes, unit_u.offset + unit_u.size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), u,
                                   [&](size_t a, size_t b) { return units[a].offset < units[b].offset; }),
                  u);
  }
  // Per slot: where it lives; the totals; the bytes live at each instruction.
  std::vector<int64_t> live(program.size() + 1, 0);  // differences
  for (size_t s = 0; s < n; ++s) {
    if (first[s] < 0) continue;
    const int u = unit_index[static_cast<size_t>(find(static_cast<int>(s)))];
    if (u >= 0) {
      plan.offset_of_slot[s] = units[static_cast<size_t>(u)].offset + within(static_cast<int>(s));
      if (plan.view_of[s] < 0) {
        plan.values_bytes += bytes_of(static_cast<int>(s));
        ++plan.arena_values;
      }
    } else if (plan.view_of[s] >= 0) {
      plan.offset_of_slot[s] = MemoryPlan::kView;
    } else if (plan.offset_of_slot[s] != MemoryPlan::kParameter) {
      plan.offset_of_slot[s] = MemoryPlan::kOutput;
      plan.output_bytes += bytes_of(static_cast<int>(s));
      live[static_cast<size_t>(first[s])] += bytes_of(static_cast<int>(s));  // to the end
    }
  }
  std::vector<int64_t> arena_live(program.size() + 1, 0);  // the arena's values alone
  for (const Unit& u : units) {
    const int64_t b = bytes_of(u.root);
    for (auto* d : {&live, &arena_live}) {
      (*d)[static_cast<size_t>(u.begin)] += b;
      (*d)[static_cast<size_t>(u.end) + 1] -= b;
    }
  }
  const auto most = [](const std::vector<int64_t>& differences) {
    int64_t now = 0, top = 0;
    for (int64_t d : differences) top = std::max(top, now += d);
    return top;
  };
  plan.live_bytes = plan.parameter_bytes + most(live);
  plan.arena_live_bytes = most(arena_live);
  return plan;
}

// The bytes of the outputs the executable writes over parameters when every
// listed donor is free, each output and each parameter once, first come (as
// take_donations picks them).
int64_t donatable_bytes(const std::vector<Donation>& donations, const GraphView& graph) {
  std::vector<int> outputs, parameters;
  int64_t bytes = 0;
  for (const Donation& d : donations) {
    if (std::find(outputs.begin(), outputs.end(), d.output) != outputs.end() ||
        std::find(parameters.begin(), parameters.end(), d.parameter) != parameters.end()) {
      continue;
    }
    outputs.push_back(d.output);
    parameters.push_back(d.parameter);
    bytes += spec_bytes(graph.nodes[static_cast<size_t>(d.output)]->spec());
  }
  return bytes;
}

// The outputs that may be written over a parameter's buffer (Donation): the
// parameter is neither returned nor read by any instruction after the fused
// kernel that computes the output, nor by anything else in that kernel's
// instruction (another member of its multi-tensor group runs at the same
// time; a GEMM whose epilogue it is reads its operands while earlier parts'
// epilogues write), and the kernel reads each of its elements before writing
// the same element of the output (FusedKernel::can_write_over_input); and
// no instruction after it may fail on the values it reads (a bad index):
// a step that fails is run again when its tensors are read, from the
// parameters it would have overwritten. Every
// such pair is listed: which parameters die is known only when the program
// runs (a momentum buffer does; the gradient an update also reads is held
// by its tensor), so execute() takes the first pair whose parameter is free
// and whose output is not yet taken. Not in bf16 mode: parameters are
// widened copies.
// Whether a kernel may refuse the values it is given at run time: index
// ops, one_hot, nll_loss's targets, integer division. GEMMs and fused
// (float) kernels check nothing at run time; among table kernels, only
// layout, reduction, elementwise and matmul/conv kernels on floating-point
// values are taken to be safe, anything else (a new op included) may fail.
bool may_fail_on_values(const GraphView& graph, const Instruction& ins) {
  if (ins.kind != Kind::kKernel) return false;
  switch (ins.op) {
    // Factorizations refuse a singular or indefinite matrix (or one LAPACK
    // cannot converge on: eigh, svd).
    case OpKind::kLinalgSolve:
    case OpKind::kLinalgInv:
    case OpKind::kLinalgCholesky:
    case OpKind::kLinalgEigh:
    case OpKind::kLinalgSvd: return true;
    default: break;
  }
  switch (op_category(ins.op)) {
    case OpCategory::kLayout:
    case OpCategory::kReduction:
    case OpCategory::kElementwise:
    case OpCategory::kMatmulConv: break;
    default: return true;
  }
  if (!is_floating(ins.spec.dtype)) return true;
  return std::any_of(ins.inputs.begin(), ins.inputs.end(),
                     [&](int s) { return !is_floating(graph.nodes[static_cast<size_t>(s)]->dtype()); });
}

std::vector<Donation> plan_donations(const GraphView& graph, const std::vector<Instruction>& program,
                                     const MemoryPlan& plan, bool bf16) {
  std::vector<Donation> donations;
  if (bf16) return donations;
  const size_t n = graph.nodes.size();
  std::vector<int> parameter_of(n, -1);
  for (size_t i = 0; i < graph.parameters.size(); ++i) parameter_of[graph.parameters[i]] = static_cast<int>(i);
  for (int o : graph.outputs) parameter_of[static_cast<size_t>(o)] = -1;  // returned as is
  // A view of a parameter reads the parameter's bytes: its readers are the
  // parameter's.
  std::vector<int> last_reader(n, -1);
  int last_fallible = -1;
  for (size_t i = 0; i < program.size(); ++i) {
    for (int s : program[i].inputs) last_reader[static_cast<size_t>(view_root(plan, s))] = static_cast<int>(i);
    if (may_fail_on_values(graph, program[i])) last_fallible = static_cast<int>(i);
  }
  const auto consider = [&](const Instruction& owner, int at, const Instruction& f) {
    if (at < last_fallible) return;
    for (size_t j = 0; j < f.inputs.size(); ++j) {
      const int p = f.inputs[j];
      const int index = parameter_of[static_cast<size_t>(p)];
      if (index < 0 || last_reader[static_cast<size_t>(p)] != at) continue;
      if (std::count_if(owner.inputs.begin(), owner.inputs.end(), [&](int s) { return view_root(plan, s) == p; }) !=
          1) {
        continue;
      }
      const TensorSpec& spec = graph.nodes[static_cast<size_t>(p)]->spec();
      for (size_t k = 0; k < f.outputs.size(); ++k) {
        const auto out = static_cast<size_t>(f.outputs[k]);
        if (plan.offset_of_slot[out] != MemoryPlan::kOutput || graph.nodes[out]->dtype() != spec.dtype ||
            graph.nodes[out]->shape() != spec.shape || !f.fused->can_write_over_input(j, k)) {
          continue;
        }
        donations.push_back({index, static_cast<int>(out)});
      }
    }
  };
  for (size_t i = 0; i < program.size(); ++i) {
    for_each_fused(program[i], [&](const Instruction& f) { consider(program[i], static_cast<int>(i), f); });
  }
  return donations;
}

}  // namespace

bool CpuBackend::lowers(OpKind op, DType dtype) const { return find_kernel(op, dtype) != nullptr; }

std::optional<PlanLayout> plan_layout(const Executable& executable) {
  const auto* cpu = dynamic_cast<const CpuExecutable*>(&executable);
  if (!cpu) return std::nullopt;
  return cpu->layout();
}

std::unique_ptr<Executable> CpuBackend::compile(const GraphView& graph) {
  const size_t n = graph.nodes.size();
  std::vector<int> readers(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int s : graph.operands[i]) ++readers[static_cast<size_t>(s)];
  }
  std::vector<char> is_output(n, 0);
  for (int o : graph.outputs) is_output[static_cast<size_t>(o)] = 1;

  std::vector<Instruction> program;
  program.reserve(n);
  std::vector<int> instruction_of(n, -1);                       // slot -> its instruction in `program`
  std::map<std::tuple<OpKind, int, uint64_t>, int> reductions;  // (op, operand, attrs' hash) -> the first slot
  for (size_t i = 0; i < n; ++i) {
    const Node* node = graph.nodes[i];
    if (node->is_leaf()) continue;
    Instruction ins;
    ins.op = node->op();
    ins.inputs = graph.operands[i];
    ins.output = static_cast<int>(i);
    ins.spec = node->spec();
    ins.attrs = node->attrs();
    ins.nodes = {static_cast<int>(i)};
    if (node->op() == OpKind::kMatmul && ins.inputs.size() == 2 && node->spec().shape.size() >= 2 &&
        (node->dtype() == DType::kFloat32 || node->dtype() == DType::kFloat64)) {
      // A transposed operand of rank >= 2 is read through the BLAS flag.
      ins.kind = Kind::kMatmul;
      for (int side = 0; side < 2; ++side) {
        // Through a chain of transposes (the backward of x @ w.t() reads
        // w.t().t()), each one toggling the flag.
        bool& flag = side == 0 ? ins.transpose_a : ins.transpose_b;
        for (;;) {
          const auto operand = static_cast<size_t>(ins.inputs[static_cast<size_t>(side)]);
          const Node* producer = graph.nodes[operand];
          if (!(is_last_two_transpose(*producer) && producer->spec().shape.size() >= 2 &&
                producer->dtype() == node->dtype())) {
            break;
          }
          ins.inputs[static_cast<size_t>(side)] = graph.operands[operand][0];
          flag = !flag;
          --readers[operand];
          ++readers[static_cast<size_t>(graph.operands[operand][0])];
        }
      }
      if (graph.nodes[static_cast<size_t>(ins.inputs[0])]->spec().shape.size() < 2 ||
          graph.nodes[static_cast<size_t>(ins.inputs[1])]->spec().shape.size() < 2) {
        ins.kind = Kind::kKernel;  // vector operands: the table kernel's path
      }
      // An operand that is any other permute of a value, batch dims as the
      // product's (an attention's [B, S, H, D] heads as [B, H, S, D]), is
      // read in place through strides (matmul_strided) instead of copied.
      if (ins.kind == Kind::kMatmul && fold_layouts()) {
        const Shape& out_shape = node->spec().shape;
        const auto batch_of = [&](const Shape& s) {
          return s.size() == out_shape.size() && std::equal(s.begin(), s.end() - 2, out_shape.begin());
        };
        std::vector<MatrixLayout> layouts;
        std::vector<int> inputs = ins.inputs;
        bool flags[2] = {ins.transpose_a, ins.transpose_b};
        bool any = false, ok = out_shape.size() >= 3;
        for (int side = 0; ok && side < 2; ++side) {
          const auto operand = static_cast<size_t>(ins.inputs[static_cast<size_t>(side)]);
          const Node* producer = graph.nodes[operand];
          const Shape& shape = producer->spec().shape;
          ok = batch_of(shape);
          std::optional<MatrixLayout> layout;
          bool flip = false;
          if (ok && producer->op() == OpKind::kPermute && producer->dtype() == node->dtype()) {
            const auto source = static_cast<size_t>(graph.operands[operand][0]);
            layout = matrix_layout(shape, permuted_strides(*producer, graph.nodes[source]->spec().shape), flip);
            if (layout) {
              inputs[static_cast<size_t>(side)] = static_cast<int>(source);
              flags[side] = flags[side] != flip;
              any = true;
            }
          }
          if (!layout) layout = MatrixLayout{shape, contiguous_strides(shape)};
          layouts.push_back(std::move(*layout));
        }
        if (ok && any) {
          for (int side = 0; side < 2; ++side) {
            --readers[static_cast<size_t>(ins.inputs[static_cast<size_t>(side)])];
            ++readers[static_cast<size_t>(inputs[static_cast<size_t>(side)])];
          }
          layouts.push_back({out_shape, contiguous_strides(out_shape)});
          ins.inputs = inputs;
          ins.transpose_a = flags[0];
          ins.transpose_b = flags[1];
          ins.layouts = std::move(layouts);
        }
      }
    }
    // A permute of a matmul's product read by nothing else (attention's
    // heads merged back, [B, H, S, D] -> [B, S, H, D]): the GEMMs write
    // each batch's rows in place in the permute's layout.
    if (node->op() == OpKind::kPermute && !is_last_two_transpose(*node) && !program.empty() && fold_layouts()) {
      const auto source = static_cast<size_t>(ins.inputs[0]);
      const int at = instruction_of[source];
      if (at >= 0 && readers[source] == 1 && !is_output[source]) {
        Instruction& mm = program[static_cast<size_t>(at)];
        bool flip = false;
        std::optional<MatrixLayout> layout;
        if (mm.kind == Kind::kMatmul && mm.members.empty() && !mm.stacked && mm.spec.dtype == node->dtype() &&
            mm.spec.shape.size() >= 3 && contiguous_product(mm) && batches_as_product(mm, graph)) {
          // Element j of the product lies at sum_d j[dims[d]] * own[d] in the permute's buffer.
          const auto& dims = node->attrs().get_ints("dims");
          const auto own = contiguous_strides(node->spec().shape);
          std::vector<int64_t> strides(own.size());
          for (size_t d = 0; d < dims.size(); ++d) {
            strides[static_cast<size_t>(dims[d] < 0 ? dims[d] + static_cast<int64_t>(dims.size()) : dims[d])] = own[d];
          }
          layout = matrix_layout(mm.spec.shape, std::move(strides), flip);
        }
        if (layout && !flip) {
          Instruction folded = mm;
          contiguous_layouts(folded, graph);
          folded.layouts[2] = std::move(*layout);
          folded.output = static_cast<int>(i);
          folded.spec = node->spec();
          folded.nodes.push_back(static_cast<int>(i));
          --readers[source];  // the matmul has no reader left and is dropped below
          for (int s : folded.inputs) ++readers[static_cast<size_t>(s)];
          ins = std::move(folded);
        }
      }
    }
    // The transpose of a matmul read by nothing else (a weight gradient
    // (x.t() @ dy).t()) is that matmul with its operands swapped:
    // (op(a) op(b))^T = op(b)^T op(a)^T, so no copy is made.
    if (is_last_two_transpose(*node) && !program.empty()) {
      const auto source = static_cast<size_t>(ins.inputs[0]);
      const int at = instruction_of[source];
      if (at >= 0 && program[static_cast<size_t>(at)].kind == Kind::kMatmul && readers[source] == 1 &&
          !is_output[source] && program[static_cast<size_t>(at)].spec.dtype == node->dtype() &&
          contiguous_product(program[static_cast<size_t>(at)])) {
        const Instruction& mm = program[static_cast<size_t>(at)];
        ins.kind = Kind::kMatmul;
        ins.op = OpKind::kMatmul;
        ins.inputs = {mm.inputs[1], mm.inputs[0]};
        ins.transpose_a = !mm.transpose_b;
        ins.transpose_b = !mm.transpose_a;
        ins.stacked = mm.stacked;   // (a^T b)^T = b^T a: stacked again
        if (!mm.layouts.empty()) {  // strided operands swap too; the product is the transpose's own
          ins.layouts = {mm.layouts[1], mm.layouts[0], {node->spec().shape, contiguous_strides(node->spec().shape)}};
        }
        ins.attrs = mm.attrs;
        ins.nodes = mm.nodes;
        ins.nodes.push_back(static_cast<int>(i));
        // The matmul now has no reader and is dropped below; its operands
        // are read by this one instead.
        --readers[source];
        for (int s : ins.inputs) ++readers[static_cast<size_t>(s)];
      }
    }
    // sum over dim 0 of a batched a_i^T b_i, read by nothing else: the
    // stacked-rows GEMM. A reshape of one (same elements) is that GEMM too.
    if ((node->op() == OpKind::kSum || node->op() == OpKind::kReshape) && ins.kind == Kind::kKernel &&
        ins.inputs.size() == 1) {
      const auto source = static_cast<size_t>(ins.inputs[0]);
      const int at = instruction_of[source];
      if (at >= 0 && readers[source] == 1 && !is_output[source] &&
          program[static_cast<size_t>(at)].kind == Kind::kMatmul && program[static_cast<size_t>(at)].members.empty() &&
          program[static_cast<size_t>(at)].layouts.empty()) {
        const Instruction& mm = program[static_cast<size_t>(at)];
        const bool fold = node->op() == OpKind::kReshape ? mm.stacked : sums_a_batch_of_products(graph, mm, *node);
        if (fold) {
          const TensorSpec spec = ins.spec;
          const std::vector<int> inputs = {mm.inputs[0], mm.inputs[1]};
          std::vector<int> nodes = mm.nodes;
          nodes.push_back(static_cast<int>(i));
          ins = Instruction{};
          ins.kind = Kind::kMatmul;
          ins.op = OpKind::kMatmul;
          ins.inputs = inputs;
          ins.output = static_cast<int>(i);
          ins.spec = spec;
          ins.transpose_a = true;
          ins.stacked = true;
          ins.nodes = std::move(nodes);
          --readers[source];
          for (int s : ins.inputs) ++readers[static_cast<size_t>(s)];
        }
      }
    }
    // A reduction computed again from the same operand (a layer norm's
    // mean, which its variance's gradient recomputes) is a view of the
    // first: no second pass over the operand.
    if (ins.kind == Kind::kKernel && ins.inputs.size() == 1 && !is_output[i] && settings::alias_values() &&
        (node->op() == OpKind::kMean || node->op() == OpKind::kSum || node->op() == OpKind::kVar)) {
      const auto key = std::make_tuple(node->op(), ins.inputs[0], node->attrs().hash());
      const auto [seen, first] = reductions.try_emplace(key, static_cast<int>(i));
      const Node* earlier = graph.nodes[static_cast<size_t>(seen->second)];
      if (!first && earlier->spec().shape == node->spec().shape && earlier->dtype() == node->dtype() &&
          same_attrs(earlier->attrs(), node->attrs())) {
        --readers[static_cast<size_t>(ins.inputs[0])];
        ++readers[static_cast<size_t>(seen->second)];
        ins.kind = Kind::kView;
        ins.inputs = {seen->second};
      }
    }
    if (ins.kind == Kind::kKernel) {
      ins.kernel = find_kernel(node->op(), node->dtype());
      if (!ins.kernel) {
        throw EngineError("cpu backend: no kernel for " + std::string(op_name(node->op())) + " on " +
                          std::string(dtype_name(node->dtype())));
      }
    }
    instruction_of[i] = static_cast<int>(program.size());
    program.push_back(std::move(ins));
  }
  // A transpose now read only through matmul flags, or a matmul whose
  // transpose was computed in its place, is not run at all.
  std::vector<Instruction> kept;
  kept.reserve(program.size());
  for (size_t i = program.size(); i-- > 0;) {
    Instruction& ins = program[i];
    const auto slot = static_cast<size_t>(ins.output);
    if ((ins.op == OpKind::kPermute || ins.kind == Kind::kMatmul) && readers[slot] == 0 && !is_output[slot]) {
      for (int s : ins.inputs) --readers[static_cast<size_t>(s)];
      continue;
    }
    kept.push_back(std::move(ins));
  }
  std::reverse(kept.begin(), kept.end());
  program = fuse_elementwise(std::move(kept), graph, is_output);
  if (fold_layouts()) program = concat_slice_gradients(std::move(program), graph, is_output);
  program = fold_residual_into_layer_norm_backward(std::move(program), graph, is_output);
  std::vector<char> is_parameter(n, 0);
  for (int p : graph.parameters) is_parameter[static_cast<size_t>(p)] = 1;
  program = attach_epilogues(std::move(program), is_parameter, settings::bf16_mode());
  program = group_independent_fused(std::move(program));

  std::vector<DType> parameter_dtypes;
  for (int p : graph.parameters) parameter_dtypes.push_back(graph.nodes[p]->dtype());
  std::vector<TensorSpec> slot_specs;
  slot_specs.reserve(n);
  for (const Node* node : graph.nodes) slot_specs.push_back(node->spec());
  if (settings::alias_values()) mark_views(program, graph, is_output);
  MemoryPlan plan = plan_memory(graph, program, settings::alias_values());
  std::vector<Donation> donations = plan_donations(graph, program, plan, settings::bf16_mode());
  plan.donatable_bytes = donatable_bytes(donations, graph);
  plan.live_bytes -= plan.donatable_bytes;
  return std::make_unique<CpuExecutable>(static_cast<int>(n), graph.parameters, std::move(parameter_dtypes),
                                         std::move(program), graph.outputs, settings::bf16_mode(),
                                         std::move(slot_specs), std::move(plan), std::move(donations));
}

namespace {

// Bytes per second of z = x + 3 y over m floats each, on the pool: the best
// of reps - 1 runs after a warm-up.
double triad_gbps(int64_t m, int reps) {
  std::vector<float> x(static_cast<size_t>(m), 1.0f), y(static_cast<size_t>(m), 2.0f), z(static_cast<size_t>(m), 0.0f);
  int64_t best = std::numeric_limits<int64_t>::max();
  for (int rep = 0; rep < reps; ++rep) {
    const int64_t t0 = events::now_ns();
    parallel_for(m, 1 << 14, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        z[static_cast<size_t>(i)] = x[static_cast<size_t>(i)] + 3.0f * y[static_cast<size_t>(i)];
    });
    if (rep) best = std::min(best, events::now_ns() - t0);
  }
  return 12.0 * static_cast<double>(m) / static_cast<double>(std::max<int64_t>(best, 1));
}

// The size of the highest cache level cpu0 sees, from sysfs (glibc's sysconf
// reports a socket's total L3 in VMs: 320 MiB where cpu0 has 32); 0 if unknown.
int64_t last_level_cache_bytes() {
  int64_t best_level = 0, bytes = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int64_t level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) continue;
    if (type == "Instruction" || level < best_level || size.empty()) continue;
    char* end = nullptr;
    int64_t value = std::strtoll(size.c_str(), &end, 10);
    if (*end == 'K')
      value <<= 10;
    else if (*end == 'M')
      value <<= 20;
    best_level = level;
    bytes = value;
  }
  return bytes;
}

}  // namespace

// How long the pool's workers spin, woken at a sync's start, waiting for
// the program's first parallel kernel (LAZYSCOPE_POOL_WAKE_US; default 0:
// not woken, they sleep until that kernel wakes them, ~30 us later). A
// cached transformer step reaches its first parallel kernel 0.1-0.4 ms
// after the sync starts. Off by default: measured on this 2-core VM, 2000
// us did not speed up the transformer's step (116.9 against 116.1 ms, six
// alternated processes) and the MLP's step after the CNN's in one process
// came out 0.2-0.4 ms slower with it in three pairs of three
// (benchmarks/README.md, branch xfmr2). A program that ran no parallel
// region wakes nobody at the next sync (wake_workers).
void CpuBackend::will_run() {
  static const int64_t spin_us = [] {
    const char* env = std::getenv("LAZYSCOPE_POOL_WAKE_US");
    return env && *env ? std::clamp<int64_t>(std::atoll(env), 0, 100000) : int64_t{0};
  }();
  if (spin_us > 0) wake_workers(spin_us);
}

MachinePeaks CpuBackend::machine_peaks() {
  static const MachinePeaks peaks = [] {
    MachinePeaks p;
    p.threads = num_threads();
    p.isa = fused_isa();
    // SGEMM 384^3 (~113 MFLOP), best of 3 after a warm-up: a few ms.
    constexpr int64_t n = 384;
    BufferPtr a = Buffer::allocate(DType::kFloat32, {n, n}), b = Buffer::allocate(DType::kFloat32, {n, n}),
              c = Buffer::allocate(DType::kFloat32, {n, n});
    std::fill(a->as<float>(), a->as<float>() + n * n, 0.5f);
    std::fill(b->as<float>(), b->as<float>() + n * n, 0.25f);
    int64_t best = std::numeric_limits<int64_t>::max();
    for (int rep = 0; rep < 4; ++rep) {
      const int64_t t0 = events::now_ns();
      matmul_into(*a, false, *b, false, *c);
      if (rep) best = std::min(best, events::now_ns() - t0);
    }
    p.gemm_gflops = 2.0 * n * n * n / static_cast<double>(std::max<int64_t>(best, 1));
    // STREAM triad over 3 x 16 MiB (past the caches), best of 3; and over
    // half the last-level cache, where a step's smaller kernels find their
    // operands (a roof that only memory set would put them above 100%).
    p.stream_gbps = triad_gbps(int64_t{1} << 22, 4);
    if (const int64_t llc = last_level_cache_bytes(); llc > 0) {
      p.cache_bytes = llc / 2;
      p.cache_gbps = triad_gbps(p.cache_bytes / 12, 8);
    }
    return p;
  }();
  return peaks;
}

}  // namespace cpu

namespace {
cpu::CpuBackend& cpu_backend() {
  static cpu::CpuBackend backend;
  return backend;
}
std::atomic<Backend*> g_default_backend{nullptr};
}  // namespace

Backend& default_backend() {
  Backend* b = g_default_backend.load(std::memory_order_acquire);
  return b ? *b : cpu_backend();
}

Backend* set_default_backend(Backend* backend) {
  Backend* previous = g_default_backend.exchange(backend);
  // After the exchange: a reader that sees the new generation sees the new backend.
  detail::g_backend_generation.fetch_add(1);
  return previous ? previous : &cpu_backend();
}

bool RestrictedBackend::lowers(OpKind op, DType dtype) const {
  for (const Refusal& r : refused_) {
    if (r.op == op && (!r.dtype || *r.dtype == dtype)) return false;
  }
  return inner_.lowers(op, dtype);
}

}  // namespace lazyscope
