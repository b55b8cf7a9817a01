// Short, human-readable renderings of times and durations for tables.
#pragma once

#include <QString>
#include <cstdint>

namespace lazyscope::gui {

// A wall-clock duration: "850 ms", "12.3 s", "4 min 05 s", "2 h 07 min".
QString formatDuration(double ms);

// A step or kernel time with three significant digits: "0.412 ms",
// "3.42 ms", "42.1 ms", "512 ms", "1.23 s"; below 0.1 ms in microseconds:
// "23.0 µs", "0.400 µs".
QString formatStepTime(double ms);

// Unix milliseconds as local time, "2024-05-01 14:03:22"; empty for 0.
QString formatTimestamp(int64_t unix_ms);

// "+" or "−" (U+2212, as typeset minus) before a signed change, "" for 0:
// every delta the Compare view shows is written as sign + magnitude.
QString signOf(double value);

// "4.0 KiB", "1.5 MiB": byte counts as a person reads them.
QString formatBytes(int64_t bytes);

// A round tick interval (1, 2 or 5 times a power of ten) that gives about
// `targetTicks` ticks over `span`.
double niceInterval(double span, int targetTicks);

// A value axis from 0 to at least `max` in round steps: ticks at 0,
// interval, 2 interval, ... up to top (a multiple of interval), so that no
// label reads 4.33 or 8.67.
struct NiceAxis {
  double interval = 1.0;
  double top = 1.0;
};
NiceAxis niceAxis(double max, int targetTicks);

}  // namespace lazyscope::gui
