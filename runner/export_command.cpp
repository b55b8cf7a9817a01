// `lazyscope export RUN --chrome-trace FILE`: the run's timeline as Chrome
// trace-event JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing.
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "cli_args.h"
#include "commands.h"
#include "export/chrome_trace.h"
#include "query/history_reader.h"

namespace lazyscope::runner {

int export_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {}, {"--chrome-trace"});
  if (args.positional.size() > 1) throw std::invalid_argument("export takes one RUN, got " + args.positional[1]);
  const std::string file = args.option("--chrome-trace");
  if (file.empty()) throw std::invalid_argument("export needs --chrome-trace FILE");
  storage::HistoryReader reader(args.history);
  const int64_t run_id = resolve_run(reader, args.positional.empty() ? "last" : args.positional[0], args.history);
  const auto timeline = reader.timeline(run_id);
  if (!timeline) throw NotFound("run " + std::to_string(run_id) + " was deleted meanwhile");
  const std::string json = storage::chrome_trace_json(*timeline);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << json;
  out.close();
  if (!out) throw NotFound("cannot write " + file);
  std::cout << "wrote " << timeline->events_size() << " events of run #" << run_id << " to " << file
            << " (open it in ui.perfetto.dev)\n";
  return 0;
}

}  // namespace lazyscope::runner
