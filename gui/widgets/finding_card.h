// One diagnosis finding as a card: a severity icon and coloured stripe, the
// title, the evidence and the fix. Text is selectable, to paste into an issue.
#pragma once

#include <QFrame>

#include "lazyscope/history.pb.h"

class QVBoxLayout;

namespace lazyscope::gui {

class FindingCard : public QFrame {
  Q_OBJECT

 public:
  explicit FindingCard(const pb::Finding& finding, QWidget* parent = nullptr);
  ~FindingCard() override;

  pb::Severity severity() const { return severity_; }

  // Adds a link under the fix ("Show in Timeline ›") that emits
  // evidenceRequested() when clicked.
  void setEvidenceLink(const QString& text);

 signals:
  void evidenceRequested();

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  pb::Severity severity_;
  QVBoxLayout* text_ = nullptr;  // title, detail, fix: the evidence link goes last
};

// The colour of a severity on `palette`'s Window colour.
QColor severityColor(pb::Severity severity, const QPalette& palette);
// "critical", "warning", "info".
QString severityText(pb::Severity severity);

}  // namespace lazyscope::gui
