// The history files opened lately, newest first, remembered in QSettings.
#pragma once

#include <QStringList>

namespace lazyscope::gui {

class RecentFiles {
 public:
  static constexpr int kMaxEntries = 8;

  QStringList paths() const;
  // Moves `path` (made absolute) to the front, dropping the oldest beyond
  // kMaxEntries.
  void add(const QString& path);
  void remove(const QString& path);
  void clear();
};

}  // namespace lazyscope::gui
