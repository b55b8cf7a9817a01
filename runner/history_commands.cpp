#include "history_commands.h"

#include <iostream>
#include <stdexcept>

#include "db/history_file.h"
#include "query/history_reader.h"
#include "summary_format.h"

namespace lazyscope::runner {
namespace {

// Pulls "--history PATH" out of args; the rest stays positional.
std::string take_history(std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--history") {
      if (i + 1 >= args.size()) throw std::invalid_argument("--history needs a value");
      std::string path = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      return path;
    }
  }
  return storage::default_history_path();
}

}  // namespace

int runs_command(const std::vector<std::string>& raw) {
  std::vector<std::string> args = raw;
  const std::string path = take_history(args);
  storage::HistoryReader reader(path);
  const auto runs = reader.list_runs();
  if (runs.empty()) {
    std::cout << "no runs in " << path << "\n";
    return 0;
  }
  std::cout << "   id  name                     status      started             " << "\n";
  for (const auto& r : runs) std::cout << format_run_line(r) << "\n";
  return 0;
}

int show_command(const std::vector<std::string>& raw) {
  std::vector<std::string> args = raw;
  const std::string path = take_history(args);
  storage::HistoryReader reader(path);
  const std::string which = args.empty() ? "last" : args[0];
  std::optional<int64_t> id;
  if (which == "last") {
    id = reader.last_run_id();
  } else {
    try {
      id = std::stoll(which);
    } catch (const std::exception&) {
      throw std::invalid_argument("show: RUN must be a run id or 'last', got '" + which + "'");
    }
  }
  const auto summary = id ? reader.run_summary(*id) : std::nullopt;
  if (!summary) {
    std::cerr << "lazyscope show: no run " << which << " in " << path << "\n";
    return 1;
  }
  std::cout << format_summary(*summary);
  for (const auto& c : reader.compilations(*id)) {
    std::cout << "  compile at step " << c.step() << ": " << c.reason() << " (" << c.graph().nodes_size()
              << " nodes, " << format_duration_ms(static_cast<double>(c.duration_ns()) / 1e6) << ")\n";
  }
  if (!summary->run().traceback().empty()) std::cout << "\n" << summary->run().traceback();
  return 0;
}

}  // namespace lazyscope::runner
