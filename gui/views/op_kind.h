// What kind of work an IR op does, for colouring the graph viewer: the op
// names are the engine's op table (engine/ir/op_table.cpp), repeated here as
// data because the GUI never links the engine. An unknown op is Other.
#pragma once

#include <QColor>
#include <QString>
#include <string_view>

namespace lazyscope::gui {

enum class OpKind { Elementwise, MatmulConv, Reduction, Layout, Data, Other, NUM_KINDS };

OpKind opKind(std::string_view op);
// "elementwise", "matmul / conv", ...: the legend's words.
QString opKindName(OpKind kind);
// A light fill that black text reads on, distinct from the other kinds and
// from both light and dark view backgrounds.
QColor opKindColor(OpKind kind);

}  // namespace lazyscope::gui
