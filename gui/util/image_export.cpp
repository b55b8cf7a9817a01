#include "util/image_export.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGraphicsScene>
#include <QImage>
#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>
#include <QWidget>
#include <algorithm>

namespace lazyscope::gui {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("ImageExport", text); }

}  // namespace

QString exportImage(const QSize& size, const QString& title, const QString& path,
                    const std::function<void(QPainter&)>& paint) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  const QString cannotWrite = tr("Could not write %1.").arg(QDir::toNativeSeparators(path));
  if (size.isEmpty()) return tr("There is nothing to export.");
  if (suffix == QLatin1String("svg")) {
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(size);
    generator.setViewBox(QRect(QPoint(0, 0), size));
    generator.setTitle(title);
    generator.setDescription(tr("Exported from LazyScope"));
    QPainter painter;
    if (!painter.begin(&generator)) return cannotWrite;
    paint(painter);
    painter.end();
    return QFileInfo(path).size() > 0 ? QString() : cannotWrite;
  }
  if (suffix != QLatin1String("png")) {
    return tr("Cannot export as \"%1\": choose a file name ending in .png or .svg.").arg(QFileInfo(path).fileName());
  }
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::transparent);
  {
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    paint(painter);
  }
  return image.save(path, "PNG") ? QString() : cannotWrite;
}

QString exportWidgetImage(QWidget* widget, const QString& path) {
  return exportImage(widget->size(), widget->windowTitle(), path, [widget](QPainter& painter) {
    widget->render(&painter, QPoint(), QRegion(), QWidget::DrawWindowBackground | QWidget::DrawChildren);
  });
}

QString exportSceneImage(QGraphicsScene* scene, const QString& path) {
  // A margin so that the outermost boxes' borders are not cut; PNGs of huge
  // graphs are capped so that the image stays allocatable (SVG is exact).
  constexpr qreal kMargin = 16;
  constexpr qreal kMaxPixels = 16384;
  const QRectF source = scene->itemsBoundingRect().adjusted(-kMargin, -kMargin, kMargin, kMargin);
  qreal scale = 1.0;
  if (QFileInfo(path).suffix().compare(QLatin1String("png"), Qt::CaseInsensitive) == 0) {
    scale = std::min(1.0, kMaxPixels / std::max(source.width(), source.height()));
  }
  const QSize size = (source.size() * scale).toSize();
  return exportImage(size, QString(), path, [scene, source, size](QPainter& painter) {
    painter.fillRect(QRect(QPoint(0, 0), size), scene->backgroundBrush().style() == Qt::NoBrush
                                                    ? scene->palette().base()
                                                    : scene->backgroundBrush());
    scene->render(&painter, QRectF(QPointF(0, 0), QSizeF(size)), source);
  });
}

QString askImagePath(QWidget* parent, const QString& baseName) {
  QString selectedFilter;
  QString path = QFileDialog::getSaveFileName(parent, tr("Export Image"), baseName + QStringLiteral(".png"),
                                              tr("PNG image (*.png);;SVG image (*.svg)"), &selectedFilter);
  if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty()) {
    path += selectedFilter.contains(QLatin1String("svg")) ? ".svg" : ".png";
  }
  return path;
}

QString exportWidgetWithDialog(QWidget* widget, const QString& baseName) {
  const QString path = askImagePath(widget, baseName);
  return path.isEmpty() ? QString() : exportWidgetImage(widget, path);
}

}  // namespace lazyscope::gui
