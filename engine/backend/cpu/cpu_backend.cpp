#include "backend/cpu/cpu_backend.h"

#include <atomic>
#include <sstream>

#include "backend/cpu/kernels.h"
#include "core/error.h"

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
  CpuExecutable(int slot_count, std::vector<int> parameter_slots, std::vector<Instruction> program,
                std::vector<int> output_slots)
      : slot_count_(slot_count),
        parameter_slots_(std::move(parameter_slots)),
        program_(std::move(program)),
        output_slots_(std::move(output_slots)) {}

  std::vector<BufferPtr> execute(std::span<const BufferPtr> parameters) override {
    if (parameters.size() != parameter_slots_.size()) {
      throw EngineError("executable expects " + std::to_string(parameter_slots_.size()) +
                        " parameters, got " + std::to_string(parameters.size()));
    }
    std::vector<BufferPtr> slots(static_cast<size_t>(slot_count_));
    for (size_t i = 0; i < parameters.size(); ++i) slots[parameter_slots_[i]] = parameters[i];
    std::vector<const Buffer*> inputs;
    for (const Instruction& ins : program_) {
      inputs.clear();
      for (int s : ins.inputs) inputs.push_back(slots[s].get());
      BufferPtr out = Buffer::allocate_on_device(ins.spec.dtype, ins.spec.shape);
      ins.kernel(KernelArgs{inputs, *out, ins.attrs});
      slots[ins.output] = std::move(out);
    }
    std::vector<BufferPtr> outputs;
    outputs.reserve(output_slots_.size());
    for (int s : output_slots_) outputs.push_back(slots[s]);
    return outputs;
  }

  std::string program_text() const override {
    std::ostringstream os;
    os << "cpu program: " << parameter_slots_.size() << " parameters, " << program_.size()
       << " kernels\n";
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
  int slot_count_;
  std::vector<int> parameter_slots_;
  std::vector<Instruction> program_;
  std::vector<int> output_slots_;
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
  return std::make_unique<CpuExecutable>(static_cast<int>(graph.nodes.size()), graph.parameters,
                                         std::move(program), graph.outputs);
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
