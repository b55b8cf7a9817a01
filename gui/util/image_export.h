// Saving a view as an image: PNG (pixels as on screen) or SVG (vectors, for
// papers and slides), chosen by the file name's suffix.
#pragma once

#include <QString>

class QWidget;

namespace lazyscope::gui {

// Renders `widget` into `path` (.png or .svg). Returns an empty string on
// success, else a message that names the file and what went wrong.
QString exportWidgetImage(QWidget* widget, const QString& path);

// Asks for a file name (PNG or SVG) and exports `widget` there; returns the
// error message, empty when saved or cancelled. `baseName` is the suggested
// file name without suffix.
QString exportWidgetWithDialog(QWidget* widget, const QString& baseName);

}  // namespace lazyscope::gui
