// `lazyscope runs [--status S] [--name TEXT] [--tag TAG] [--since WHEN] [--json]`
#include <ctime>
#include <iostream>
#include <stdexcept>

#include "cli_args.h"
#include "commands.h"
#include "db/run_liveness.h"
#include "query/history_reader.h"
#include "summary_format.h"

namespace lazyscope::runner {
namespace {

pb::RunStatus parse_status(const std::string& name) {
  for (int value = pb::RUN_STATUS_RUNNING; value <= pb::RUN_STATUS_CRASHED; ++value) {
    if (status_name(static_cast<pb::RunStatus>(value)) == name) return static_cast<pb::RunStatus>(value);
  }
  throw std::invalid_argument("--status must be running, succeeded, failed, interrupted or crashed, got '" + name +
                              "'");
}

// "2024-05-01" (local midnight), "2024-05-01 14:30", or a span back from now:
// "30m", "12h", "7d".
int64_t parse_since(const std::string& when) {
  const int64_t now = storage::unix_now_ms();
  if (!when.empty() && std::string("mhd").find(when.back()) != std::string::npos) {
    const std::string number = when.substr(0, when.size() - 1);
    if (!number.empty() && number.find_first_not_of("0123456789") == std::string::npos && number.size() < 10) {
      const int64_t unit_ms = when.back() == 'm' ? 60'000 : when.back() == 'h' ? 3'600'000 : 86'400'000;
      return now - std::stoll(number) * unit_ms;
    }
  }
  for (const char* format : {"%Y-%m-%d %H:%M", "%Y-%m-%d"}) {
    std::tm tm{};
    const char* end = strptime(when.c_str(), format, &tm);
    if (end != nullptr && *end == '\0') {
      tm.tm_isdst = -1;
      return static_cast<int64_t>(std::mktime(&tm)) * 1000;
    }
  }
  throw std::invalid_argument(
      "--since must be a date (2024-05-01, '2024-05-01 14:30') or a span (30m, 12h, 7d), got '" + when + "'");
}

}  // namespace

int runs_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {"--json"}, {"--status", "--name", "--tag", "--since"});
  if (!args.positional.empty()) throw std::invalid_argument("unexpected argument '" + args.positional[0] + "'");
  storage::RunFilter filter;
  if (args.options.contains("--status")) filter.status = parse_status(args.option("--status"));
  filter.text = args.option("--name");
  filter.tag = args.option("--tag");
  if (args.options.contains("--since")) filter.since_unix_ms = parse_since(args.option("--since"));

  storage::HistoryReader reader(args.history);
  const auto runs = reader.list_runs(filter);
  if (args.has("--json")) {
    pb::RunList list;
    for (const auto& run : runs) {
      pb::RunSummary& summary = *list.add_runs() = run;
      summary.mutable_run()->clear_script_text();  // a list, not the scripts
      summary.mutable_run()->clear_traceback();
    }
    std::cout << to_json(list) << "\n";
    return 0;
  }
  if (runs.empty()) {
    const bool filtered = filter.status || !filter.text.empty() || !filter.tag.empty() || filter.since_unix_ms != 0;
    std::cout << "no runs" << (filtered ? " matching" : "") << " in " << args.history << "\n";
    return 0;
  }
  std::cout << format_run_header() << "\n";
  for (const auto& run : runs) std::cout << format_run_line(run) << "\n";
  return 0;
}

}  // namespace lazyscope::runner
