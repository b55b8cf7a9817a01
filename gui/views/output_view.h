// The Output tab: what the script printed (stdout, and stderr in the error
// colour) in the order it printed it, in a monospace font. A failed run
// shows its error and traceback first, prominently.
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
