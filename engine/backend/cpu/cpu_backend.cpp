#include "backend/cpu/cpu_backend.h"

#include <atomic>
#include <sstream>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/settings.h"

namespace lazyscope {

namespace cpu {
namespace {

struct Instruction {
  KernelFn kernel;
  OpKind op;
  std::vector<int> inputs;  // slots
  int output;               // slot
  TensorSpec spec;
  Attrs attrs;
};

// Estimated cost of one kernel, for the program listing: floating-point
// operations and bytes read plus written. Rows by cost shape; an op with no
// row (a newly added one) counts one operation per output element, the
// elementwise estimate — a lower bound for anything heavier.
enum class Cost : uint8_t { kFree, kPerOutput, kPerInput, kMatmul };
struct CostRow {
  OpKind op;
  Cost cost;
  int per_element;  // operations per element counted
};
constexpr CostRow kCostRows[] = {
    {OpKind::kCast, Cost::kFree, 0},       {OpKind::kReshape, Cost::kFree, 0},
    {OpKind::kPermute, Cost::kFree, 0},    {OpKind::kExpand, Cost::kFree, 0},
    {OpKind::kCat, Cost::kFree, 0},        {OpKind::kSlice, Cost::kFree, 0},
    {OpKind::kSliceBackward, Cost::kFree, 0}, {OpKind::kIndexSelect, Cost::kFree, 0},
    {OpKind::kOneHot, Cost::kFree, 0},     {OpKind::kMatmul, Cost::kMatmul, 2},
    {OpKind::kSum, Cost::kPerInput, 1},    {OpKind::kMean, Cost::kPerInput, 1},
    {OpKind::kProd, Cost::kPerInput, 1},   {OpKind::kAmax, Cost::kPerInput, 1},
    {OpKind::kAmin, Cost::kPerInput, 1},   {OpKind::kArgmax, Cost::kPerInput, 1},
    {OpKind::kArgmin, Cost::kPerInput, 1}, {OpKind::kAny, Cost::kPerInput, 1},
    {OpKind::kAll, Cost::kPerInput, 1},    {OpKind::kVar, Cost::kPerInput, 3},
    {OpKind::kLogsumexp, Cost::kPerInput, 3}, {OpKind::kSoftmax, Cost::kPerInput, 4},
    {OpKind::kLogSoftmax, Cost::kPerInput, 4}, {OpKind::kNllLoss, Cost::kPerOutput, 1},
    {OpKind::kIndexAdd, Cost::kPerInput, 1},
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
  }
  return c;
}

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(int slot_count, std::vector<int> parameter_slots, std::vector<DType> parameter_dtypes,
                std::vector<Instruction> program, std::vector<int> output_slots, bool bf16,
                std::vector<TensorSpec> slot_specs)
      : slot_count_(slot_count),
        parameter_slots_(std::move(parameter_slots)),
        parameter_dtypes_(std::move(parameter_dtypes)),
        program_(std::move(program)),
        output_slots_(std::move(output_slots)),
        bf16_(bf16),
        slot_specs_(std::move(slot_specs)) {}

