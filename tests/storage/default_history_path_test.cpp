#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

#include "db/history_file.h"

namespace lazyscope::storage {
namespace {

// Sets or unsets an environment variable for one test, restoring it after.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnvironment() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DefaultHistoryPath, ExplicitVariableWins) {
  ScopedEnvironment history("LAZYSCOPE_HISTORY", "/tmp/mine.sqlite");
  ScopedEnvironment data("XDG_DATA_HOME", "/srv/data");
  EXPECT_EQ(default_history_path(), "/tmp/mine.sqlite");
}

TEST(DefaultHistoryPath, XdgDataHomeNext) {
  ScopedEnvironment history("LAZYSCOPE_HISTORY", nullptr);
  ScopedEnvironment data("XDG_DATA_HOME", "/srv/data");
  EXPECT_EQ(default_history_path(), "/srv/data/lazyscope/history.sqlite");
}

TEST(DefaultHistoryPath, HomeLocalShareOtherwise) {
  ScopedEnvironment history("LAZYSCOPE_HISTORY", nullptr);
  ScopedEnvironment data("XDG_DATA_HOME", nullptr);
  ScopedEnvironment home("HOME", "/home/ada");
  EXPECT_EQ(default_history_path(), "/home/ada/.local/share/lazyscope/history.sqlite");
}

TEST(DefaultHistoryPath, EmptyOrRelativeVariablesAreIgnored) {
  ScopedEnvironment history("LAZYSCOPE_HISTORY", "");
  ScopedEnvironment data("XDG_DATA_HOME", "relative/data");  // the XDG spec says: ignore
  ScopedEnvironment home("HOME", "/home/ada");
  EXPECT_EQ(default_history_path(), "/home/ada/.local/share/lazyscope/history.sqlite");
}

}  // namespace
}  // namespace lazyscope::storage
