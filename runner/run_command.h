// `lazyscope run [OPTIONS] SCRIPT [--] [ARGS...]`: runs a Python training
// script with the engine available, records the run into the history, prints
// a summary, and returns the script's exit code.
#pragma once

#include "run_options.h"

namespace lazyscope::runner {

int run_script(const RunOptions& options);

}  // namespace lazyscope::runner
