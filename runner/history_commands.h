// The history commands of `lazyscope`: `runs` and `show`.
#pragma once

#include <string>
#include <vector>

namespace lazyscope::runner {

int runs_command(const std::vector<std::string>& args);
int show_command(const std::vector<std::string>& args);

}  // namespace lazyscope::runner
