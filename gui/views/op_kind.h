// What kind of work an IR op does, for colouring the graph viewer. The
// engine records each node's category in the IR it publishes (IrNode.category,
// from the one exhaustive switch in engine/ir/op_table.cpp); the GUI only
// reads it. Graphs recorded before categories existed show as Other.
#pragma once

#include <QColor>
#include <QString>

#include "lazyscope/ir.pb.h"

namespace lazyscope::gui {

enum class OpKind { Elementwise, MatmulConv, Reduction, Layout, Data, Indexing, Collective, Other, NUM_KINDS };

OpKind opKind(const pb::IrNode& node);
// "elementwise", "matmul / conv / pool", ...: the legend's words.
QString opKindName(OpKind kind);
// A light fill that black text reads on, distinct from the other kinds and
// from both light and dark view backgrounds.
QColor opKindColor(OpKind kind);

}  // namespace lazyscope::gui
