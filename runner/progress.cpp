#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace lazyscope::runner {
namespace {

// At most ~5 redraws a second: enough to look live, too few to cost the run.
constexpr auto kLiveInterval = std::chrono::milliseconds(200);
// steps/s is measured over windows of this length, so it does not jitter.
constexpr auto kRateWindow = std::chrono::seconds(1);
constexpr const char* kClearLine = "\r\033[K";

std::string number(double value) {
  char buf[32];
  const double magnitude = std::fabs(value);
  if (value != 0 && (magnitude < 1e-3 || magnitude >= 1e6)) {
    std::snprintf(buf, sizeof buf, "%.3e", value);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", value);
  }
  return buf;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;  // a closed terminal: progress is not worth failing the run for
    done += static_cast<size_t>(n);
  }
}

size_t terminal_width(int fd) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) return size.ws_col - 1;
  return 0;
}

}  // namespace

std::string format_progress(const ProgressCounts& c, size_t width) {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f", c.steps_per_s);
  const auto elapsed = static_cast<int64_t>(c.elapsed_s);
  char clock[32];
  std::snprintf(clock, sizeof clock, "%lld:%02lld", static_cast<long long>(elapsed / 60),
                static_cast<long long>(elapsed % 60));
  // The last finished step's own number (the script's, counted from 0), not
  // how many finished: after step 0 the line says "step 0".
  std::string line = std::string("lazyscope: step ") +
                     (c.last_step < 0 ? std::string("-") : std::to_string(c.last_step)) + "  " + rate + " steps/s";
  if (!c.scalar_name.empty()) line += "  " + c.scalar_name + " " + number(c.scalar_value);
  line += "  compiles " + std::to_string(c.compiles) + "  fallbacks " + std::to_string(c.fallbacks) + "  " + clock;
  if (width > 0 && line.size() > width) line.resize(width);
  return line;
}

Progress::Progress(Mode mode, double every_s, int fd)
    : mode_(mode), every_(every_s), fd_(fd), started_(std::chrono::steady_clock::now()), window_start_(started_) {
  if (mode_ != Mode::kOff) thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() { stop(); }

void Progress::on_event(const pb::Event& event) {
  switch (event.kind_case()) {
    // One device's steps: with N replicas every step is published N times.
    case pb::Event::kStep:
      if (event.replica() == 0) {
        steps_.fetch_add(1, std::memory_order_relaxed);
        last_step_.store(event.step().step(), std::memory_order_relaxed);
      }
      break;
    case pb::Event::kCompile: compiles_.fetch_add(1, std::memory_order_relaxed); break;
    case pb::Event::kFallback: fallbacks_.fetch_add(1, std::memory_order_relaxed); break;
    case pb::Event::kScalar: {
      std::lock_guard lock(scalar_mutex_);
      // The loss, once logged, stays on the line; other scalars show until then.
      const bool is_loss = event.scalar().name() == "loss";
      if (is_loss || scalar_name_ != "loss") {
        scalar_name_ = event.scalar().name();
        scalar_value_ = event.scalar().value();
      }
      break;
    }
    default: break;
  }
}

ProgressCounts Progress::counts_now() {
  const auto now = std::chrono::steady_clock::now();
  ProgressCounts c;
  c.steps = steps_.load(std::memory_order_relaxed);
  c.last_step = last_step_.load(std::memory_order_relaxed);
  if (now - window_start_ >= kRateWindow) {
    const double seconds = std::chrono::duration<double>(now - window_start_).count();
    rate_ = static_cast<double>(c.steps - window_steps_) / seconds;
    window_start_ = now;
    window_steps_ = c.steps;
  }
  // Until the first window closes, the rate since the start.
  const double since_start = std::chrono::duration<double>(now - started_).count();
  c.steps_per_s = window_steps_ == 0 && window_start_ == started_ && since_start > 0
                      ? static_cast<double>(c.steps) / since_start
                      : rate_;
  c.compiles = compiles_.load(std::memory_order_relaxed);
  c.fallbacks = fallbacks_.load(std::memory_order_relaxed);
  c.elapsed_s = std::chrono::duration<double>(now - started_).count();
  std::lock_guard lock(scalar_mutex_);
  c.scalar_name = scalar_name_;
  c.scalar_value = scalar_value_;
  return c;
}

void Progress::loop() {
  const auto interval = mode_ == Mode::kLive ? std::chrono::duration<double>(kLiveInterval) : every_;
  std::unique_lock stop_lock(stop_mutex_);
  while (!stop_signal_.wait_for(stop_lock, interval, [this] { return stopping_; })) {
    const ProgressCounts counts = counts_now();
    std::lock_guard screen(screen_mutex_);
    // Never in the middle of the script's line: the next redraw comes soon.
    if (writing_ || !at_line_start_) continue;
    if (mode_ == Mode::kLive) {
      draw_locked(format_progress(counts, terminal_width(fd_)));
    } else {
      write_all(fd_, format_progress(counts) + "\n");
    }
  }
}

void Progress::draw_locked(const std::string& line) {
  write_all(fd_, std::string(kClearLine) + line);
  drawn_ = true;
}

void Progress::clear_locked() {
  if (!drawn_) return;
  write_all(fd_, kClearLine);
  drawn_ = false;
}

void Progress::begin_output() {
  if (mode_ == Mode::kOff) return;
  screen_mutex_.lock();
  writing_ = true;
  clear_locked();
}

void Progress::end_output(const std::string& stream, bool ends_line) {
  if (mode_ == Mode::kOff) return;
  // A log line goes to stderr: there only stderr's partial lines are in the way.
  if (mode_ == Mode::kLive || stream == "stderr") at_line_start_ = ends_line;
  writing_ = false;
  screen_mutex_.unlock();
}

void Progress::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_signal_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard screen(screen_mutex_);
  clear_locked();
}

}  // namespace lazyscope::runner
