// `lazyscope graph RUN GRAPH [--format text|dot|proto] [--json]`: one graph's
// IR as a node listing with its lowered program, as Graphviz dot, or as
// protobuf text format (--json: protobuf JSON).
#include <google/protobuf/text_format.h>

#include <iostream>
#include <stdexcept>

#include "cli_args.h"
#include "commands.h"
#include "lazyscope/ir_format.h"
#include "query/history_reader.h"

namespace lazyscope::runner {
namespace {

// The shared IR listing, with the bare hash users pass back to the CLI.
const ir_format::Options kCliFormat{.hash_prefix = ""};

std::string format_text(const pb::IrGraph& graph, const std::string& program) {
  std::string out = ir_format::text(graph, kCliFormat);
  if (program.empty()) return out;
  out += "\nprogram:\n";
  out += program;
  if (!program.ends_with('\n')) out += "\n";
  return out;
}

}  // namespace

int graph_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {"--json"}, {"--format"});
  if (args.positional.size() != 2)
    throw std::invalid_argument("graph needs a RUN and a GRAPH (a hash from `lazyscope graphs RUN`)");
  const std::string format = args.option("--format", "text");
  if (format != "text" && format != "dot" && format != "proto") {
    throw std::invalid_argument("--format must be text, dot or proto, got '" + format + "'");
  }
  storage::HistoryReader reader(args.history);
  const int64_t run_id = resolve_run(reader, args.positional[0], args.history);
  const uint64_t hash = resolve_graph(reader, run_id, args.positional[1]);
  const auto graph = reader.graph_ir(run_id, hash);
  if (!graph) {
    throw NotFound("run " + std::to_string(run_id) + " executed graph " + hash_hex(hash) + " but did not store its IR");
  }
  if (args.has("--json")) {
    std::cout << to_json(*graph) << "\n";
  } else if (format == "dot") {
    std::cout << ir_format::dot(*graph, kCliFormat);
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
