// Human-readable dumps of an IR graph (as pending_graph() builds it): a
// text listing and Graphviz DOT. Each node shows its op, dtype and shape,
// attributes, nn.Module scope and the user's source line.
#pragma once

#include <string>

#include "lazyscope/ir.pb.h"

namespace lazyscope::executor {

// "graph 0x…: N nodes, P parameters", then one line per node:
//   %3 = add(%1, %2) : float32[2, 3] alpha=1  scope model.fc1  at train.py:12
// then "outputs: %3 %5".
std::string graph_text(const pb::IrGraph& graph);
// digraph with one box per node (graph inputs grey) and an edge per operand.
std::string graph_dot(const pb::IrGraph& graph);

}  // namespace lazyscope::executor
