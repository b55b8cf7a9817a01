// Short, human-readable renderings of times and durations for tables.
#pragma once

#include <QString>
#include <cstdint>

namespace lazyscope::gui {

// A wall-clock duration: "850 ms", "12.3 s", "4 min 05 s", "2 h 07 min".
QString formatDuration(double ms);

// A step or kernel time with three significant digits: "0.412 ms",
// "3.42 ms", "42.1 ms", "512 ms", "1.23 s".
QString formatStepTime(double ms);

// Unix milliseconds as local time, "2024-05-01 14:03:22"; empty for 0.
QString formatTimestamp(int64_t unix_ms);

// "+" or "−" (U+2212, as typeset minus) before a signed change, "" for 0:
// every delta the Compare view shows is written as sign + magnitude.
QString signOf(double value);

}  // namespace lazyscope::gui
