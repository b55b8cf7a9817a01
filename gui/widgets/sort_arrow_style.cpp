#include "widgets/sort_arrow_style.h"

#include <QStyleOptionHeader>

namespace lazyscope::gui {

SortArrowStyle::SortArrowStyle(QObject* parent) : QProxyStyle() { setParent(parent); }

void SortArrowStyle::drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                                   const QWidget* widget) const {
  if (element == PE_IndicatorHeaderArrow) {
    if (const auto* header = qstyleoption_cast<const QStyleOptionHeader*>(option)) {
      QStyleOptionHeader swapped(*header);
      if (header->sortIndicator == QStyleOptionHeader::SortUp) {
        swapped.sortIndicator = QStyleOptionHeader::SortDown;
      } else if (header->sortIndicator == QStyleOptionHeader::SortDown) {
        swapped.sortIndicator = QStyleOptionHeader::SortUp;
      }
      QProxyStyle::drawPrimitive(element, &swapped, painter, widget);
      return;
    }
  }
  QProxyStyle::drawPrimitive(element, option, painter, widget);
}

}  // namespace lazyscope::gui
