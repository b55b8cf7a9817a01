#include "util/run_status.h"

#include <QPalette>

namespace lazyscope::gui {

QString statusText(pb::RunStatus status) {
  switch (status) {
    case pb::RUN_STATUS_RUNNING: return QStringLiteral("running");
    case pb::RUN_STATUS_SUCCEEDED: return QStringLiteral("succeeded");
    case pb::RUN_STATUS_FAILED: return QStringLiteral("failed");
    case pb::RUN_STATUS_INTERRUPTED: return QStringLiteral("interrupted");
    case pb::RUN_STATUS_CRASHED: return QStringLiteral("crashed");
    default: return QStringLiteral("unknown");
  }
}

bool isDarkPalette(const QPalette& palette) { return palette.color(QPalette::Base).lightnessF() < 0.5; }

QColor statusColor(pb::RunStatus status, const QPalette& palette) {
  // Two tones per status: a deep one with at least 4.5:1 contrast on white
  // and a light one with at least 4.5:1 on a dark grey (#2b2b2b); the test
  // checks both. Hues follow the usual traffic-light reading.
  const bool dark = isDarkPalette(palette);
  switch (status) {
    case pb::RUN_STATUS_RUNNING: return dark ? QColor(0x6c, 0xb6, 0xff) : QColor(0x0b, 0x5c, 0xc4);
    case pb::RUN_STATUS_SUCCEEDED: return dark ? QColor(0x5f, 0xd3, 0x8d) : QColor(0x1a, 0x7f, 0x37);
    case pb::RUN_STATUS_FAILED: return dark ? QColor(0xff, 0x7b, 0x72) : QColor(0xc0, 0x1c, 0x28);
    case pb::RUN_STATUS_INTERRUPTED: return dark ? QColor(0xe3, 0xb3, 0x41) : QColor(0x9a, 0x58, 0x00);
    case pb::RUN_STATUS_CRASHED: return dark ? QColor(0xd2, 0xa8, 0xff) : QColor(0x82, 0x2e, 0xc4);
    default: return palette.color(QPalette::PlaceholderText);
  }
}

}  // namespace lazyscope::gui
