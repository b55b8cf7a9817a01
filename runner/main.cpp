// lazyscope: run training scripts under the lazy-tensor engine and read the
// history of runs. This file is the dispatch table; each command lives in its
// own file.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_args.h"
#include "commands.h"
#include "db/history_file.h"
#include "db/protobuf_log.h"
#include "launch.h"
#include "run_command.h"

namespace {

int run(const std::vector<std::string>& args) {
  const auto options = lazyscope::runner::parse_run_options(args);
  if (options.help) {
    std::cout << lazyscope::runner::kRunHelp << "\n" << lazyscope::runner::kLaunchHelp;
    return 0;
  }
  if (options.nproc_per_node > 0) return lazyscope::runner::launch(options, args);
  return lazyscope::runner::run_script(options);
}

struct Command {
  const char* name;
  int (*main)(const std::vector<std::string>& args);
};

constexpr Command kCommands[] = {
    {"run", run},
    {"runs", lazyscope::runner::runs_command},
    {"show", lazyscope::runner::show_command},
    {"compare", lazyscope::runner::compare_command},
    {"graphs", lazyscope::runner::graphs_command},
    {"graph", lazyscope::runner::graph_command},
    {"tag", lazyscope::runner::tag_command},
    {"rename", lazyscope::runner::rename_command},
    {"delete", lazyscope::runner::delete_command},
    {"export", lazyscope::runner::export_command},
    {"import", lazyscope::runner::import_command},
};

constexpr const char* kUsage = R"(usage: lazyscope COMMAND [ARGS...]

commands:
  run SCRIPT [OPTIONS] [-- ARGS...]     run a Python training script and record it
      --history PATH    history file (default: $LAZYSCOPE_HISTORY or the XDG data folder)
      --name NAME       run name (default: the script's file name)
      --tag TAG         tag the run (repeatable)
      --device cpu|lazy the scripts' default device    --devices N  lazy devices
      --bf16            bfloat16 math                  --force-fallback OPS  ops on the host
      --quiet           no progress line               (`lazyscope run --help`: all of it)
  runs [--status S] [--name TEXT] [--tag TAG] [--since WHEN]
                                        list the recorded runs, newest first; WHEN is a
                                        date (2024-05-01) or a span (30m, 12h, 7d)
  show [RUN] [--output] [--kernels]     summary, diagnosis and compiles of a run (default: last);
                                        --output: what its script printed (stdout and stderr);
                                        --kernels: its kernels by total time, against the roofline
  compare A B                           summary deltas, graphs in one run or both, compile reasons
  graphs [RUN]                          the graphs a run compiled or executed (default: the last)
  graph RUN GRAPH [--format text|dot|proto]
                                        one graph's IR (GRAPH: a hash, or a unique prefix of at least 4 hex digits)
  tag RUN TAG... [--remove]             add (or remove) tags
  rename RUN NAME                       rename a run
  delete RUN [--yes]                    delete a run and everything recorded for it
  export RUN --chrome-trace FILE        the run's timeline as Chrome trace-event JSON (Perfetto)
  export RUN --bundle FILE              the whole run as one file, for another history
  import FILE [--into RUN]              add a run from a bundle to the history (a new id), or
                                        merge another node's ranks into RUN (multi-host runs)

RUN is a run id, a run name (the newest run of that name) or "last".
Every command takes --history PATH; the read commands take --json.
The exit code of `run` is the script's (130 after Ctrl-C, 143 after SIGTERM: the run
is recorded as interrupted). What the script prints is recorded too (`show --output`).
)";

// oneDNN's convolutions run on libgomp's threads, which by default spin for
// a while after each parallel region (OMP_WAIT_POLICY=ACTIVE behaviour),
// beside the engine's own pool: on a 2-core machine that took a core from
// every kernel that followed a convolution. libgomp reads the variable in
// its constructor, before main, and this binary links it (the script runs
// in the embedded interpreter), so `run` re-executes itself once with
// PASSIVE set when the user has not chosen a policy. Any failure to
// re-execute just runs on as before.
void passive_openmp_threads(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (::setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  ::execv("/proc/self/exe", argv);
}

}  // namespace

int main(int argc, char** argv) {
  // Protobuf's complaints become LazyScope's words (storage/db/protobuf_log.h).
  lazyscope::storage::route_protobuf_log();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string name = args[0];
  if (name == "run") passive_openmp_threads(argv);
  args.erase(args.begin());
  for (const Command& command : kCommands) {
    if (name != command.name) continue;
    try {
      return command.main(args);
    } catch (const std::invalid_argument& e) {
      std::cerr << "lazyscope " << name << ": " << e.what() << "\n";
      return 2;
    } catch (const lazyscope::runner::NotFound& e) {
      std::cerr << "lazyscope " << name << ": " << e.what() << "\n";
      return 1;
    } catch (const lazyscope::storage::HistoryError& e) {
      std::cerr << "lazyscope " << name << ": " << e.what() << "\n";
      return 1;
    }
  }
  std::cerr << "lazyscope: unknown command '" << name << "'\n\n" << kUsage;
  return 2;
}
