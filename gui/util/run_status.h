// How a run's status reads on screen: a word and a colour. The colour is
// chosen for the palette it is drawn on, so that it stays legible on light and
// dark themes alike.
#pragma once

#include <QColor>
#include <QString>

#include "lazyscope/history.pb.h"

class QPalette;

namespace lazyscope::gui {

// "running", "succeeded", "failed", "interrupted", "crashed" ("unknown" for
// anything else, e.g. a file written by a newer LazyScope).
QString statusText(pb::RunStatus status);

// Foreground colour for `status` text drawn on `palette`'s Base colour.
QColor statusColor(pb::RunStatus status, const QPalette& palette);

// True when the palette's Base (the background of item views) is dark.
bool isDarkPalette(const QPalette& palette);

}  // namespace lazyscope::gui
