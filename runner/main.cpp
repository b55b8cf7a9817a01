// lazyscope: run training scripts under the lazy-tensor engine and read the
// history of runs.
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "db/history_file.h"
#include "history_commands.h"
#include "run_command.h"

namespace {

constexpr const char* kUsage = R"(usage: lazyscope COMMAND [ARGS...]

commands:
  run [OPTIONS] SCRIPT [--] [ARGS...]   run a Python training script and record it
      --history PATH    history file (default: $LAZYSCOPE_HISTORY or the XDG data folder)
      --name NAME       run name (default: the script's file name)
      --tag TAG         tag the run (repeatable)
      --devices N       number of lazy devices (default 1)
  runs [--history PATH]                 list the recorded runs, newest first
  show [RUN|last] [--history PATH]      summary of one run (default: the last one)

The exit code of `run` is the script's.
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "run") return lazyscope::runner::run_script(lazyscope::runner::parse_run_options(args));
    if (command == "runs") return lazyscope::runner::runs_command(args);
    if (command == "show") return lazyscope::runner::show_command(args);
    std::cerr << "lazyscope: unknown command '" << command << "'\n\n" << kUsage;
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "lazyscope " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const lazyscope::storage::HistoryError& e) {
    std::cerr << "lazyscope " << command << ": " << e.what() << "\n";
    return 1;
  }
}
