#include "executor/graph_signature.h"

#include <map>

namespace lazyscope::executor {
namespace {

std::string spec_str(const TensorSpec& s) { return std::string(dtype_name(s.dtype)) + shape_str(s.shape); }

std::string where(const SourceLocation& loc) { return loc.known() ? " (" + loc.str() + ")" : ""; }

// Ops added (positive) or removed (negative) between two graphs.
std::map<std::string, int> op_delta(const GraphSignature& now, const GraphSignature& before) {
  std::map<std::string, int> delta;
  for (const auto& n : now.nodes) ++delta[std::string(op_name(n.op))];
  for (const auto& n : before.nodes) --delta[std::string(op_name(n.op))];
  std::erase_if(delta, [](const auto& kv) { return kv.second == 0; });
  return delta;
}

std::string structure_text(const GraphSignature& now, const GraphSignature& before) {
  const auto delta = op_delta(now, before);
  const long diff = static_cast<long>(now.nodes.size()) - static_cast<long>(before.nodes.size());
  std::string added, removed;
  for (const auto& [op, n] : delta) {
    std::string& list = n > 0 ? added : removed;
    list += (list.empty() ? "" : ", ") + op + (std::abs(n) > 1 ? " x" + std::to_string(std::abs(n)) : "");
  }
  // The first node that differs in op tells the user where the graph changed.
  SourceLocation at;
  const size_t common = std::min(now.nodes.size(), before.nodes.size());
  for (size_t i = 0; i < common && !at.known(); ++i) {
    if (now.nodes[i].op != before.nodes[i].op) at = now.nodes[i].source;
  }
  if (!at.known() && now.nodes.size() > common) at = now.nodes[common].source;
  std::string text = (diff >= 0 ? "+" : "") + std::to_string(diff) + " nodes";
  if (!added.empty()) text += " (added " + added + ")";
  if (!removed.empty()) text += " (removed " + removed + ")";
  if (at.known()) text += " at " + at.str();
  return text;
}

}  // namespace

GraphSignature make_signature(const GraphView& graph, uint64_t hash) {
  GraphSignature sig;
  sig.hash = hash;
  sig.nodes.reserve(graph.nodes.size());
  std::vector<int> parameter_of(graph.nodes.size(), -1);
  for (size_t p = 0; p < graph.parameters.size(); ++p) parameter_of[graph.parameters[p]] = static_cast<int>(p);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node* n = graph.nodes[i];
    sig.nodes.push_back({n->op(), n->spec(), parameter_of[i], n->source()});
  }
  return sig;
}

CompileReason explain_recompile(const GraphSignature& now, const GraphSignature* previous, bool was_evicted) {
  if (was_evicted) {
    return {pb::COMPILE_REASON_EVICTED,
            "compiled before, but evicted from the compile cache (raise LAZYSCOPE_COMPILE_CACHE_SIZE)", 0};
  }
  if (!previous) return {pb::COMPILE_REASON_FIRST_SIGHT, "first sight: no earlier graph from this call site", 0};

  CompileReason r;
  r.compared_with = previous->hash;
  bool same_ops = now.nodes.size() == previous->nodes.size();
  for (size_t i = 0; same_ops && i < now.nodes.size(); ++i) {
    same_ops = now.nodes[i].op == previous->nodes[i].op &&
               now.nodes[i].parameter_index == previous->nodes[i].parameter_index;
  }
  if (!same_ops) {
    r.kind = pb::COMPILE_REASON_STRUCTURE;
    r.text = structure_text(now, *previous);
    return r;
  }
  // Same structure: an input's spec changed (that is what changes the rest).
  for (size_t i = 0; i < now.nodes.size(); ++i) {
    const NodeSignature& a = previous->nodes[i];
    const NodeSignature& b = now.nodes[i];
    if (b.parameter_index < 0 || (a.spec.shape == b.spec.shape && a.spec.dtype == b.spec.dtype)) continue;
    const std::string input = "input " + std::to_string(b.parameter_index) + where(b.source);
    if (a.spec.dtype != b.spec.dtype) {
      r.kind = pb::COMPILE_REASON_DTYPE;
      r.text = input + " dtype " + std::string(dtype_name(a.spec.dtype)) + " -> " +
               std::string(dtype_name(b.spec.dtype));
    } else {
      r.kind = pb::COMPILE_REASON_SHAPE;
      r.text = input + " shape " + shape_str(a.spec.shape) + " -> " + shape_str(b.spec.shape);
    }
    return r;
  }
  // Inputs identical: an attribute or an output spec differs.
  for (size_t i = 0; i < now.nodes.size(); ++i) {
    if (now.nodes[i].spec.shape != previous->nodes[i].spec.shape ||
        now.nodes[i].spec.dtype != previous->nodes[i].spec.dtype) {
      r.kind = pb::COMPILE_REASON_STRUCTURE;
      r.text = "node " + std::to_string(i) + " " + std::string(op_name(now.nodes[i].op)) + where(now.nodes[i].source) +
               " " + spec_str(previous->nodes[i].spec) + " -> " + spec_str(now.nodes[i].spec);
      return r;
    }
  }
  r.kind = pb::COMPILE_REASON_STRUCTURE;
  r.text = "an op attribute or the set of outputs changed";
  return r;
}

}  // namespace lazyscope::executor
