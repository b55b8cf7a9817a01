// What the graph viewer draws of an IR graph: its nodes, with the nodes of a
// collapsed module scope folded into one box, optionally only those within
// k hops of a selection. Pure data, built on a pool thread.
//
// A node of scope "model.fc1" is folded into the shallowest of "model",
// "model.fc1" that is not expanded; with both expanded it is drawn itself.
// Expanding "model" thus shows its children scopes as boxes, one level at a
// time, so that what is laid out at once stays small.
//
// Only the forward pass runs inside module calls: a training step's backward
// pass and optimizer update (most of its nodes) and its parameters have no
// scope. Drawn one by one they were a tangle around the one box of the
// model. So every node gets a group path (groupPaths): its scope; else,
// for an op, the line that traced it ("train:81", a dot-free label) and under
// it the module whose values it reads ("train:81.Net.blocks.0.attn": the
// backward of that block); for a graph input (a parameter), the group of its
// first user. Folding works on these paths.
#pragma once

#include <QSet>
#include <QString>
#include <utility>
#include <vector>

#include "lazyscope/ir.pb.h"
#include "views/op_kind.h"

namespace lazyscope::gui {

struct OutlineState {
  QSet<QString> expanded;  // scope paths whose nodes are shown one by one
  std::vector<int> focus;  // node indices; empty: the whole graph
  int hops = 2;            // with a focus: nodes within this many edges
};

struct OutlineItem {
  int node = -1;                // index into the graph's nodes; -1 for a scope box
  QString scope;                // the box's scope path, or the node's scope
  std::vector<int> members;     // node indices (one for a node)
  OpKind kind = OpKind::Other;  // a box: the kind most of its members are
  QString title;                // op, or the box's scope path
  QString subtitle;             // "f32[8, 3]", or "24 nodes"
  QString tooltip;              // a box: its whole group path and what it holds
};

struct GraphOutline {
  std::vector<OutlineItem> items;          // in order of their last node
  std::vector<std::pair<int, int>> edges;  // item indices, deduplicated
  std::vector<int> itemOfNode;             // -1: hidden by the hop filter
};

GraphOutline buildOutline(const pb::IrGraph& graph, const OutlineState& state);

// The group path of every node (see above), by node index.
std::vector<QString> groupPaths(const pb::IrGraph& graph);

// Every group path of the graph and its prefixes ("model", "model.fc1").
QSet<QString> allScopes(const pb::IrGraph& graph);

// The state a graph opens in: every scope expanded, unless the graph has more
// than `limit` nodes; then its groups are expanded level by level (a whole
// level at once, else the largest groups of it first) while at most `budget`
// boxes are drawn: a model opens as one box per layer, not one box.
OutlineState initialOutlineState(const pb::IrGraph& graph, int limit, int budget = 200);

// Nodes within `hops` edges (either direction) of `focus`, sorted.
std::vector<int> nodesWithinHops(const pb::IrGraph& graph, const std::vector<int>& focus, int hops);

// A key for the layout cache: the graph hash with the state.
QString outlineKey(const pb::IrGraph& graph, const OutlineState& state);

}  // namespace lazyscope::gui
