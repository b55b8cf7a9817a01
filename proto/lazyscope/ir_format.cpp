#include "lazyscope/ir_format.h"

#include <concepts>
#include <cstdio>
#include <map>

namespace lazyscope::ir_format {
namespace {

// Concatenation by appending: GCC 12 at -O3 warns falsely (-Wrestrict) on
// chains of std::string temporaries built with operator+.
void append(std::string& out, const std::string& part) { out += part; }
void append(std::string& out, const char* part) { out += part; }
void append(std::string& out, std::integral auto number) { out += std::to_string(number); }

template <typename... Parts> std::string cat(const Parts&... parts) {
  std::string out;
  (append(out, parts), ...);
  return out;
}

std::string hash_text(uint64_t hash, const Options& options) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(hash));
  return cat(options.hash_prefix, digits);
}

// Quotes escaped; "\n" stays a DOT line break inside labels.
std::string dot_escaped(const std::string& label) {
  std::string out;
  for (char c : label) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string shape(const pb::IrNode& node) {
  std::string out = "[";
  for (int i = 0; i < node.shape_size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(node.shape(i));
  }
  return out + "]";
}

std::string source(const pb::IrNode& node) {
  const std::string& file = node.source().file();
  if (file.empty()) return "";
  const auto slash = file.find_last_of('/');
  return cat(slash == std::string::npos ? file : file.substr(slash + 1), ":", node.source().line());
}

std::string text(const pb::IrGraph& graph, const Options& options) {
  std::string out = cat("graph ", hash_text(graph.hash(), options), ": ", graph.nodes_size(), " nodes, ",
                        graph.parameter_count(), " parameters\n");
  for (const pb::IrNode& node : graph.nodes()) {
    std::string line = cat("  %", node.id(), " = ", node.op(), "(");
    for (int i = 0; i < node.operands_size(); ++i) {
      if (i > 0) line += ", ";
      line += cat("%", node.operands(i));
    }
    line += ")";
    if (node.parameter_index() >= 0) line += cat(" parameter ", node.parameter_index());
    line += cat(" : ", node.dtype(), shape(node));
    // attrs is a protobuf map (unordered): sort for a stable listing.
    const std::map<std::string, std::string> attrs(node.attrs().begin(), node.attrs().end());
    for (const auto& [name, value] : attrs) line += cat(" ", name, "=", value);
    if (!node.scope().empty()) line += cat("  scope ", node.scope());
    if (const std::string src = source(node); !src.empty()) line += cat("  at ", src);
    out += line;
    out += "\n";
  }
  out += "  outputs:";
  for (int o : graph.outputs()) out += cat(" %", o);
  out += "\n";
  return out;
}

std::string dot(const pb::IrGraph& graph, const Options& options) {
  std::string out = cat("digraph \"", hash_text(graph.hash(), options),
                        "\" {\n  node [shape=box, fontname=\"monospace\"];\n");
  for (const pb::IrNode& node : graph.nodes()) {
    std::string label = cat(node.op(), "\\n", node.dtype(), shape(node));
    if (!node.scope().empty()) label += cat("\\n", node.scope());
    if (const std::string src = source(node); !src.empty()) label += cat("\\n", src);
    out += cat("  n", node.id(), " [label=\"", dot_escaped(label), "\"",
               node.parameter_index() >= 0 ? ", style=filled, fillcolor=lightgrey" : "", "];\n");
  }
  for (const pb::IrNode& node : graph.nodes()) {
    for (int operand : node.operands()) out += cat("  n", operand, " -> n", node.id(), ";\n");
  }
  out += "}\n";
  return out;
}

}  // namespace lazyscope::ir_format
