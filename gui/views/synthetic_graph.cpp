#include "views/synthetic_graph.h"

#include <string>

namespace lazyscope::gui {
namespace {

class Builder {
 public:
  explicit Builder(pb::IrGraph& graph) : graph_(graph) {}

  int add(const char* op, std::initializer_list<int> operands, const std::string& scope,
          int line, bool parameter = false) {
    pb::IrNode& node = *graph_.add_nodes();
    node.set_id(graph_.nodes_size() - 1);
    node.set_op(op);
    for (int operand : operands) node.add_operands(operand);
    node.add_shape(32);
    node.add_shape(64);
    node.set_dtype("f32");
    node.set_scope(scope);
    node.mutable_source()->set_file("/work/proj/train_big.py");
    node.mutable_source()->set_line(line);
    node.set_hash(0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(node.id() + 1));
    node.set_parameter_index(parameter ? graph_.parameter_count() : -1);
    if (parameter) graph_.set_parameter_count(graph_.parameter_count() + 1);
    return node.id();
  }

 private:
  pb::IrGraph& graph_;
};

}  // namespace

pb::IrGraph syntheticGraph(int nodes, bool scoped) {
  pb::IrGraph graph;
  graph.set_hash(0x5e5e000000000000ULL + static_cast<uint64_t>(nodes) * 2 + (scoped ? 1 : 0));
  Builder b(graph);
  int x = b.add("device_data", {}, scoped ? "data" : "", 10, true);
  for (int layer = 0; graph.nodes_size() < nodes - 4; ++layer) {
    const std::string prefix = scoped ? "model.layer" + std::to_string(layer) : "";
    const std::string attn = scoped ? prefix + ".attn" : "";
    const std::string mlp = scoped ? prefix + ".mlp" : "";
    // Attention-like: three projections, a score, a softmax, a mix, a residual.
    const int q = b.add("matmul", {x, b.add("device_data", {}, attn, 20, true)}, attn, 21);
    const int k = b.add("matmul", {x, b.add("device_data", {}, attn, 20, true)}, attn, 22);
    const int v = b.add("matmul", {x, b.add("device_data", {}, attn, 20, true)}, attn, 23);
    const int kt = b.add("permute", {k}, attn, 24);
    const int score = b.add("mul", {b.add("matmul", {q, kt}, attn, 24), b.add("device_data", {}, attn, 24, true)}, attn, 24);
    const int soft = b.add("softmax", {score}, attn, 25);
    const int mixed = b.add("reshape", {b.add("matmul", {soft, v}, attn, 26)}, attn, 26);
    const int res = b.add("add", {x, mixed}, attn, 27);
    const int mean = b.add("mean", {res}, attn, 28);
    const int norm = b.add("sub", {res, b.add("expand", {mean}, attn, 28)}, attn, 28);
    // MLP-like: up, gelu, down, residual.
    const int up = b.add("add", {b.add("matmul", {norm, b.add("device_data", {}, mlp, 30, true)}, mlp, 30),
                                 b.add("device_data", {}, mlp, 30, true)}, mlp, 30);
    const int act = b.add("gelu", {up}, mlp, 31);
    const int down = b.add("matmul", {act, b.add("device_data", {}, mlp, 32, true)}, mlp, 32);
    x = b.add("add", {norm, down}, mlp, 33);
  }
  const int loss = b.add("sum", {b.add("mul", {x, x}, scoped ? "loss" : "", 40)}, scoped ? "loss" : "", 40);
  graph.add_outputs(loss);
  return graph;
}

}  // namespace lazyscope::gui
