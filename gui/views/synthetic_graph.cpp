#include "views/synthetic_graph.h"

#include <algorithm>
#include <string>

namespace lazyscope::gui {
namespace {

class Builder {
 public:
  explicit Builder(pb::IrGraph& graph) : graph_(graph) {}

  int add(const char* op, std::initializer_list<int> operands, const std::string& scope, int line,
          bool parameter = false) {
    return add(op, std::vector<int>(operands), scope, line, parameter);
  }
  int add(const char* op, const std::vector<int>& operands, const std::string& scope, int line,
          bool parameter = false) {
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
    const int score = b.add("mul", {b.add("matmul", {q, kt}, attn, 24), b.add("device_data", {}, attn, 24, true)}, attn,
                            24);
    const int soft = b.add("softmax", {score}, attn, 25);
    const int mixed = b.add("reshape", {b.add("matmul", {soft, v}, attn, 26)}, attn, 26);
    const int res = b.add("add", {x, mixed}, attn, 27);
    const int mean = b.add("mean", {res}, attn, 28);
    const int norm = b.add("sub", {res, b.add("expand", {mean}, attn, 28)}, attn, 28);
    // MLP-like: up, gelu, down, residual.
    const int up = b.add("add",
                         {b.add("matmul", {norm, b.add("device_data", {}, mlp, 30, true)}, mlp, 30),
                          b.add("device_data", {}, mlp, 30, true)},
                         mlp, 30);
    const int act = b.add("gelu", {up}, mlp, 31);
    const int down = b.add("matmul", {act, b.add("device_data", {}, mlp, 32, true)}, mlp, 32);
    x = b.add("add", {norm, down}, mlp, 33);
  }
  const int loss = b.add("sum", {b.add("mul", {x, x}, scoped ? "loss" : "", 40)}, scoped ? "loss" : "", 40);
  graph.add_outputs(loss);
  return graph;
}

pb::IrGraph syntheticTrainingStep(int nodes) {
  pb::IrGraph graph;
  graph.set_hash(0x7a7a000000000000ULL + static_cast<uint64_t>(nodes));
  Builder b(graph);
  const auto param = [&b] { return b.add("device_data", {}, "", 10, true); };  // model.to(device)
  struct Use {
    int input;   // the activation a matmul read
    int weight;  // its weight parameter
  };
  std::vector<int> weights;
  std::vector<std::vector<Use>> layers;
  // The loss scale: a graph input early in post-order that only the loss
  // (line 40), after the whole forward pass, reads.
  const int lossScale = b.add("device_data", {}, "", 40, true);
  int x = b.add("device_data", {}, "", 12, true);
  // Each layer costs about 196 nodes: 34 forward (7 parameters), 36
  // backward, 126 update.
  const int layerCount = std::max(1, (nodes + 98) / 196);
  for (int layer = 0; layer < layerCount; ++layer) {
    const std::string attn = "Model.layers." + std::to_string(layer) + ".attn";
    const std::string mlp = "Model.layers." + std::to_string(layer) + ".mlp";
    std::vector<Use> uses;
    const auto linear = [&](int in, const std::string& scope, int line) {
      const int w = param();
      weights.push_back(w);
      uses.push_back({in, w});
      return b.add("matmul", {in, b.add("permute", {w}, scope, line)}, scope, line);
    };
    const int q = linear(x, attn, 21);
    const int k = linear(x, attn, 22);
    const int v = linear(x, attn, 23);
    const int score = b.add("matmul", {q, b.add("permute", {k}, attn, 24)}, attn, 24);
    const int soft = b.add("softmax", {b.add("mul", {score, b.add("device_data", {}, "", 24, true)}, attn, 24)}, attn,
                           25);
    const int mixed = b.add("reshape", {b.add("matmul", {soft, v}, attn, 26)}, attn, 26);
    const int res = b.add("add", {x, linear(mixed, attn, 27)}, attn, 27);
    const int mean = b.add("mean", {res}, attn, 28);
    const int norm = b.add("sub", {res, b.add("expand", {mean}, attn, 28)}, attn, 28);
    const int bias = param();
    weights.push_back(bias);
    const int up = b.add("add", {linear(norm, mlp, 30), bias}, mlp, 30);
    const int act = b.add("gelu", {up}, mlp, 31);
    x = b.add("add", {norm, linear(act, mlp, 32)}, mlp, 33);
    layers.push_back(std::move(uses));
  }
  // The loss, in the script (no module), then backward: every op traced by
  // loss.backward() at line 41, none in a module.
  int grad = b.add("mul", {x, lossScale}, "", 40);
  const int loss = b.add("sum", {b.add("mul", {x, x}, "", 40)}, "", 40);
  std::vector<int> gradOf(static_cast<size_t>(graph.nodes_size()), -1);
  for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) {
    for (auto use = layer->rbegin(); use != layer->rend(); ++use) {
      gradOf[use->weight] = b.add("matmul", {b.add("permute", {use->input}, "", 41), grad}, "", 41);
      const int back = b.add("matmul", {grad, b.add("permute", {use->weight}, "", 41)}, "", 41);
      grad = b.add("add", {b.add("mul", {back, use->input}, "", 41), grad}, "", 41);
    }
  }
  // The optimizer's update at line 43: Adam's two moments per parameter.
  std::vector<int> outputs = {loss};
  for (int w : weights) {
    const int g = gradOf[w] >= 0 ? gradOf[w] : b.add("mul", {grad, grad}, "", 41);
    // Each moment times its beta (state and beta both graph inputs), plus
    // the gradient's share; the update decays the weight (AdamW) and adds
    // the step, an output nothing reads.
    const auto beta = [&b] { return b.add("device_data", {}, "", 43, true); };
    const int m = b.add("add", {b.add("mul", {beta(), beta()}, "", 43), b.add("mul", {g, g}, "", 43)}, "", 43);
    const int v = b.add(
        "add", {b.add("mul", {beta(), beta()}, "", 43), b.add("mul", {g, b.add("mul", {g, g}, "", 43)}, "", 43)}, "",
        43);
    const int step = b.add("div", {m, b.add("add", {b.add("sqrt", {v}, "", 43), g}, "", 43)}, "", 43);
    outputs.push_back(b.add("add", {b.add("mul", {w, beta()}, "", 43), b.add("mul", {step, m}, "", 43)}, "", 43));
    outputs.push_back(m);
    outputs.push_back(v);
  }
  for (int out : outputs) graph.add_outputs(out);
  return graph;
}

}  // namespace lazyscope::gui
