#include "run_command.h"

#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "analysis/diagnosis.h"
#include "core/device.h"
#include "db/history_file.h"
#include "events/event_bus.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "summary_format.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace lazyscope::runner {
namespace {

// The Python package sits next to the binaries: <build>/bin/lazyscope and
// <build>/python/lazyscope.
fs::path python_package_root() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot locate the lazyscope executable");
  buf[n] = '\0';
  return fs::path(buf).parent_path().parent_path() / "python";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

struct ScriptOutcome {
  pb::RunStatus status = pb::RUN_STATUS_SUCCEEDED;
  int exit_code = 0;
  std::string error;
  std::string traceback;
};

// SystemExit carries the script's exit code (None means 0; a string is
// printed and means 1), as with `python script.py`.
int exit_code_of(const py::object& code) {
  if (code.is_none()) return 0;
  if (py::isinstance<py::int_>(code)) return code.cast<int>();
  py::print(code, py::arg("file") = py::module_::import("sys").attr("stderr"));
  return 1;
}

ScriptOutcome run_in_interpreter(const RunOptions& options) {
  ScriptOutcome outcome;
  try {
    py::module_ sys = py::module_::import("sys");
    py::list argv;
    argv.append(options.script);
    for (const auto& a : options.script_args) argv.append(a);
    sys.attr("argv") = argv;
    py::list path = sys.attr("path");
    path.insert(0, fs::absolute(options.script).parent_path().string());
    path.insert(0, python_package_root().string());
    py::module_::import("runpy").attr("run_path")(options.script, py::arg("run_name") = "__main__");
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_SystemExit)) {
      outcome.exit_code = exit_code_of(e.value().attr("code"));
      outcome.status = outcome.exit_code == 0 ? pb::RUN_STATUS_SUCCEEDED : pb::RUN_STATUS_FAILED;
      if (outcome.exit_code != 0) outcome.error = "SystemExit(" + std::to_string(outcome.exit_code) + ")";
      return outcome;
    }
    const bool interrupted = e.matches(PyExc_KeyboardInterrupt);
    py::module_ traceback = py::module_::import("traceback");
    py::list lines = traceback.attr("format_exception")(e.type(), e.value(), e.trace());
    for (auto line : lines) outcome.traceback += line.cast<std::string>();
    outcome.error = py::str(e.value()).cast<std::string>();
    const std::string type_name = e.type().attr("__name__").cast<std::string>();
    outcome.error = outcome.error.empty() ? type_name : type_name + ": " + outcome.error;
    std::cerr << outcome.traceback << std::flush;
    outcome.status = interrupted ? pb::RUN_STATUS_INTERRUPTED : pb::RUN_STATUS_FAILED;
    outcome.exit_code = interrupted ? 130 : 1;
  }
  return outcome;
}

}  // namespace

RunOptions parse_run_options(const std::vector<std::string>& args) {
  RunOptions o;
  size_t i = 0;
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= args.size()) throw std::invalid_argument(flag + " needs a value");
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--history") {
      o.history_path = value(a);
    } else if (a == "--name") {
      o.name = value(a);
    } else if (a == "--tag") {
      o.tags.push_back(value(a));
    } else if (a == "--devices") {
      const std::string v = value(a);
      try {
        o.device_count = std::stoi(v);
      } catch (const std::exception&) {
        o.device_count = 0;
      }
      if (o.device_count < 1) throw std::invalid_argument("--devices needs a positive number, got '" + v + "'");
    } else if (a.starts_with("--") && a != "--") {
      throw std::invalid_argument("unknown option " + a);
    } else {
      break;
    }
  }
  if (i >= args.size()) throw std::invalid_argument("missing the script to run");
  o.script = args[i++];
  if (i < args.size() && args[i] == "--") ++i;
  o.script_args.assign(args.begin() + static_cast<long>(i), args.end());
  return o;
}

int run_script(const RunOptions& options) {
  if (!fs::is_regular_file(options.script)) {
    std::cerr << "lazyscope run: no such script: " << options.script << "\n";
    return 2;
  }
  if (options.device_count > 0) set_lazy_device_count(options.device_count);
  const std::string history = options.history_path.empty() ? storage::default_history_path() : options.history_path;
  const std::string script_text = read_file(options.script);

  py::scoped_interpreter interpreter;
  pb::RunInfo info;
  info.set_name(options.name.empty() ? fs::path(options.script).stem().string() : options.name);
  info.set_script_path(fs::absolute(options.script).string());
  info.set_script_text(script_text);
  info.set_script_sha256(
      py::module_::import("hashlib").attr("sha256")(py::bytes(script_text)).attr("hexdigest")().cast<std::string>());
  for (const auto& a : options.script_args) info.add_args(a);
  for (const auto& t : options.tags) info.add_tags(t);
  info.set_backend("cpu");
  info.set_device_count(lazy_device_count());
  info.set_host(host_name());
  info.set_pid(getpid());
  info.set_started_unix_ms(unix_ms());

  std::unique_ptr<storage::Recorder> recorder;
  try {
    recorder = std::make_unique<storage::Recorder>(history, info);
  } catch (const storage::HistoryError& e) {
    std::cerr << "lazyscope run: cannot record into the history: " << e.what() << "\n";
    return 2;
  }
  const int subscription = events::subscribe([&recorder](const pb::Event& e) { recorder->record(e); });
  const ScriptOutcome outcome = run_in_interpreter(options);
  events::unsubscribe(subscription);
  std::fflush(stdout);
  recorder->finish(outcome.status, outcome.exit_code, outcome.error, outcome.traceback);
  const int64_t run_id = recorder->run_id();
  recorder.reset();

  try {
    storage::HistoryReader reader(history);
    if (auto data = storage::load_run_data(reader, run_id)) {
      std::cout << "\nlazyscope: " << format_summary(data->summary) << "  history      " << history << "\n";
      google::protobuf::RepeatedPtrField<pb::Finding> findings;
      for (auto& finding : storage::diagnose(*data)) *findings.Add() = std::move(finding);
      std::cout << format_findings(findings);
    }
  } catch (const storage::HistoryError& e) {
    std::cerr << "lazyscope run: the run finished but its summary could not be read: " << e.what() << "\n";
  }
  return outcome.exit_code;
}

}  // namespace lazyscope::runner
