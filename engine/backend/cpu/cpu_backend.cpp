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

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(int slot_count, std::vector<int> parameter_slots, std::vector<DType> parameter_dtypes,
                std::vector<Instruction> program, std::vector<int> output_slots, bool bf16)
      : slot_count_(slot_count),
        parameter_slots_(std::move(parameter_slots)),
        parameter_dtypes_(std::move(parameter_dtypes)),
        program_(std::move(program)),
        output_slots_(std::move(output_slots)),
        bf16_(bf16) {}

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
      BufferPtr out = Buffer::allocate_on_device(ins.spec.dtype, ins.spec.shape);
      ins.kernel(KernelArgs{inputs, *out, ins.attrs});
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
    for (const Instruction& ins : program_) {
      os << "  %" << ins.output << " = " << op_name(ins.op) << "(";
      for (size_t i = 0; i < ins.inputs.size(); ++i) os << (i ? ", " : "") << "%" << ins.inputs[i];
      os << ") : " << dtype_name(ins.spec.dtype) << shape_str(ins.spec.shape) << "  "
         << numel(ins.spec.shape) * static_cast<int64_t>(dtype_size(ins.spec.dtype)) << " bytes\n";
    }
    os << "  return";
    for (size_t i = 0; i < output_slots_.size(); ++i) os << (i ? ", " : " ") << "%" << output_slots_[i];
    os << "\n";
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
  return std::make_unique<CpuExecutable>(static_cast<int>(graph.nodes.size()), graph.parameters,
                                         std::move(parameter_dtypes), std::move(program), graph.outputs,
                                         settings::bf16_mode());
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
