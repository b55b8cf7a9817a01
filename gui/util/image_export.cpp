#include "util/image_export.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>
#include <QWidget>

namespace lazyscope::gui {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("ImageExport", text); }

}  // namespace

QString exportWidgetImage(QWidget* widget, const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == QLatin1String("svg")) {
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(widget->size());
    generator.setViewBox(QRect(QPoint(0, 0), widget->size()));
    generator.setTitle(widget->windowTitle());
    generator.setDescription(tr("Exported from LazyScope"));
    QPainter painter;
    if (!painter.begin(&generator)) return tr("Could not write %1.").arg(QDir::toNativeSeparators(path));
    widget->render(&painter, QPoint(), QRegion(), QWidget::DrawChildren);
    painter.end();
    return QFileInfo(path).size() > 0 ? QString() : tr("Could not write %1.").arg(QDir::toNativeSeparators(path));
  }
  if (suffix != QLatin1String("png")) {
    return tr("Cannot export as \"%1\": choose a file name ending in .png or .svg.").arg(QFileInfo(path).fileName());
  }
  if (!widget->grab().save(path, "PNG")) return tr("Could not write %1.").arg(QDir::toNativeSeparators(path));
  return {};
}

QString exportWidgetWithDialog(QWidget* widget, const QString& baseName) {
  QString selectedFilter;
  QString path = QFileDialog::getSaveFileName(widget, tr("Export Image"), baseName + QStringLiteral(".png"),
                                              tr("PNG image (*.png);;SVG image (*.svg)"), &selectedFilter);
  if (path.isEmpty()) return {};
  if (QFileInfo(path).suffix().isEmpty()) path += selectedFilter.contains(QLatin1String("svg")) ? ".svg" : ".png";
  return exportWidgetImage(widget, path);
}

}  // namespace lazyscope::gui
