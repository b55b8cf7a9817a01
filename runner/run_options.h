// The options of `lazyscope run`: parsing, the help text, and the engine
// settings they turn into (environment variables the engine reads at
// start-up, so they are set before the interpreter and the engine start).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace lazyscope::runner {

struct RunOptions {
  std::string script;
  std::vector<std::string> script_args;
  std::string history_path;  // empty: the default history
  std::string name;          // empty: the script's file name without .py
  std::vector<std::string> tags;
  std::string device;    // "cpu" or "lazy"; empty: the engine's default
  int device_count = 0;  // 0: keep the engine's default
  bool bf16 = false;
  std::vector<std::string> force_fallback;  // op names
  bool quiet = false;                       // no progress line
  double progress_every_s = 10;             // when stderr is not a terminal
  bool help = false;                        // `run --help`: print kRunHelp and nothing else
  // The launcher's (launch.h): 0 processes per node means no launcher.
  int nproc_per_node = 0;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;
  int master_port = 0;
};

extern const char* const kRunHelp;

// Parses the arguments after "run"; throws std::invalid_argument with a
// message for the user. Options may come before or after SCRIPT: before
// "--", every word that is one of ours is taken as ours wherever it stands,
// the other words after SCRIPT (and all after "--") are the script's
// arguments, in order.
RunOptions parse_run_options(const std::vector<std::string>& args);

// The engine settings this run uses, by environment variable name: those the
// options set, over those inherited from the environment. Recorded in the
// run's settings, so a run can be reproduced from its history.
std::map<std::string, std::string> engine_settings(const RunOptions& options);

// Sets engine_settings() in this process's environment. Before the engine
// reads them: before the interpreter imports lazyscope.
void apply_engine_settings(const std::map<std::string, std::string>& settings);

}  // namespace lazyscope::runner
