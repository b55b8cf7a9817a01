#include "run_command.h"
#include "run_info.h"

#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "analysis/diagnosis.h"
#include "core/device.h"
#include "db/history_file.h"
#include "events/event_bus.h"
#include "launch.h"
#include "progress.h"
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

struct ScriptOutcome {
  pb::RunStatus status = pb::RUN_STATUS_SUCCEEDED;
  int exit_code = 0;
  std::string error;
  std::string traceback;
};

// Collects what the script prints into the recorder's output chunks. Writes
// are coalesced per stream up to the end of a line (print() writes its
// arguments, separators and newline one by one), so that a chunk is usually
// a line and stdout and stderr stay interleaved in the order they came. Only
// called with the GIL held, which serializes it.
class OutputCapture {
 public:
  // A null recorder: a launcher's worker, whose output the launcher records.
  explicit OutputCapture(storage::Recorder* recorder) : recorder_(recorder) {}

  void write(const std::string& stream, const std::string& text) {
    if (recorder_ == nullptr || text.empty()) return;
    if (stream != pending_stream_) flush();
    pending_stream_ = stream;
    pending_ += text;
    if (pending_.back() == '\n' || pending_.size() >= kMaxChunk) flush();
  }

  void flush() {
    if (recorder_ == nullptr || pending_.empty()) return;
    recorder_->record_output(pending_stream_, std::move(pending_));
    pending_.clear();
  }

  // Flushes and stops recording: the script may keep a reference to a tee
  // (a logging handler) that writes after the recorder is gone.
  void detach() {
    flush();
    recorder_ = nullptr;
  }

 private:
  static constexpr size_t kMaxChunk = 64 * 1024;
  storage::Recorder* recorder_;
  std::string pending_stream_;
  std::string pending_;
};

// Holds the progress line off the screen while one write of the script's
// output reaches it, even when the write raises.
class OutputGuard {
 public:
  OutputGuard(Progress& progress, const std::string& stream, bool ends_line)
      : progress_(progress), stream_(stream), ends_line_(ends_line) {
    // Wait for the screen without the GIL: the replica thread holding the
    // screen is inside stream.write(), which releases the GIL and needs it
    // back to finish; waiting with the GIL held deadlocked two printing
    // replicas.
    py::gil_scoped_release release;
    progress_.begin_output();
  }
  ~OutputGuard() { progress_.end_output(stream_, ends_line_); }
  OutputGuard(const OutputGuard&) = delete;
  OutputGuard& operator=(const OutputGuard&) = delete;

 private:
  Progress& progress_;
  const std::string& stream_;
  bool ends_line_;
};

// Replaces sys.stdout and sys.stderr with tees whose write() is
// _lazyscope_write (C++, below) bound to the real stream, and turns SIGTERM
// into a KeyboardInterrupt so that the run ends as interrupted with its events
// stored.
constexpr const char* kInstallCapture = R"py(
import functools
import signal
import sys

class _LazyscopeTee:
    def __init__(self, stream, name):
        self._stream = stream
        self.write = functools.partial(_lazyscope_write, stream, name)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)

def _lazyscope_on_sigterm(signum, frame):
    _lazyscope_terminated()
    raise KeyboardInterrupt("terminated by SIGTERM")

_lazyscope_real_streams = (sys.stdout, sys.stderr)
sys.stdout = _LazyscopeTee(sys.stdout, "stdout")
sys.stderr = _LazyscopeTee(sys.stderr, "stderr")
signal.signal(signal.SIGTERM, _lazyscope_on_sigterm)
)py";

constexpr const char* kRemoveCapture = R"py(
import sys
sys.stdout.flush()
sys.stderr.flush()
sys.stdout, sys.stderr = _lazyscope_real_streams
# The engine's final metrics, for the run's metrics report: published while
# the recorder still listens (an atexit hook would run after it stopped).
# Only when the script used the engine, and only an engine that has it.
_lazyscope_engine = sys.modules.get("lazyscope._C")
if _lazyscope_engine is not None and hasattr(_lazyscope_engine, "publish_metric_snapshot"):
    _lazyscope_engine.publish_metric_snapshot()
)py";

