#include "views/graph_layout.h"

#include <algorithm>
#include <numeric>

namespace lazyscope::gui {
namespace {

struct Adjacency {
  std::vector<std::vector<int>> preds;
  std::vector<std::vector<int>> succs;
};

// Edges oriented forward in index order; self-loops and out-of-range ends
// dropped (a collapsed scope that feeds itself draws no edge).
Adjacency adjacency(const LayoutInput& input) {
  const int n = static_cast<int>(input.widths.size());
  Adjacency adj{std::vector<std::vector<int>>(n), std::vector<std::vector<int>>(n)};
  for (auto [from, to] : input.edges) {
    if (from == to || from < 0 || to < 0 || from >= n || to >= n) continue;
    if (from > to) std::swap(from, to);
    adj.succs[from].push_back(to);
    adj.preds[to].push_back(from);
  }
  return adj;
}

std::vector<int> longestPathLayers(const Adjacency& adj) {
  const int n = static_cast<int>(adj.preds.size());
  std::vector<int> layer(n, 0);
  for (int v = 0; v < n; ++v) {
    for (int p : adj.preds[v]) layer[v] = std::max(layer[v], layer[p] + 1);
  }
  // Then pull every node down to just above its nearest user (in reverse
  // order, so users are final first): otherwise every parameter, and every
  // op on parameters alone, sits in the first rows, one very wide band far
  // above its use. Sinks keep their layer; no edge gets longer.
  for (int v = n - 1; v >= 0; --v) {
    if (adj.succs[v].empty()) continue;
    int nearest = layer[adj.succs[v].front()];
    for (int s : adj.succs[v]) nearest = std::min(nearest, layer[s]);
    layer[v] = nearest - 1;
  }
  return layer;
}

std::vector<std::vector<int>> layersInIndexOrder(const std::vector<int>& layer, int& count) {
  count = layer.empty() ? 0 : *std::max_element(layer.begin(), layer.end()) + 1;
  std::vector<std::vector<int>> rows(count);
  for (int v = 0; v < static_cast<int>(layer.size()); ++v) rows[layer[v]].push_back(v);
  return rows;
}

// Centre x of each node of `row`, the row centred on 0.
void placeRow(const LayoutInput& input, const std::vector<int>& row, std::vector<double>& centre) {
  double total = 0;
  for (int v : row) total += input.widths[v] + input.nodeGap;
  double x = -total / 2;
  for (int v : row) {
    centre[v] = x + input.widths[v] / 2;
    x += input.widths[v] + input.nodeGap;
  }
}

// Reorders `row` by the mean centre of each node's neighbours; a node with
// none keeps its place (its own centre is its key).
void sortByBarycentre(std::vector<int>& row, const std::vector<std::vector<int>>& neighbours,
                      const std::vector<double>& centre) {
  std::vector<std::pair<double, int>> keyed;
  keyed.reserve(row.size());
  for (int v : row) {
    double key = centre[v];
    if (!neighbours[v].empty()) {
      double sum = 0;
      for (int u : neighbours[v]) sum += centre[u];
      key = sum / static_cast<double>(neighbours[v].size());
    }
    keyed.emplace_back(key, v);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < row.size(); ++i) row[i] = keyed[i].second;
}

LayoutResult finish(const LayoutInput& input, const std::vector<std::vector<int>>& rows, std::vector<int> layer) {
  const int n = static_cast<int>(input.widths.size());
  LayoutResult out;
  out.layer = std::move(layer);
  out.layerCount = static_cast<int>(rows.size());
  out.x.assign(n, 0);
  out.y.assign(n, 0);
  std::vector<double> centre(n, 0);
  for (const auto& row : rows) placeRow(input, row, centre);
  double minX = 0;
  double maxX = 0;
  for (int v = 0; v < n; ++v) {
    out.x[v] = centre[v] - input.widths[v] / 2;
    out.y[v] = out.layer[v] * (input.nodeHeight + input.layerGap);
    minX = std::min(minX, out.x[v]);
    maxX = std::max(maxX, out.x[v] + input.widths[v]);
  }
  for (double& x : out.x) x -= minX;
  out.width = n == 0 ? 0 : maxX - minX;
  out.height = out.layerCount == 0 ? 0 : out.layerCount * (input.nodeHeight + input.layerGap) - input.layerGap;
  return out;
}

}  // namespace

LayoutResult layoutLayered(const LayoutInput& input, JobControl* control) {
  const Adjacency adj = adjacency(input);
  std::vector<int> layer = longestPathLayers(adj);
  int count = 0;
  std::vector<std::vector<int>> rows = layersInIndexOrder(layer, count);
  std::vector<double> centre(input.widths.size(), 0);
  for (const auto& row : rows) placeRow(input, row, centre);
  for (int sweep = 0; sweep < input.sweeps; ++sweep) {
    if (control != nullptr) {
      if (control->stopped()) return {};
      control->setProgress(sweep, input.sweeps);
    }
    if (sweep % 2 == 0) {
      for (int l = 1; l < count; ++l) {
        sortByBarycentre(rows[l], adj.preds, centre);
        placeRow(input, rows[l], centre);
      }
    } else {
      for (int l = count - 2; l >= 0; --l) {
        sortByBarycentre(rows[l], adj.succs, centre);
        placeRow(input, rows[l], centre);
      }
    }
  }
  return finish(input, rows, std::move(layer));
}

LayoutResult layoutTopological(const LayoutInput& input) {
  const Adjacency adj = adjacency(input);
  std::vector<int> layer(input.widths.size(), 0);
  for (size_t v = 0; v < layer.size(); ++v) {
    for (int p : adj.preds[v]) layer[v] = std::max(layer[v], layer[p] + 1);
  }
  int count = 0;
  const std::vector<std::vector<int>> rows = layersInIndexOrder(layer, count);
  return finish(input, rows, std::move(layer));
}

long long countCrossings(const LayoutInput& input, const LayoutResult& layout) {
  // Per pair of adjacent layers, the (upper x, lower x) of each edge between
  // them; two edges cross when their order differs at the two ends.
  std::vector<std::vector<std::pair<double, double>>> between(static_cast<size_t>(std::max(layout.layerCount, 1)));
  const int n = static_cast<int>(input.widths.size());
  for (auto [from, to] : input.edges) {
    if (from < 0 || to < 0 || from >= n || to >= n) continue;
    int upper = from;
    int lower = to;
    if (layout.layer[upper] > layout.layer[lower]) std::swap(upper, lower);
    if (layout.layer[lower] != layout.layer[upper] + 1) continue;
    between[layout.layer[upper]].emplace_back(layout.x[upper], layout.x[lower]);
  }
  long long crossings = 0;
  for (auto& edges : between) {
    std::sort(edges.begin(), edges.end());
    for (size_t i = 0; i < edges.size(); ++i) {
      for (size_t j = i + 1; j < edges.size(); ++j) {
        if (edges[j].first > edges[i].first && edges[j].second < edges[i].second) ++crossings;
      }
    }
  }
  return crossings;
}

}  // namespace lazyscope::gui
