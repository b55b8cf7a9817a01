// `lazyscope export RUN --chrome-trace FILE`: the run's timeline as Chrome
// trace-event JSON, for Perfetto (ui.perfetto.dev) or chrome://tracing.
// `lazyscope export RUN --bundle FILE`: the whole run as one file that
// `lazyscope import` adds to another history.
// `lazyscope import FILE`: adds such a bundle to the history as a new run.
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "cli_args.h"
#include "commands.h"
#include "export/chrome_trace.h"
#include "export/run_bundle.h"
#include "query/history_reader.h"
#include "recorder/run_import.h"

namespace lazyscope::runner {
namespace {

void export_bundle(const storage::HistoryReader& reader, int64_t run_id, const std::string& file) {
  auto bundle = reader.run_bundle(run_id);
  if (!bundle) throw NotFound("run " + std::to_string(run_id) + " was deleted meanwhile");
  if (bundle->run().status() == pb::RUN_STATUS_RUNNING) {
    throw NotFound("run #" + std::to_string(run_id) + " is still recording; export it once it has ended");
  }
  const int events = bundle->events_size();
  storage::write_run_bundle_file(std::move(*bundle), file);
  std::cout << "wrote run #" << run_id << " (" << events << " events) to " << file << " (`lazyscope import " << file
            << "` adds it to another history)\n";
}

void export_chrome_trace(const storage::HistoryReader& reader, int64_t run_id, const std::string& file) {
  const auto timeline = reader.timeline(run_id);
  if (!timeline) throw NotFound("run " + std::to_string(run_id) + " was deleted meanwhile");
  const storage::ChromeTrace trace = storage::chrome_trace(*timeline);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << trace.json;
  out.close();
  if (!out) throw NotFound("cannot write " + file);
  std::cout << "wrote " << trace.event_count << " trace events of run #" << run_id << " to " << file
            << " (open it in ui.perfetto.dev)\n";
}

}  // namespace

int export_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {}, {"--chrome-trace", "--bundle"});
  if (args.positional.size() > 1) throw std::invalid_argument("export takes one RUN, got " + args.positional[1]);
  const std::string trace_file = args.option("--chrome-trace");
  const std::string bundle_file = args.option("--bundle");
  if (trace_file.empty() == bundle_file.empty()) {
    throw std::invalid_argument("export needs one of --chrome-trace FILE or --bundle FILE");
  }
  storage::HistoryReader reader(args.history);
  const int64_t run_id = resolve_run(reader, args.positional.empty() ? "last" : args.positional[0], args.history);
  if (!bundle_file.empty()) {
    export_bundle(reader, run_id, bundle_file);
  } else {
    export_chrome_trace(reader, run_id, trace_file);
  }
  return 0;
}

int import_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {}, {"--into"});
  if (args.positional.size() != 1)
    throw std::invalid_argument("import takes one FILE (a bundle from `export --bundle`)");
  const std::string& file = args.positional[0];
  // Read and checked before the history is opened: a bad file changes nothing.
  const pb::RunBundle bundle = storage::read_run_bundle_file(file);
  if (const std::string into = args.option("--into"); !into.empty()) {
    // Another node's ranks of a multi-host job, into the run of this node's.
    const int64_t run_id = resolve_run(storage::HistoryReader(args.history), into, args.history);
    storage::merge_run_bundle(args.history, run_id, bundle);
    std::cout << "merged the ranks of \"" << bundle.run().name() << "\" (" << file << ") into run #" << run_id << " of "
              << args.history << "\n";
    return 0;
  }
  const storage::ImportedRun imported = storage::import_run_bundle(args.history, bundle);
  std::cout << "imported run \"" << imported.name << "\" as run #" << imported.run_id << " into " << args.history;
  if (imported.renamed) {
    std::cout << "\n(a run named \"" << bundle.run().name() << "\" was there already, so it was named \""
              << imported.name << "\"; `lazyscope rename` changes it)";
  }
  std::cout << "\n";
  return 0;
}

}  // namespace lazyscope::runner
