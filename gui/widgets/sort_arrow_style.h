// Sort arrows that point the way the values go: ▲ for ascending, ▼ for
// descending (newest first), as GNOME and macOS draw them. Qt's QHeaderView
// asks the style for an "up" arrow when sorted descending (the Windows
// convention), so the run list sorted newest first showed ▲. A proxy of the
// application's style (whatever the colour scheme sets) that swaps the two.
#pragma once

#include <QProxyStyle>

namespace lazyscope::gui {

class SortArrowStyle : public QProxyStyle {
 public:
  // Follows the application's style; owned by `parent`.
  explicit SortArrowStyle(QObject* parent);

  void drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                     const QWidget* widget = nullptr) const override;
};

}  // namespace lazyscope::gui
