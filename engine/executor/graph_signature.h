// What the executor remembers of a compiled graph to explain the next
// recompile from the same call site: per node its op, spec and source line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "lazyscope/events.pb.h"

namespace lazyscope::executor {

struct NodeSignature {
  OpKind op;
  TensorSpec spec;
  int parameter_index;  // -1 for computed nodes
  SourceLocation source;
};

struct GraphSignature {
  uint64_t hash = 0;
  std::vector<NodeSignature> nodes;
};

GraphSignature make_signature(const GraphView& graph, uint64_t hash);

struct CompileReason {
  pb::CompileReasonKind kind = pb::COMPILE_REASON_FIRST_SIGHT;
  std::string text;
  uint64_t compared_with = 0;
};

// `previous` is the last graph compiled from the same call site, or null.
// The text is the smallest description of the difference, e.g.
// "input 3 (train.py:41) shape [128, 784] -> [32, 784]".
CompileReason explain_recompile(const GraphSignature& now, const GraphSignature* previous, bool was_evicted);

}  // namespace lazyscope::executor