// SystemExit carries the script's exit code (None means 0; a string is
// printed and means 1), as with `python script.py`.
int exit_code_of(const py::object& code) {
  if (code.is_none()) return 0;
  if (py::isinstance<py::int_>(code)) return code.cast<int>();
  py::print(code, py::arg("file") = py::module_::import("sys").attr("stderr"));
  return 1;
}

ScriptOutcome run_script_file(const RunOptions& options, const bool& terminated) {
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
    // The first frames are runpy's, which ran the script: the user's
    // traceback starts at the script.
    py::object tb = e.trace();
    const std::string runpy_file = py::module_::import("runpy").attr("__file__").cast<std::string>();
    while (!tb.is_none()) {
      const std::string file = tb.attr("tb_frame").attr("f_code").attr("co_filename").cast<std::string>();
      if (file != "<frozen runpy>" && file != runpy_file) break;
      tb = tb.attr("tb_next");
    }
    py::list lines = traceback.attr("format_exception")(e.type(), e.value(), tb);
    for (auto line : lines) outcome.traceback += line.cast<std::string>();
    outcome.error = py::str(e.value()).cast<std::string>();
    const std::string type_name = e.type().attr("__name__").cast<std::string>();
    outcome.error = outcome.error.empty() ? type_name : type_name + ": " + outcome.error;
    outcome.status = interrupted ? pb::RUN_STATUS_INTERRUPTED : pb::RUN_STATUS_FAILED;
    // 128 + the signal, as a shell reports a process killed by it.
    outcome.exit_code = !interrupted ? 1 : terminated ? 128 + SIGTERM : 128 + SIGINT;
  }
  return outcome;
}

// Runs the script with its output captured into `recorder`; the traceback of
// a failure is printed on stderr and recorded as output too.
ScriptOutcome run_in_interpreter(const RunOptions& options, storage::Recorder* recorder, Progress& progress) {
  auto capture = std::make_shared<OutputCapture>(recorder);
  auto terminated = std::make_shared<bool>(false);
  py::dict scope;
  scope["__builtins__"] = py::module_::import("builtins");
  // A tee's write(): records, then writes through to the real stream, flushing
  // at each newline so that output shows live even through a pipe. In C++ so
  // that no signal handler (Ctrl-C) runs between recording and showing.
  // The progress line is cleared before the text reaches the terminal and
  // redrawn after it (by the progress thread), never inside a line.
  Progress* shown = &progress;
  scope["_lazyscope_write"] = py::cpp_function(
      [capture, shown](const py::object& stream, const std::string& name, const py::object& text) -> py::object {
        if (!py::isinstance<py::str>(text)) return stream.attr("write")(text);  // its TypeError
        // Lone surrogates cannot be UTF-8: record them replaced rather than fail the print.
        const std::string utf8 = text.attr("encode")("utf-8", "replace").cast<std::string>();
        capture->write(name, utf8);
        OutputGuard guard(*shown, name, !utf8.empty() && utf8.back() == '\n');
        py::object written = stream.attr("write")(text);
        if (utf8.find('\n') != std::string::npos) stream.attr("flush")();
        return written;
      });
  scope["_lazyscope_terminated"] = py::cpp_function([terminated] { *terminated = true; });
  py::exec(kInstallCapture, scope);

  ScriptOutcome outcome = run_script_file(options, *terminated);
  progress.stop();  // before the traceback and the summary
  try {
    py::exec(kRemoveCapture, scope);
  } catch (py::error_already_set&) {
    // The script closed the streams itself, or a late Ctrl-C: keep what is left.
  }
  if (!outcome.traceback.empty()) {
    std::cerr << outcome.traceback << std::flush;
    capture->write("stderr", outcome.traceback);
  }
  capture->detach();
  // A SIGTERM from now on (while the summary is printed) ends the process.
  std::signal(SIGTERM, SIG_DFL);
  return outcome;
}

}  // namespace

