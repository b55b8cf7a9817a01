// Saving a view as an image: PNG (pixels as on screen) or SVG (vectors, for
// papers and slides), chosen by the file name's suffix.
#pragma once

#include <QSize>
#include <QString>
#include <functional>

class QGraphicsScene;
class QPainter;
class QWidget;

namespace lazyscope::gui {

// Renders `widget` into `path` (.png or .svg). Returns an empty string on
// success, else a message that names the file and what went wrong.
QString exportWidgetImage(QWidget* widget, const QString& path);

// The same for a whole QGraphicsScene (the graph viewer): every item, not
// only the part scrolled into view, on the scene's background.
QString exportSceneImage(QGraphicsScene* scene, const QString& path);

// The one place that knows the formats: `paint` draws a picture of `size`
// into a painter that writes `path` (.png or .svg). The two functions above
// are this with a widget's or a scene's painting.
QString exportImage(const QSize& size, const QString& title, const QString& path,
                    const std::function<void(QPainter&)>& paint);

// Asks for a file name (PNG or SVG) and exports `widget` there; returns the
// error message, empty when saved or cancelled. `baseName` is the suggested
// file name without suffix.
QString exportWidgetWithDialog(QWidget* widget, const QString& baseName);

// Asks for a file name (PNG or SVG), empty when cancelled.
QString askImagePath(QWidget* parent, const QString& baseName);

}  // namespace lazyscope::gui
