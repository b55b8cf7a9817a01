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

// "train:81": where an op outside every module was traced, as one path
// component (no dots: the file's extension and any other dot dropped).
QString lineLabel(const pb::SourceLocation& source) {
  if (source.file().empty()) return QStringLiteral("unscoped");
  QString file = QString::fromStdString(source.file()).section(QLatin1Char('/'), -1);
  const qsizetype dot = file.lastIndexOf(QLatin1Char('.'));
  if (dot > 0) file.truncate(dot);
  file.replace(QLatin1Char('.'), QLatin1Char('_'));
  return QStringLiteral("%1:%2").arg(file).arg(source.line());
}

bool isLineLabel(const QString& component) {
  return component.contains(QLatin1Char(':')) || component == QLatin1String("unscoped");
}

// The next component of `path` below `box` ("model.a.b" below "model" is
// "model.a"); `path` itself when it is `box`.
QString childOf(const QString& path, const QString& box) {
  if (path.size() == box.size()) return path;
  const qsizetype end = path.indexOf(QLatin1Char('.'), box.size() + 1);
  return end < 0 ? path : path.left(end);
}

}  // namespace

std::vector<QString> groupPaths(const pb::IrGraph& graph) {
  const int n = graph.nodes_size();
  const std::vector<std::vector<int>> operands = operandIndices(graph);
  std::vector<QString> path(static_cast<size_t>(n));
  std::vector<QString> module(static_cast<size_t>(n));  // the module a node's values belong to
  std::vector<bool> leaf(static_cast<size_t>(n), false);
  for (int v = 0; v < n; ++v) {
    const pb::IrNode& node = graph.nodes(v);
    if (!node.scope().empty()) {
      path[v] = module[v] = QString::fromStdString(node.scope());
      // A parameter belongs to the first module that reads it.
      for (int u : operands[v]) {
        if (operands[u].empty() && graph.nodes(u).scope().empty() && module[u].isEmpty()) module[u] = module[v];
      }
      continue;
    }
    if (operands[v].empty()) {
      leaf[v] = true;
      continue;
    }
    // Anchored by a parameter it reads (an optimizer's update of it, the
    // gradient through a layer's weight), else by the nearest operand a
    // module computed (a saved activation: what a backward op
    // differentiates).
    int best = -1;
    for (int u : operands[v]) {
      if (leaf[u] && !module[u].isEmpty() && (best < 0 || u < best)) best = u;
    }
    if (best < 0) {
      for (int u : operands[v]) {
        if (!graph.nodes(u).scope().empty() && u > best) best = u;
      }
    }
    if (best >= 0) module[v] = module[best];
  }
  // Else where its value goes (users come later, so walk backwards): a
  // weight's gradient and the optimizer's moments of it end in the update
  // of that weight.
  const auto fromUsers = [&] {
    for (int v = n - 1; v >= 0; --v) {
      if (module[v].isEmpty()) continue;
      for (int u : operands[v]) {
        if (!leaf[u] && module[u].isEmpty() && graph.nodes(u).scope().empty()) module[u] = module[v];
      }
    }
  };
  fromUsers();
  // Else where it comes from: its earliest operand attributed to a module;
  // then what that settled passes on to its operands (an update that is an
  // output, with no user, settles only here: its moments follow it).
  for (int v = 0; v < n; ++v) {
    if (leaf[v] || !module[v].isEmpty()) continue;
    for (int u : operands[v]) {
      if (!module[u].isEmpty()) {
        module[v] = module[u];
        break;
      }
    }
  }
  fromUsers();
  for (int v = 0; v < n; ++v) {
    const pb::IrNode& node = graph.nodes(v);
    if (leaf[v] || !node.scope().empty()) continue;
    const QString label = lineLabel(node.source());
    path[v] = module[v].isEmpty() ? label : label + QLatin1Char('.') + module[v];
  }
  // A graph input joins its first user: a weight sits in its layer.
  for (int v = 0; v < n; ++v) {
    for (int u : operands[v]) {
      if (leaf[u] && path[u].isEmpty()) path[u] = path[v];
    }
  }
  for (int v = 0; v < n; ++v) {
    if (leaf[v] && path[v].isEmpty()) path[v] = QStringLiteral("inputs");
  }
  return path;
}

QSet<QString> allScopes(const pb::IrGraph& graph) {
  QSet<QString> scopes;
  QString last;
  for (const QString& scope : groupPaths(graph)) {
    if (scope.isEmpty() || scope == last) continue;  // neighbours mostly share a scope
    last = scope;
    for (qsizetype end = scope.indexOf(QLatin1Char('.')); end >= 0; end = scope.indexOf(QLatin1Char('.'), end + 1)) {
      scopes.insert(scope.left(end));
    }
    scopes.insert(scope);
  }
  return scopes;
}

