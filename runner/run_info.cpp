#include "run_info.h"

#include <pybind11/embed.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lazyscope::runner {

namespace py = pybind11;
namespace fs = std::filesystem;

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {
std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}
}  // namespace

pb::RunInfo new_run_info(const RunOptions& options, const std::string& script_text,
                         const std::map<std::string, std::string>& settings, int device_count) {
  pb::RunInfo info;
  info.set_name(options.name.empty() ? fs::path(options.script).stem().string() : options.name);
  info.set_script_path(fs::absolute(options.script).string());
  info.set_script_text(script_text);
  info.set_script_sha256(
      py::module_::import("hashlib").attr("sha256")(py::bytes(script_text)).attr("hexdigest")().cast<std::string>());
  for (const auto& a : options.script_args) info.add_args(a);
  for (const auto& t : options.tags) info.add_tags(t);
  for (const auto& [name, value] : settings) (*info.mutable_settings())[name] = value;
  info.set_backend("cpu");
  info.set_device_count(device_count);
  info.set_host(host_name());
  info.set_pid(getpid());
  info.set_started_unix_ms(unix_ms());
  return info;
}

}  // namespace lazyscope::runner
