// An inline message strip (in the spirit of KMessageWidget): tells the user
// what went wrong, or what to do next, without a modal dialog. The text is
// selectable so that an error can be copied into a bug report.
#pragma once

#include <QFrame>

class QLabel;
class QToolButton;

namespace lazyscope::gui {

class MessageBanner : public QFrame {
  Q_OBJECT

 public:
  enum class Kind { Information, Error };

  explicit MessageBanner(QWidget* parent = nullptr);
  ~MessageBanner() override;

  // Shows the banner with `text` (plain text).
  void showMessage(Kind kind, const QString& text);
  QString text() const;
  Kind kind() const { return kind_; }

 public slots:
  void dismiss();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  QColor accentColor() const;
  void updateIcon();

  Kind kind_ = Kind::Information;
  QLabel* icon_;
  QLabel* text_;
  QToolButton* close_;
};

}  // namespace lazyscope::gui
