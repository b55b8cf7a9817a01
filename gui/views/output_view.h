// The Output tab: what the script printed (stdout, and stderr in the error
// colour) in the order it printed it, in a monospace font, tabs expanded to
// 8-column stops as a terminal shows them. A failed run says so in a banner
// and shows its traceback once: at the end of the output when the script
// printed it there (scrolled to), else above the output.
#pragma once

#include <QString>
#include <QWidget>
#include <utility>
#include <vector>

class QLabel;
class QPlainTextEdit;

namespace lazyscope::gui {

class MessageBanner;
struct RunProfile;

// `text` with each tab replaced by the spaces to the next multiple of
// `tabWidth` columns (a line starts at column 0).
QString expandTabs(const QString& text, int tabWidth = 8);

class OutputView : public QWidget {
  Q_OBJECT

 public:
  explicit OutputView(QWidget* parent = nullptr);
  ~OutputView() override;

  void setProfile(const RunProfile& profile);
  void clear();

  QString outputText() const;
  QString tracebackText() const;
  bool showsFailure() const;

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void render();

  MessageBanner* banner_;
  QPlainTextEdit* traceback_;
  QPlainTextEdit* output_;
  QLabel* empty_;
  // Kept to repaint the stderr colour when the palette changes.
  std::vector<std::pair<bool, QString>> chunks_;  // (is stderr, text)
};

}  // namespace lazyscope::gui
