// The live progress of `lazyscope run` on stderr: step, steps/s, the loss (or
// the last logged scalar), compiles and fallbacks so far. On a terminal one
// line redrawn in place a few times a second and cleared before the script's
// own output; otherwise a plain line every few seconds, for logs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "lazyscope/events.pb.h"

namespace lazyscope::runner {

struct ProgressCounts {
  int64_t steps = 0;       // steps finished (replica 0)
  int64_t last_step = -1;  // the number of the last one, as the script counts (from 0); -1: none yet
  double steps_per_s = 0;
  std::string scalar_name;  // empty: nothing logged yet
  double scalar_value = 0;
  int64_t compiles = 0;
  int64_t fallbacks = 0;
  double elapsed_s = 0;
};

// One line of text, without a newline; cut to `width` characters (0: no limit)
// so that a redraw never wraps onto a second terminal line.
std::string format_progress(const ProgressCounts& counts, size_t width = 0);

class Progress {
 public:
  enum class Mode { kOff, kLive, kPeriodic };

  // Writes to file descriptor `fd` (stderr), from a thread of its own.
  Progress(Mode mode, double every_s, int fd = 2);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // On the thread that publishes the event; cheap (atomics, and a lock for a scalar).
  void on_event(const pb::Event& event);

  // Around each write of the script's output to the terminal: the live line
  // is cleared first and not redrawn until the text is written. `ends_line`:
  // the text ends with a newline (the cursor is back at a line start).
  // Every begin_output() must be followed by end_output() (OutputGuard).
  void begin_output();
  void end_output(const std::string& stream, bool ends_line);

  // Clears the live line and stops drawing; idempotent.
  void stop();

 private:
  void loop();
  ProgressCounts counts_now();
  void draw_locked(const std::string& line);
  void clear_locked();

  const Mode mode_;
  const std::chrono::duration<double> every_;
  const int fd_;
  const std::chrono::steady_clock::time_point started_;

  std::atomic<int64_t> steps_{0};
  std::atomic<int64_t> last_step_{-1};
  std::atomic<int64_t> compiles_{0};
  std::atomic<int64_t> fallbacks_{0};
  std::mutex scalar_mutex_;
  std::string scalar_name_;
  double scalar_value_ = 0;

  // steps/s over the last window of about a second.
  std::chrono::steady_clock::time_point window_start_;
  int64_t window_steps_ = 0;
  double rate_ = 0;

  // Held while drawing and while the script's output is written.
  std::mutex screen_mutex_;
  bool drawn_ = false;         // a live line is on screen
  bool at_line_start_ = true;  // the script's last output ended a line
  bool writing_ = false;

  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lazyscope::runner