  std::vector<BufferPtr> execute(std::span<const BufferPtr> parameters) override {
    if (parameters.size() != parameter_slots_.size()) {
      throw EngineError("executable expects " + std::to_string(parameter_slots_.size()) +
                        " parameters, got " + std::to_string(parameters.size()));
    }
    std::vector<BufferPtr> slots(static_cast<size_t>(slot_count_));
    for (size_t i = 0; i < parameters.size(); ++i) {
      // A bf16-stored float parameter is widened to the dtype the kernels expect.
      slots[parameter_slots_[i]] = parameters[i]->dtype() == parameter_dtypes_[i]
                                       ? parameters[i]
                                       : converted(*parameters[i], parameter_dtypes_[i]);
    }
    std::vector<const Buffer*> inputs;
    for (const Instruction& ins : program_) {
      inputs.clear();
      for (int s : ins.inputs) inputs.push_back(slots[s].get());
      BufferPtr out;
      try {
        out = Buffer::allocate_on_device(ins.spec.dtype, ins.spec.shape);
        ins.kernel(KernelArgs{inputs, *out, ins.attrs});
      } catch (const EngineError& e) {
        // Which node failed, for the executor to name the line that traced it.
        const std::string op(op_name(ins.op));
        const std::string what = e.what();
        throw KernelFailure(ins.output, std::current_exception(), what.starts_with(op) ? what : op + ": " + what);
      }
      // bf16 mode computes in bfloat16 precision: every float result is
      // rounded as a bf16 device would store it.
      if (bf16_ && stored_as_bf16(ins.spec.dtype)) round_to_bf16(*out);
      slots[ins.output] = std::move(out);
    }
    std::vector<BufferPtr> outputs;
    outputs.reserve(output_slots_.size());
    for (int s : output_slots_) {
      const BufferPtr& value = slots[s];
      // Results stay on the device as bfloat16 (exact: already rounded).
      outputs.push_back(bf16_ && stored_as_bf16(value->dtype()) ? converted(*value, DType::kBFloat16) : value);
    }
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
      os << "  %" << ins.output << " = " << op_name(ins.op) << "(";
      std::vector<const TensorSpec*> inputs;
      for (size_t i = 0; i < ins.inputs.size(); ++i) {
        os << (i ? ", " : "") << "%" << ins.inputs[i];
        inputs.push_back(&slot_specs_[static_cast<size_t>(ins.inputs[i])]);
      }
      const KernelCost c = estimate(ins.op, inputs, ins.spec);
      total.flops += c.flops;
      total.bytes += c.bytes;
      os << ") : " << dtype_name(ins.spec.dtype) << shape_str(ins.spec.shape) << "  " << spec_bytes(ins.spec)
         << " bytes  flops=" << c.flops << " traffic=" << c.bytes << "\n";
    }
    os << "  return";
    for (size_t i = 0; i < output_slots_.size(); ++i) os << (i ? ", " : " ") << "%" << output_slots_[i];
    os << "\n";
    os << "total: flops=" << total.flops << " traffic=" << total.bytes << " bytes (estimated: flops per kernel, bytes "
       << "read and written)\n";
    return os.str();
  }

 private:
  static bool stored_as_bf16(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }

  static BufferPtr converted(const Buffer& src, DType dtype) {
    BufferPtr out = Buffer::allocate_on_device(dtype, src.shape());
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
  std::vector<int> parameter_slots_;
  std::vector<DType> parameter_dtypes_;  // what the kernels read: the leaves' reported dtypes
  std::vector<Instruction> program_;
  std::vector<int> output_slots_;
  bool bf16_;
  std::vector<TensorSpec> slot_specs_;  // per slot: what its value holds, for the cost estimates
};

}  // namespace

bool CpuBackend::lowers(OpKind op, DType dtype) const { return find_kernel(op, dtype) != nullptr; }

std::unique_ptr<Executable> CpuBackend::compile(const GraphView& graph) {
  std::vector<Instruction> program;
  program.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node* node = graph.nodes[i];
    if (node->is_leaf()) continue;
    KernelFn kernel = find_kernel(node->op(), node->dtype());
    if (!kernel) {
      throw EngineError("cpu backend: no kernel for " + std::string(op_name(node->op())) + " on " +
                        std::string(dtype_name(node->dtype())));
    }
    program.push_back(
        {kernel, node->op(), graph.operands[i], static_cast<int>(i), node->spec(), node->attrs()});
  }
  std::vector<DType> parameter_dtypes;
  for (int p : graph.parameters) parameter_dtypes.push_back(graph.nodes[p]->dtype());
  std::vector<TensorSpec> slot_specs;
  slot_specs.reserve(graph.nodes.size());
  for (const Node* n : graph.nodes) slot_specs.push_back(n->spec());
  return std::make_unique<CpuExecutable>(static_cast<int>(graph.nodes.size()), graph.parameters,
                                         std::move(parameter_dtypes), std::move(program), graph.outputs,
                                         settings::bf16_mode(), std::move(slot_specs));
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
  return previous ? previous : &cpu_backend();
}

bool RestrictedBackend::lowers(OpKind op, DType dtype) const {
  for (const Refusal& r : refused_) {
    if (r.op == op && (!r.dtype || *r.dtype == dtype)) return false;
  }
  return inner_.lowers(op, dtype);
}

}  // namespace lazyscope
