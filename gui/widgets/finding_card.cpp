#include "widgets/finding_card.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QStyle>
#include <QVBoxLayout>

#include "util/run_status.h"

namespace lazyscope::gui {

namespace {

constexpr int kStripeWidth = 4;

QLabel* textLabel(const QString& text, const QString& name, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setObjectName(name);
  label->setTextFormat(Qt::PlainText);
  label->setWordWrap(true);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return label;
}

QStyle::StandardPixmap severityPixmap(pb::Severity severity) {
  switch (severity) {
    case pb::SEVERITY_CRITICAL: return QStyle::SP_MessageBoxCritical;
    case pb::SEVERITY_WARNING: return QStyle::SP_MessageBoxWarning;
    default: return QStyle::SP_MessageBoxInformation;
  }
}

}  // namespace

QColor severityColor(pb::Severity severity, const QPalette& palette) {
  const bool dark = isDarkPalette(palette);
  switch (severity) {
    case pb::SEVERITY_CRITICAL: return dark ? QColor(0xff, 0x6b, 0x6b) : QColor(0xc0, 0x1c, 0x28);
    case pb::SEVERITY_WARNING: return dark ? QColor(0xf6, 0xc1, 0x43) : QColor(0xb5, 0x83, 0x00);
    default: return dark ? QColor(0x62, 0xa0, 0xea) : QColor(0x1c, 0x71, 0xd8);
  }
}

QString severityText(pb::Severity severity) {
  switch (severity) {
    case pb::SEVERITY_CRITICAL: return FindingCard::tr("critical");
    case pb::SEVERITY_WARNING: return FindingCard::tr("warning");
    default: return FindingCard::tr("info");
  }
}

FindingCard::FindingCard(const pb::Finding& finding, QWidget* parent) : QFrame(parent), severity_(finding.severity()) {
  setObjectName(QStringLiteral("findingCard"));
  setFrameShape(QFrame::StyledPanel);
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::Base);

  auto* icon = new QLabel(this);
  icon->setObjectName(QStringLiteral("findingIcon"));
  const int size = style()->pixelMetric(QStyle::PM_SmallIconSize);
  icon->setPixmap(style()->standardIcon(severityPixmap(severity_)).pixmap(size, size));
  icon->setToolTip(severityText(severity_));
  icon->setAlignment(Qt::AlignTop);

  QLabel* title = textLabel(QString::fromStdString(finding.title()), QStringLiteral("findingTitle"), this);
  QFont bold = title->font();
  bold.setBold(true);
  title->setFont(bold);

  auto* text = new QVBoxLayout;
  text_ = text;
  text->setSpacing(4);
  text->addWidget(title);
  if (!finding.detail().empty()) {
    text->addWidget(textLabel(QString::fromStdString(finding.detail()), QStringLiteral("findingDetail"), this));
  }
  if (!finding.fix().empty()) {
    text->addWidget(
        textLabel(tr("Fix: %1").arg(QString::fromStdString(finding.fix())), QStringLiteral("findingFix"), this));
  }

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(kStripeWidth + 8, 8, 8, 8);
  layout->setSpacing(8);
  layout->addWidget(icon, 0, Qt::AlignTop);
  layout->addLayout(text, 1);
}

FindingCard::~FindingCard() = default;

void FindingCard::setEvidenceLink(const QString& text) {
  auto* link = new QLabel(this);
  link->setObjectName(QStringLiteral("findingEvidence"));
  link->setTextFormat(Qt::RichText);
  link->setText(QStringLiteral("<a href=\"evidence\">%1</a>").arg(text.toHtmlEscaped()));
  link->setTextInteractionFlags(Qt::LinksAccessibleByMouse | Qt::LinksAccessibleByKeyboard);
  link->setToolTip(tr("Open the view that shows this finding's evidence"));
  connect(link, &QLabel::linkActivated, this, &FindingCard::evidenceRequested);
  text_->addWidget(link);
}

void FindingCard::paintEvent(QPaintEvent* event) {
  QFrame::paintEvent(event);
  QPainter painter(this);
  painter.fillRect(QRect(0, 0, kStripeWidth, height()), severityColor(severity_, palette()));
}

}  // namespace lazyscope::gui
