// The graph viewer's layout against a reference, side by side: laying out a
// synthetic 5,000-node graph with crossing reduction (what the viewer does
// for an expanded graph) vs a plain topological layering pass with no
// ordering work. The ratio says what crossing reduction costs; the absolute
// time is what a user waits for, on a pool thread, before the drawing shows.
// Also: the collapsed outline the viewer opens a >500-node graph with, and
// building the QGraphicsScene (GUI thread) for the expanded graph.
#include <benchmark/benchmark.h>

#include <QApplication>

#include "views/graph_layout.h"
#include "views/graph_outline.h"
#include "views/graph_scene.h"
#include "views/synthetic_graph.h"

namespace {

using namespace lazyscope::gui;

constexpr int kNodes = 5000;

const lazyscope::pb::IrGraph& graph() {
  static const lazyscope::pb::IrGraph g = syntheticGraph(kNodes);
  return g;
}

OutlineState expandedState() {
  OutlineState state;
  state.expanded = allScopes(graph());
  return state;
}

const GraphOutline& expandedOutline() {
  static const GraphOutline outline = buildOutline(graph(), expandedState());
  return outline;
}

void BM_Layout5000_lazyscope(benchmark::State& state) {
  const LayoutInput input = layoutInputFor(expandedOutline());
  long long crossings = 0;
  for (auto _ : state) {
    LayoutResult result = layoutLayered(input);
    benchmark::DoNotOptimize(result.x.data());
    crossings = countCrossings(input, result);
  }
  state.counters["nodes"] = static_cast<double>(input.widths.size());
  state.counters["crossings"] = static_cast<double>(crossings);
}
BENCHMARK(BM_Layout5000_lazyscope)->Name("layout_5000_nodes/lazyscope")->Unit(benchmark::kMillisecond);

void BM_Layout5000_reference(benchmark::State& state) {
  const LayoutInput input = layoutInputFor(expandedOutline());
  long long crossings = 0;
  for (auto _ : state) {
    LayoutResult result = layoutTopological(input);
    benchmark::DoNotOptimize(result.x.data());
    crossings = countCrossings(input, result);
  }
  state.counters["nodes"] = static_cast<double>(input.widths.size());
  state.counters["crossings"] = static_cast<double>(crossings);
}
BENCHMARK(BM_Layout5000_reference)->Name("layout_5000_nodes/reference")->Unit(benchmark::kMillisecond);

// What opening a 5,000-node graph costs off the GUI thread: the outline
// folded by top-level scope, then its layout.
void BM_OpenCollapsed5000(benchmark::State& state) {
  const OutlineState initial = initialOutlineState(graph(), 500);
  for (auto _ : state) {
    const GraphOutline outline = buildOutline(graph(), initial);
    LayoutResult result = layoutLayered(layoutInputFor(outline));
    benchmark::DoNotOptimize(result.x.data());
  }
}
BENCHMARK(BM_OpenCollapsed5000)->Name("open_collapsed_5000_nodes")->Unit(benchmark::kMillisecond);

// A training step as the engine records it (only the forward pass scoped):
// choosing what opens (initialOutlineState, on the GUI thread) and then the
// outline and its layout (on a pool thread), at 1,500 and 5,000 nodes.
void BM_InitialStateTrainingStep(benchmark::State& state) {
  const lazyscope::pb::IrGraph g = syntheticTrainingStep(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    OutlineState initial = initialOutlineState(g, 500);
    benchmark::DoNotOptimize(initial.expanded.size());
  }
  state.counters["nodes"] = g.nodes_size();
}
BENCHMARK(BM_InitialStateTrainingStep)
    ->Name("training_step_initial_state")
    ->Arg(1500)
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond);

void BM_OpenTrainingStep(benchmark::State& state) {
  const lazyscope::pb::IrGraph g = syntheticTrainingStep(static_cast<int>(state.range(0)));
  const OutlineState initial = initialOutlineState(g, 500);
  size_t boxes = 0;
  for (auto _ : state) {
    const GraphOutline outline = buildOutline(g, initial);
    LayoutResult result = layoutLayered(layoutInputFor(outline));
    benchmark::DoNotOptimize(result.x.data());
    boxes = outline.items.size();
  }
  state.counters["nodes"] = g.nodes_size();
  state.counters["boxes"] = static_cast<double>(boxes);
}
BENCHMARK(BM_OpenTrainingStep)
    ->Name("training_step_outline_and_layout")
    ->Arg(1500)
    ->Arg(5000)
    ->Unit(benchmark::kMillisecond);

// Expanded, from IR to a built scene: the whole wait for the worst case.
void BM_ExpandedToScene5000(benchmark::State& state) {
  static int argc = 1;
  static char name[] = "gui_bench";
  static char* argv[] = {name, nullptr};
  qputenv("QT_QPA_PLATFORM", "offscreen");
  static QApplication app(argc, argv);
  GraphScene scene;
  const OutlineState expanded = expandedState();
  for (auto _ : state) {
    auto outline = std::make_shared<GraphOutline>(buildOutline(graph(), expanded));
    const LayoutResult layout = layoutLayered(layoutInputFor(*outline));
    scene.build(outline, layout);
  }
}
BENCHMARK(BM_ExpandedToScene5000)->Name("expanded_5000_nodes_to_scene")->Unit(benchmark::kMillisecond);

}  // namespace
