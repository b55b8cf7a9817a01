// The history commands of `lazyscope`, one file each: parsing, querying
// through the storage library, and the text (or JSON) they print.
#pragma once

#include <string>
#include <vector>

namespace lazyscope::runner {

int runs_command(const std::vector<std::string>& args);
int show_command(const std::vector<std::string>& args);
int compare_command(const std::vector<std::string>& args);
int graphs_command(const std::vector<std::string>& args);
int graph_command(const std::vector<std::string>& args);
int tag_command(const std::vector<std::string>& args);
int rename_command(const std::vector<std::string>& args);
int delete_command(const std::vector<std::string>& args);
int export_command(const std::vector<std::string>& args);
int import_command(const std::vector<std::string>& args);

}  // namespace lazyscope::runner
