// `lazyscope graphs [RUN] [--json]`: the graphs a run (default: the last, as
// `show`) compiled or executed.
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "cli_args.h"
#include "commands.h"
#include "query/history_reader.h"
#include "summary_format.h"

namespace lazyscope::runner {
namespace {

std::string format_graphs(int64_t run_id, const pb::GraphList& list) {
  if (list.graphs_size() == 0) return "run #" + std::to_string(run_id) + " has no graphs\n";
  std::string out = "hash              nodes  first step  compiles  compile time  executions  execute time\n";
  for (const auto& graph : list.graphs()) {
    char line[256];
    std::snprintf(line, sizeof line, "%s %6d %11lld %9lld %13s %11lld %13s%s\n", hash_hex(graph.hash()).c_str(),
                  graph.node_count(), static_cast<long long>(graph.first_step()),
                  static_cast<long long>(graph.compiles()), format_duration_ms(graph.compile_ms()).c_str(),
                  static_cast<long long>(graph.executions()), format_duration_ms(graph.execute_ms()).c_str(),
                  graph.has_ir() ? "" : "  (IR not stored)");
    out += line;
  }
  return out;
}

}  // namespace

int graphs_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {"--json"}, {});
  if (args.positional.size() > 1) throw std::invalid_argument("graphs takes one RUN, got " + args.positional[1]);
  storage::HistoryReader reader(args.history);
  const int64_t run_id = resolve_run(reader, args.positional.empty() ? "last" : args.positional[0], args.history);
  pb::GraphList list;
  for (auto& graph : reader.graphs(run_id)) *list.add_graphs() = std::move(graph);
  std::cout << (args.has("--json") ? to_json(list) + "\n" : format_graphs(run_id, list));
  return 0;
}

}  // namespace lazyscope::runner
