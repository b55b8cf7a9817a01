// `lazyscope run [OPTIONS] SCRIPT [--] [ARGS...]`: runs a Python training
// script with the engine available, records the run into the history, prints
// a summary, and returns the script's exit code.
#pragma once

#include <cstdint>
#include <string>

#include "run_options.h"

namespace lazyscope::runner {

int run_script(const RunOptions& options);

// What `run` prints when a run has ended (its own, or a launcher's job of
// worker processes): the summary, `note` (lines of its own, each ending in a
// newline), the history, a line per replica when there are several, and the
// diagnosis. A history that cannot be read is said on stderr.
void print_finished_run(const std::string& history, int64_t run_id, const std::string& note = "");

}  // namespace lazyscope::runner
