#include "views/graph_outline.h"

#include <QCryptographicHash>
#include <QHash>
#include <QStringList>
#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "models/graph_diff_model.h"

namespace lazyscope::gui {
namespace {

// The scope a node folds into: the shallowest prefix of its scope that is
// not expanded, or empty when every prefix is.
QString foldingScope(const QString& scope, const QSet<QString>& expanded) {
  if (scope.isEmpty()) return {};
  qsizetype end = scope.indexOf(QLatin1Char('.'));
  while (true) {
    const QString prefix = end < 0 ? scope : scope.left(end);
    if (!expanded.contains(prefix)) return prefix;
    if (end < 0) return {};
    end = scope.indexOf(QLatin1Char('.'), end + 1);
  }
}

// Operand ids are post-order ids; map them to indices defensively.
std::vector<std::vector<int>> operandIndices(const pb::IrGraph& graph) {
  std::unordered_map<int, int> index;
  index.reserve(static_cast<size_t>(graph.nodes_size()));
  for (int i = 0; i < graph.nodes_size(); ++i) index.emplace(graph.nodes(i).id(), i);
  std::vector<std::vector<int>> operands(static_cast<size_t>(graph.nodes_size()));
  for (int i = 0; i < graph.nodes_size(); ++i) {
    for (int id : graph.nodes(i).operands()) {
      const auto found = index.find(id);
      if (found != index.end()) operands[i].push_back(found->second);
    }
  }
  return operands;
}

}  // namespace

QSet<QString> allScopes(const pb::IrGraph& graph) {
  QSet<QString> scopes;
  QString last;
  for (const pb::IrNode& node : graph.nodes()) {
    if (node.scope().empty()) continue;
    const QString scope = QString::fromStdString(node.scope());
    if (scope == last) continue;  // neighbours mostly share a scope
    last = scope;
    for (qsizetype end = scope.indexOf(QLatin1Char('.')); end >= 0;
         end = scope.indexOf(QLatin1Char('.'), end + 1)) {
      scopes.insert(scope.left(end));
    }
    scopes.insert(scope);
  }
  return scopes;
}

OutlineState initialOutlineState(const pb::IrGraph& graph, int limit) {
  OutlineState state;
  if (graph.nodes_size() <= limit) state.expanded = allScopes(graph);
  return state;
}

std::vector<int> nodesWithinHops(const pb::IrGraph& graph, const std::vector<int>& focus, int hops) {
  const std::vector<std::vector<int>> operands = operandIndices(graph);
  std::vector<std::vector<int>> neighbours(operands.size());
  for (size_t v = 0; v < operands.size(); ++v) {
    for (int u : operands[v]) {
      neighbours[v].push_back(u);
      neighbours[static_cast<size_t>(u)].push_back(static_cast<int>(v));
    }
  }
  std::vector<int> distance(operands.size(), -1);
  std::vector<int> frontier;
  for (int v : focus) {
    if (v < 0 || v >= static_cast<int>(distance.size()) || distance[v] == 0) continue;
    distance[v] = 0;
    frontier.push_back(v);
  }
  for (int hop = 1; hop <= hops && !frontier.empty(); ++hop) {
    std::vector<int> next;
    for (int v : frontier) {
      for (int u : neighbours[v]) {
        if (distance[u] >= 0) continue;
        distance[u] = hop;
        next.push_back(u);
      }
    }
    frontier = std::move(next);
  }
  std::vector<int> nodes;
  for (size_t v = 0; v < distance.size(); ++v) {
    if (distance[v] >= 0) nodes.push_back(static_cast<int>(v));
  }
  return nodes;
}

GraphOutline buildOutline(const pb::IrGraph& graph, const OutlineState& state) {
  const int n = graph.nodes_size();
  GraphOutline out;
  out.itemOfNode.assign(static_cast<size_t>(n), -1);

  std::vector<bool> shown(static_cast<size_t>(n), state.focus.empty());
  if (!state.focus.empty()) {
    for (int v : nodesWithinHops(graph, state.focus, state.hops)) shown[v] = true;
  }

  QHash<QString, int> boxOfScope;
  std::vector<std::array<int, static_cast<int>(OpKind::NUM_KINDS)>> kindCounts;
  for (int v = 0; v < n; ++v) {
    if (!shown[v]) continue;
    const pb::IrNode& node = graph.nodes(v);
    const QString scope = QString::fromStdString(node.scope());
    // Around a selection every node is drawn: the hop filter keeps it small.
    const QString folded = state.focus.empty() ? foldingScope(scope, state.expanded) : QString();
    if (folded.isEmpty()) {
      OutlineItem item;
      item.node = v;
      item.scope = scope;
      item.members = {v};
      item.kind = opKind(node);
      item.title = QString::fromStdString(node.op());
      item.subtitle = nodeShapeText(node);
      out.itemOfNode[v] = static_cast<int>(out.items.size());
      out.items.push_back(std::move(item));
      kindCounts.emplace_back();
      continue;
    }
    auto found = boxOfScope.find(folded);
    if (found == boxOfScope.end()) {
      found = boxOfScope.insert(folded, static_cast<int>(out.items.size()));
      OutlineItem box;
      box.scope = folded;
      box.title = folded;
      out.items.push_back(std::move(box));
      kindCounts.emplace_back();
      kindCounts.back().fill(0);
    }
    out.items[found.value()].members.push_back(v);
    ++kindCounts[found.value()][static_cast<int>(opKind(node))];
    out.itemOfNode[v] = found.value();
  }
  for (size_t i = 0; i < out.items.size(); ++i) {
    OutlineItem& item = out.items[i];
    if (item.node >= 0) continue;
    const auto& counts = kindCounts[i];
    // Data (parameters) says little about what a scope computes: prefer
    // any other kind when there is one.
    int best = -1;
    for (int k = 0; k < static_cast<int>(OpKind::NUM_KINDS); ++k) {
      if (counts[k] == 0 || k == static_cast<int>(OpKind::Data)) continue;
      if (best < 0 || counts[k] > counts[best]) best = k;
    }
    item.kind = best < 0 ? OpKind::Data : static_cast<OpKind>(best);
    item.subtitle = item.members.size() == 1
                        ? QStringLiteral("1 node")
                        : QStringLiteral("%1 nodes").arg(item.members.size());
  }

  const std::vector<std::vector<int>> operands = operandIndices(graph);
  std::unordered_set<long long> seen;
  for (int v = 0; v < n; ++v) {
    const int to = out.itemOfNode[v];
    if (to < 0) continue;
    for (int u : operands[v]) {
      const int from = out.itemOfNode[u];
      if (from < 0 || from == to) continue;
      if (seen.insert((static_cast<long long>(from) << 32) | to).second) {
        out.edges.emplace_back(from, to);
      }
    }
  }
  return out;
}

QString outlineKey(const pb::IrGraph& graph, const OutlineState& state) {
  QStringList expanded(state.expanded.begin(), state.expanded.end());
  expanded.sort();
  QCryptographicHash hash(QCryptographicHash::Sha1);
  hash.addData(expanded.join(QLatin1Char('\n')).toUtf8());
  for (int v : state.focus) hash.addData(QByteArray::number(v) + ',');
  return QStringLiteral("%1/%2/%3")
      .arg(graph.hash(), 16, 16, QLatin1Char('0'))
      .arg(state.focus.empty() ? 0 : state.hops)
      .arg(QString::fromLatin1(hash.result().toHex()));
}

}  // namespace lazyscope::gui
