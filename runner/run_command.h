// `lazyscope run [OPTIONS] SCRIPT [--] [ARGS...]`: runs a Python training
// script with the engine available, records the run into the history, prints
// a summary, and returns the script's exit code.
#pragma once

#include <string>
#include <vector>

namespace lazyscope::runner {

struct RunOptions {
  std::string script;
  std::vector<std::string> script_args;
  std::string history_path;  // empty: the default history
  std::string name;          // empty: the script's file name without .py
  std::vector<std::string> tags;
  int device_count = 0;      // 0: keep the engine's default
};

// Parses the arguments after "run"; throws std::invalid_argument with a
// message for the user.
RunOptions parse_run_options(const std::vector<std::string>& args);

int run_script(const RunOptions& options);

}  // namespace lazyscope::runner
