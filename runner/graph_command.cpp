// `lazyscope graph RUN GRAPH [--format text|dot|proto] [--json]`: one graph's
// IR as a node listing with its lowered program, as Graphviz dot, or as
// protobuf text format (--json: protobuf JSON).
#include <google/protobuf/text_format.h>

#include <concepts>
#include <iostream>
#include <stdexcept>

#include "cli_args.h"
#include "commands.h"
#include "query/history_reader.h"

namespace lazyscope::runner {
namespace {

// Concatenates text and integers. (GCC 12 at -O3 warns falsely, -Wrestrict,
// on "literal" + std::string temporaries; appending avoids them.)
void append(std::string& out, const std::string& text) { out += text; }
void append(std::string& out, const char* text) { out += text; }
void append(std::string& out, std::integral auto number) { out += std::to_string(number); }

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (append(out, parts), ...);
  return out;
}

std::string shape_text(const pb::IrNode& node) {
  std::string text = "[";
  for (int i = 0; i < node.shape_size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(node.shape(i));
  }
  return text + "]";
}

std::string format_text(const pb::IrGraph& graph, const std::string& program) {
  std::string out = cat("graph ", hash_hex(graph.hash()), ": ", graph.nodes_size(), " nodes, ",
                        graph.parameter_count(), " parameters\n");
  for (const auto& node : graph.nodes()) {
    std::string line = cat("  %", node.id(), " = ", node.op(), "(");
    for (int i = 0; i < node.operands_size(); ++i) {
      if (i > 0) line += ", ";
      line += cat("%", node.operands(i));
    }
    line += ")";
    if (node.parameter_index() >= 0) line += cat(" parameter ", node.parameter_index());
    line += cat(" : ", node.dtype(), shape_text(node));
    for (const auto& [name, value] : node.attrs()) line += cat(" ", name, "=", value);
    if (!node.scope().empty()) line += cat("  scope ", node.scope());
    if (!node.source().file().empty()) line += cat("  at ", node.source().file(), ":", node.source().line());
    out += line + "\n";
  }
  out += "  outputs:";
  for (int output : graph.outputs()) out += cat(" %", output);
  out += "\n";
  if (!program.empty()) out += cat("\nprogram:\n", program, program.ends_with('\n') ? "" : "\n");
  return out;
}

// Quotes in a label are escaped; backslashes are left alone, so that the
// label's own "\n" line breaks stay DOT escapes.
std::string dot_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out;
}

std::string format_dot(const pb::IrGraph& graph) {
  std::string out = cat("digraph \"", hash_hex(graph.hash()), "\" {\n  node [shape=box, fontname=\"monospace\"];\n");
  for (const auto& node : graph.nodes()) {
    std::string label = cat(node.op(), "\\n", node.dtype(), shape_text(node));
    if (!node.source().file().empty()) label += cat("\\n", node.source().file(), ":", node.source().line());
    out += cat("  n", node.id(), " [label=\"", dot_escaped(label), "\"",
               node.parameter_index() >= 0 ? ", style=filled, fillcolor=lightgrey" : "", "];\n");
  }
  for (const auto& node : graph.nodes()) {
    for (int operand : node.operands()) {
      out += cat("  n", operand, " -> n", node.id(), ";\n");
    }
  }
  return out + "}\n";
}

}  // namespace

int graph_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {"--json"}, {"--format"});
  if (args.positional.size() != 2) throw std::invalid_argument("graph needs a RUN and a GRAPH (a hash from `lazyscope graphs RUN`)");
  const std::string format = args.option("--format", "text");
  if (format != "text" && format != "dot" && format != "proto") {
    throw std::invalid_argument("--format must be text, dot or proto, got '" + format + "'");
  }
  storage::HistoryReader reader(args.history);
  const int64_t run_id = resolve_run(reader, args.positional[0], args.history);
  const uint64_t hash = resolve_graph(reader, run_id, args.positional[1]);
  const auto graph = reader.graph_ir(run_id, hash);
  if (!graph) {
    throw NotFound("run " + std::to_string(run_id) + " executed graph " + hash_hex(hash) +
                   " but did not store its IR");
  }
  if (args.has("--json")) {
    std::cout << to_json(*graph) << "\n";
  } else if (format == "dot") {
    std::cout << format_dot(*graph);
  } else if (format == "proto") {
    std::string text;
    google::protobuf::TextFormat::PrintToString(*graph, &text);
    std::cout << text;
  } else {
    std::cout << format_text(*graph, reader.program_text(run_id, hash).value_or(""));
  }
  return 0;
}

}  // namespace lazyscope::runner
