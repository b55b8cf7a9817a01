// Human-readable forms of a stored IR graph (pb::IrGraph): a text listing and
// Graphviz DOT. One formatter for everything that shows IR: the engine's
// dump_graph, `lazyscope graph`, and the diagnoses' shape texts. It lives in
// the protobuf library because storage and the runner must not link the engine.
#pragma once

#include <cstdint>
#include <string>

#include "lazyscope/ir.pb.h"

namespace lazyscope::ir_format {

struct Options {
  // Before the graph's 16 hex digits in headers: the engine's dumps write
  // "0x", the history CLI writes the bare digits users pass back to it.
  std::string hash_prefix = "0x";
};

// "[2, 3]"; "[]" for a scalar.
std::string shape(const pb::IrNode& node);
// "train.py:12": the file's name (not its path) and line; "" when unknown.
std::string source(const pb::IrNode& node);

// "graph 0x…: N nodes, P parameters", then one line per node:
//   %3 = add(%1, %2) : float32[2, 3] alpha=1  scope model.fc1  at train.py:12
// (attributes sorted by name), then "  outputs: %3 %5".
std::string text(const pb::IrGraph& graph, const Options& options = {});
// A digraph with one box per node (graph inputs grey) labelled op, dtype and
// shape, scope and source line, and an edge per operand.
std::string dot(const pb::IrGraph& graph, const Options& options = {});

}  // namespace lazyscope::ir_format