void print_finished_run(const std::string& history, int64_t run_id, const std::string& note) {
  try {
    storage::HistoryReader reader(history);
    if (auto data = storage::load_run_data(reader, run_id, storage::CompileIr::kForDiagnosis)) {
      pb::RunReport report;
      for (auto& replica : storage::replica_stats(data->step_times)) *report.add_replicas() = std::move(replica);
      for (auto& finding : storage::diagnose(*data)) *report.add_findings() = std::move(finding);
      std::cout << "\nlazyscope: " << format_summary(data->summary, TracebackAt::kAbove) << note << "  history      "
                << history << "\n"
                << format_replicas(report) << format_findings(report.findings(), data->summary.run().status());
    }
  } catch (const storage::HistoryError& e) {
    std::cerr << "lazyscope run: the run finished but its summary could not be read: " << e.what() << "\n";
  }
}

int run_script(const RunOptions& options) {
  std::error_code error;
  if (fs::is_directory(options.script, error)) {
    std::cerr << "lazyscope run: " << options.script << " is a folder, not a script (name a .py file)\n";
    return 2;
  }
  if (!fs::is_regular_file(options.script, error)) {
    std::cerr << "lazyscope run: no such script: " << options.script << "\n";
    return 2;
  }
  // Before the interpreter starts: the engine reads its settings once.
  const std::map<std::string, std::string> settings = engine_settings(options);
  apply_engine_settings(settings);
  if (options.device_count > 0) set_lazy_device_count(options.device_count);
  const std::string history = options.history_path.empty() ? storage::default_history_path() : options.history_path;
  const std::string script_text = read_file(options.script);

  py::scoped_interpreter interpreter;
  if (const int event_fd = worker_event_fd(); event_fd >= 0) {
    // A worker of `run --nproc-per-node`: its events go to the launcher,
    // which records the one run; its output reaches the launcher's pipes.
    WorkerEventStream stream(event_fd);
    Progress quiet(Progress::Mode::kOff, options.progress_every_s);
    const int subscription = events::subscribe([&stream](const pb::Event& e) { stream.write(e); });
    const ScriptOutcome outcome = run_in_interpreter(options, nullptr, quiet);
    events::unsubscribe(subscription);
    std::fflush(stdout);
    return outcome.exit_code;
  }
  const pb::RunInfo info = new_run_info(options, script_text, settings, lazy_device_count());

  std::unique_ptr<storage::Recorder> recorder;
  try {
    recorder = std::make_unique<storage::Recorder>(history, info);
  } catch (const storage::HistoryError& e) {
    std::cerr << "lazyscope run: cannot record into the history: " << e.what() << "\n";
    return 2;
  }
  const Progress::Mode mode = options.quiet             ? Progress::Mode::kOff
                              : ::isatty(STDERR_FILENO) ? Progress::Mode::kLive
                                                        : Progress::Mode::kPeriodic;
  Progress progress(mode, options.progress_every_s);
  // Taking: the recorder keeps the engine's event instead of a copy (issue 15).
  const int subscription = events::subscribe_taking([&recorder, &progress](pb::Event&& e) {
    progress.on_event(e);
    recorder->record(std::move(e));
  });
  const ScriptOutcome outcome = run_in_interpreter(options, recorder.get(), progress);
  events::unsubscribe(subscription);
  std::fflush(stdout);
  recorder->finish(outcome.status, outcome.exit_code, outcome.error, outcome.traceback);
  const int64_t run_id = recorder->run_id();
  recorder.reset();

  print_finished_run(history, run_id);
  return outcome.exit_code;
}

}  // namespace lazyscope::runner
