// Finds the user's source line for the engine: the innermost Python frame
// whose file is outside the lazyscope package.
#pragma once

#include <string>

namespace lazyscope::python {

// Installs the provider; frames under `package_dir` are skipped.
void install_source_provider(const std::string& package_dir);

}  // namespace lazyscope::python
