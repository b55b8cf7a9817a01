#include "windows/recent_files.h"

#include <QFileInfo>
#include <QSettings>

namespace lazyscope::gui {

namespace {
const QString kKey = QStringLiteral("RecentFiles/paths");
}

QStringList RecentFiles::paths() const { return QSettings().value(kKey).toStringList(); }

void RecentFiles::add(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  QStringList list = paths();
  list.removeAll(absolute);
  list.prepend(absolute);
  while (list.size() > kMaxEntries) list.removeLast();
  QSettings().setValue(kKey, list);
}

void RecentFiles::remove(const QString& path) {
  QStringList list = paths();
  list.removeAll(QFileInfo(path).absoluteFilePath());
  QSettings().setValue(kKey, list);
}

void RecentFiles::clear() { QSettings().remove(kKey); }

}  // namespace lazyscope::gui
