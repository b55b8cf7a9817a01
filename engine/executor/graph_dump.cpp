#include "executor/graph_dump.h"

#include <concepts>
#include <cstdio>
#include <map>

namespace lazyscope::executor {
namespace {

// Concatenation by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on
// chains of std::string temporaries built with operator+.
void append(std::string& out, const std::string& text) { out += text; }
void append(std::string& out, const char* text) { out += text; }
void append(std::string& out, std::integral auto number) { out += std::to_string(number); }

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (append(out, parts), ...);
  return out;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string shape_text(const pb::IrNode& node) {
  std::string text = "[";
  for (int i = 0; i < node.shape_size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(node.shape(i));
  }
  return text + "]";
}

std::string source_text(const pb::IrNode& node) {
  if (node.source().file().empty()) return "";
  const std::string& file = node.source().file();
  const auto slash = file.find_last_of('/');
  return cat(slash == std::string::npos ? file : file.substr(slash + 1), ":", node.source().line());
}

// Quotes escaped; "\n" stays a DOT line break inside labels.
std::string dot_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string graph_text(const pb::IrGraph& graph) {
  std::string out = cat("graph ", hex(graph.hash()), ": ", graph.nodes_size(), " nodes, ", graph.parameter_count(),
                        " parameters\n");
  for (const pb::IrNode& node : graph.nodes()) {
    std::string line = cat("  %", node.id(), " = ", node.op(), "(");
    for (int i = 0; i < node.operands_size(); ++i) {
      if (i > 0) line += ", ";
      line += cat("%", node.operands(i));
    }
    line += ")";
    if (node.parameter_index() >= 0) line += cat(" parameter ", node.parameter_index());
    line += cat(" : ", node.dtype(), shape_text(node));
    // attrs is a protobuf map (unordered): sort for a stable listing.
    const std::map<std::string, std::string> attrs(node.attrs().begin(), node.attrs().end());
    for (const auto& [name, value] : attrs) line += cat(" ", name, "=", value);
    if (!node.scope().empty()) line += cat("  scope ", node.scope());
    if (const std::string src = source_text(node); !src.empty()) line += cat("  at ", src);
    out += line;
    out += "\n";
  }
  out += "  outputs:";
  for (int o : graph.outputs()) out += cat(" %", o);
  out += "\n";
  return out;
}

std::string graph_dot(const pb::IrGraph& graph) {
  std::string out = cat("digraph \"", hex(graph.hash()), "\" {\n  node [shape=box, fontname=\"monospace\"];\n");
  for (const pb::IrNode& node : graph.nodes()) {
    std::string label = cat(node.op(), "\\n", node.dtype(), shape_text(node));
    if (!node.scope().empty()) label += cat("\\n", node.scope());
    if (const std::string src = source_text(node); !src.empty()) label += cat("\\n", src);
    out += cat("  n", node.id(), " [label=\"", dot_escaped(label), "\"",
               node.parameter_index() >= 0 ? ", style=filled, fillcolor=lightgrey" : "", "];\n");
  }
  for (const pb::IrNode& node : graph.nodes()) {
    for (int operand : node.operands()) out += cat("  n", operand, " -> n", node.id(), ";\n");
  }
  out += "}\n";
  return out;
}

}  // namespace lazyscope::executor
