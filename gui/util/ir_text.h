// An IR graph as text, one node per line, as `lazyscope graph RUN GRAPH`
// prints it: "%3 = matmul(%1, %2) : f32[8, 1]  scope model.fc1  at train.py:12".
#pragma once

#include <QString>

#include "lazyscope/ir.pb.h"

namespace lazyscope::gui {

QString irText(const pb::IrGraph& graph);

}  // namespace lazyscope::gui
