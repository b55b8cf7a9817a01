// default_history_path(), declared in history_file.h.
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "db/history_file.h"

namespace lazyscope::storage {
namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string home_folder() {
  std::string home = environment("HOME");
  if (!home.empty()) return home;
  // No $HOME (a service, a stripped environment): ask the password database.
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr) {
    return found->pw_dir;
  }
  return ".";
}

}  // namespace

std::string default_history_path() {
  std::string explicit_path = environment("LAZYSCOPE_HISTORY");
  if (!explicit_path.empty()) return explicit_path;
  // The XDG base directory spec says to ignore a relative XDG_DATA_HOME.
  const std::string data_home = environment("XDG_DATA_HOME");
  const std::string base = (!data_home.empty() && data_home.front() == '/') ? data_home
                                                                            : home_folder() + "/.local/share";
  return base + "/lazyscope/history.sqlite";
}

}  // namespace lazyscope::storage
