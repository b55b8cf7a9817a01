#include "util/format.h"

#include <QDateTime>
#include <QLocale>
#include <algorithm>
#include <cmath>

namespace lazyscope::gui {

QString formatDuration(double ms) {
  if (ms < 1000.0) return QStringLiteral("%1 ms").arg(std::lround(ms));
  const double seconds = ms / 1000.0;
  if (seconds < 60.0) return QStringLiteral("%1 s").arg(seconds, 0, 'f', seconds < 10.0 ? 2 : 1);
  const auto whole = static_cast<long long>(std::llround(seconds));
  if (whole < 3600) {
    return QStringLiteral("%1 min %2 s").arg(whole / 60).arg(whole % 60, 2, 10, QLatin1Char('0'));
  }
  const long long minutes = whole / 60;
  return QStringLiteral("%1 h %2 min").arg(minutes / 60).arg(minutes % 60, 2, 10, QLatin1Char('0'));
}

QString formatBytes(int64_t bytes) { return QLocale::c().formattedDataSize(bytes, 1, QLocale::DataSizeIecFormat); }

QString formatStepTime(double ms) {
  if (ms >= 1000.0) return QStringLiteral("%1 s").arg(ms / 1000.0, 0, 'f', ms < 10000.0 ? 2 : 1);
  // Below 0.1 ms three decimals of a millisecond are no longer three digits
  // (a 0.4 us transfer read "0.000 ms"): microseconds, as the CLI prints them.
  if (ms == 0.0) return QStringLiteral("0 ms");  // an axis origin, an empty segment
  if (ms > 0.0 && ms < 0.1) {
    const double us = ms * 1000.0;
    const int decimals = us < 1.0 ? 3 : us < 10.0 ? 2 : 1;
    return QStringLiteral("%1 µs").arg(us, 0, 'f', decimals);
  }
  const int decimals = ms < 1.0 ? 3 : ms < 10.0 ? 2 : ms < 100.0 ? 1 : 0;
  return QStringLiteral("%1 ms").arg(ms, 0, 'f', decimals);
}

QString formatTimestamp(int64_t unix_ms) {
  if (unix_ms <= 0) return {};
  return QDateTime::fromMSecsSinceEpoch(unix_ms).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

QString signOf(double value) { return value > 0 ? QStringLiteral("+") : value < 0 ? QStringLiteral("−") : QString(); }

double niceInterval(double span, int targetTicks) {
  const double raw = span / std::max(targetTicks, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * magnitude * (1 + 1e-9)) return m * magnitude;
  }
  return 10.0 * magnitude;
}

NiceAxis niceAxis(double max, int targetTicks) {
  if (!(max > 0.0)) max = 1.0;
  NiceAxis axis;
  axis.interval = niceInterval(max, targetTicks);
  axis.top = std::ceil(max / axis.interval * (1 - 1e-9)) * axis.interval;
  return axis;
}

}  // namespace lazyscope::gui
