// Layered ("Sugiyama-style") layout of a directed graph, without Qt widgets so
// that it runs on a pool thread and in the benchmark: longest-path layering,
// then every node pulled down next to its nearest user, then a few barycentric sweeps
// that reorder each layer to reduce edge crossings, then coordinates.
//
// Long edges get no dummy nodes: at thousands of nodes dummies multiply the
// work (a parameter used 40 layers below would add 39 of them), and the
// barycentre of all neighbours in earlier (or later) layers already pulls a
// node towards the ones it connects to.
#pragma once

#include <utility>

#include <vector>
#include "util/job_control.h"

namespace lazyscope::gui {

struct LayoutInput {
  // Node widths in scene units; the node count is widths.size().
  std::vector<double> widths;
  // (from, to): `from` feeds `to`. Edges that go backwards in index order are
  // laid out as if reversed, so the input may have cycles (as collapsed
  // scopes do: scope A feeds B, which feeds A again). Callers number nodes in
  // a topological order where one exists.
  std::vector<std::pair<int, int>> edges;
  double nodeHeight = 36;
  double layerGap = 44;  // vertical space between layers
  double nodeGap = 16;   // horizontal space between neighbours
  int sweeps = 4;        // barycentric passes (down, up, down, up)
};

struct LayoutResult {
  // Top-left corner of each node.
  std::vector<double> x;
  std::vector<double> y;
  std::vector<int> layer;
  int layerCount = 0;
  double width = 0;
  double height = 0;
};

// With `control`, its stop flag is checked between sweeps (each is one pass
// over every layer) and progress is reported per sweep; a stopped layout
// returns early with a result nobody should draw.
LayoutResult layoutLayered(const LayoutInput& input, JobControl* control = nullptr);

// The reference the benchmark measures against: longest-path layering and
// coordinates in index order, with no crossing reduction.
LayoutResult layoutTopological(const LayoutInput& input);

// Edges whose ends are both in adjacent layers and cross, counted pairwise
// per pair of layers: the figure crossing reduction lowers.
long long countCrossings(const LayoutInput& input, const LayoutResult& layout);

}  // namespace lazyscope::gui
