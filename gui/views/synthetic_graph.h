// A made-up IR graph shaped like a deep model's training step, of about
// `nodes` nodes: blocks of parameters, matmuls, elementwise ops, reductions
// and reshapes in scopes "model.layerN.{attn,mlp}", each block feeding the
// next, plus a loss. For the layout benchmark and the viewer's tests; with
// `scoped` false every scope is empty (a graph nothing can fold).
#pragma once

#include <vector>

#include "lazyscope/ir.pb.h"

namespace lazyscope::gui {

pb::IrGraph syntheticGraph(int nodes, bool scoped = true);

// A made-up training step of about `nodes` nodes as the engine records one:
// only the forward pass has module scopes ("Model.layers.N.attn/mlp"); the
// parameters, the loss, the backward pass (line 41) and an Adam update
// (line 43, two moments per parameter) have none.
pb::IrGraph syntheticTrainingStep(int nodes);

}  // namespace lazyscope::gui