OutlineState initialOutlineState(const pb::IrGraph& graph, int limit, int budget) {
  OutlineState state;
  if (graph.nodes_size() <= limit) {
    state.expanded = allScopes(graph);
    return state;
  }
  const std::vector<QString> paths = groupPaths(graph);
  while (true) {
    // What each box would become expanded: its child groups and its own
    // nodes, each one item.
    QHash<QString, QSet<QString>> children;
    QHash<QString, int> members;
    QHash<QString, int> direct;  // its own nodes, drawn one by one once expanded
    int items = 0;
    for (const QString& path : paths) {
      const QString box = foldingScope(path, state.expanded);
      if (box.isEmpty()) {
        ++items;
        continue;
      }
      if (path.size() == box.size()) {
        ++direct[box];
      } else {
        children[box].insert(childOf(path, box));
      }
      ++members[box];
    }
    items += static_cast<int>(members.size());
    const auto gainOf = [&](const QString& box) {
      return static_cast<int>(children.value(box).size()) + direct.value(box) - 1;
    };
    // Opened at start: a box of groups (a model into its layers) with few
    // nodes of its own, or of at most two nodes. A box of its own nodes is
    // where a layer's internals would spill out: it opens when asked.
    std::vector<std::pair<int, QString>> boxes;
    int grown = items;
    for (auto it = members.cbegin(); it != members.cend(); ++it) {
      if (it.value() > 2 && (!children.contains(it.key()) || direct.value(it.key()) > 4)) continue;
      grown += gainOf(it.key());
      boxes.emplace_back(it.value(), it.key());
    }
    if (boxes.empty()) break;
    if (grown <= budget) {
      for (const auto& [count, box] : boxes) state.expanded.insert(box);
      continue;
    }
    // Not the whole level: its largest groups first, while they fit; boxes
    // the size of the first that does not fit stay closed too, so that the
    // layers of a model open all or none.
    std::sort(boxes.begin(), boxes.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::vector<std::pair<int, QString>> opened;
    QSet<int> closedSizes;
    for (const auto& [count, box] : boxes) {
      if (closedSizes.contains(count)) continue;
      const int gain = gainOf(box);
      if (items + gain <= budget) {
        items += gain;
        opened.emplace_back(count, box);
        continue;
      }
      closedSizes.insert(count);
      for (auto it = opened.begin(); it != opened.end();) {
        if (it->first != count) {
          ++it;
          continue;
        }
        items -= gainOf(it->second);
        it = opened.erase(it);
      }
    }
    for (const auto& [count, box] : opened) state.expanded.insert(box);
    break;
  }
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

  const std::vector<QString> paths = groupPaths(graph);
  QHash<QString, int> boxOfScope;
  std::vector<std::array<int, static_cast<int>(OpKind::NUM_KINDS)>> kindCounts;
  for (int v = 0; v < n; ++v) {
    if (!shown[v]) continue;
    const pb::IrNode& node = graph.nodes(v);
    const QString& scope = paths[v];
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
    item.subtitle = item.members.size() == 1 ? QStringLiteral("1 node")
                                             : QStringLiteral("%1 nodes").arg(item.members.size());
    const QString first = item.scope.section(QLatin1Char('.'), 0, 0);
    if (isLineLabel(first)) {
      // A group of ops outside every module: named by the module they
      // belong to, the line that traced them beside the node count (the
      // title alone would read as the forward module itself).
      const QString module = item.scope.section(QLatin1Char('.'), 1);
      item.title = module.isEmpty() ? first : module;
      // "line 81" fits beside the count; the file is in the tooltip.
      const qsizetype colon = first.lastIndexOf(QLatin1Char(':'));
      item.subtitle += QStringLiteral(" · ") + (colon < 0 ? first : QObject::tr("line %1").arg(first.mid(colon + 1)));
      item.tooltip = QObject::tr(
                         "%1 traced at %2 outside any module call (a backward pass, an optimizer "
                         "update, a loss)%3")
                         .arg(item.subtitle.section(QStringLiteral(" · "), 0, 0), first,
                              module.isEmpty() ? QString()
                                               : QObject::tr(", grouped by the module whose parameters, "
                                                             "activations or updates they work on: %1")
                                                     .arg(module));
    } else {
      item.tooltip = QObject::tr("Scope %1: %2").arg(item.scope, item.subtitle);
    }
  }

  // Items in order of their last node, not their first: a group holds graph
  // inputs that come early in post-order (a parameter, a clip threshold)
  // but everything it reads comes before its last node, so edges between
  // groups run forward in this order and the layout draws them downwards.
  std::vector<int> order(out.items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&out](int a, int b) { return out.items[a].members.back() < out.items[b].members.back(); });
  std::vector<int> position(order.size());
  std::vector<OutlineItem> sorted;
  sorted.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = static_cast<int>(i);
    sorted.push_back(std::move(out.items[order[i]]));
  }
  out.items = std::move(sorted);
  for (int& item : out.itemOfNode) {
    if (item >= 0) item = position[item];
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
