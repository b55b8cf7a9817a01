// The keyboard shortcut sheet (F1, Ctrl+/ or ?): every key the window and
// its views answer to, grouped by where it applies, as Perfetto's "?" does.
#pragma once

#include <QDialog>
#include <QString>
#include <vector>

namespace lazyscope::gui {

class ShortcutSheet : public QDialog {
  Q_OBJECT

 public:
  struct Entry {
    QString group;  // "General", "Timeline", ...
    QString keys;   // as shown: "Ctrl+O", "+ / −"
    QString action;
  };

  explicit ShortcutSheet(QWidget* parent = nullptr);
  ~ShortcutSheet() override;

  // The shortcuts listed, in order.
  static std::vector<Entry> entries();
};

}  // namespace lazyscope::gui
