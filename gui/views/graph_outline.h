// What the graph viewer draws of an IR graph: its nodes, with the nodes of a
// collapsed module scope folded into one box, optionally only those within
// k hops of a selection. Pure data, built on a pool thread.
//
// A node of scope "model.fc1" is folded into the shallowest of "model",
// "model.fc1" that is not expanded; with both expanded it is drawn itself.
// Expanding "model" thus shows its children scopes as boxes, one level at a
// time, so that what is laid out at once stays small.
#pragma once

#include <QSet>
#include <QString>
#include <utility>
#include <vector>

#include "lazyscope/ir.pb.h"
#include "views/op_kind.h"

namespace lazyscope::gui {

struct OutlineState {
  QSet<QString> expanded;     // scope paths whose nodes are shown one by one
  std::vector<int> focus;     // node indices; empty: the whole graph
  int hops = 2;               // with a focus: nodes within this many edges
};

struct OutlineItem {
  int node = -1;              // index into the graph's nodes; -1 for a scope box
  QString scope;              // the box's scope path, or the node's scope
  std::vector<int> members;   // node indices (one for a node)
  OpKind kind = OpKind::Other;  // a box: the kind most of its members are
  QString title;              // op, or the box's scope path
  QString subtitle;           // "f32[8, 3]", or "24 nodes"
};

struct GraphOutline {
  std::vector<OutlineItem> items;          // in order of their first node
  std::vector<std::pair<int, int>> edges;  // item indices, deduplicated
  std::vector<int> itemOfNode;             // -1: hidden by the hop filter
};

GraphOutline buildOutline(const pb::IrGraph& graph, const OutlineState& state);

// Every scope path of the graph and its prefixes ("model", "model.fc1").
QSet<QString> allScopes(const pb::IrGraph& graph);

// The state a graph opens in: every scope expanded, unless the graph has more
// than `limit` nodes, then every top-level scope collapsed.
OutlineState initialOutlineState(const pb::IrGraph& graph, int limit);

// Nodes within `hops` edges (either direction) of `focus`, sorted.
std::vector<int> nodesWithinHops(const pb::IrGraph& graph, const std::vector<int>& focus, int hops);

// A key for the layout cache: the graph hash with the state.
QString outlineKey(const pb::IrGraph& graph, const OutlineState& state);

}  // namespace lazyscope::gui
