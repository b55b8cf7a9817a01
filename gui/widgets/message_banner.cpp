#include "widgets/message_banner.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QStyle>
#include <QToolButton>

#include "util/run_status.h"

namespace lazyscope::gui {

namespace {

QColor blend(const QColor& base, const QColor& tint, double amount) {
  return QColor::fromRgbF(static_cast<float>(base.redF() * (1.0 - amount) + tint.redF() * amount),
                          static_cast<float>(base.greenF() * (1.0 - amount) + tint.greenF() * amount),
                          static_cast<float>(base.blueF() * (1.0 - amount) + tint.blueF() * amount));
}

}  // namespace

MessageBanner::MessageBanner(QWidget* parent)
    : QFrame(parent), icon_(new QLabel(this)), text_(new QLabel(this)), close_(new QToolButton(this)) {
  text_->setObjectName(QStringLiteral("bannerText"));
  text_->setWordWrap(true);
  text_->setTextFormat(Qt::PlainText);
  text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  text_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);

  close_->setAutoRaise(true);
  close_->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
  close_->setToolTip(tr("Dismiss"));
  connect(close_, &QToolButton::clicked, this, &MessageBanner::dismiss);

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(10, 6, 6, 6);
  layout->setSpacing(8);
  layout->addWidget(icon_, 0, Qt::AlignTop);
  layout->addWidget(text_, 1);
  layout->addWidget(close_, 0, Qt::AlignTop);

  updateIcon();
  hide();
}

MessageBanner::~MessageBanner() = default;

void MessageBanner::showMessage(Kind kind, const QString& text) {
  kind_ = kind;
  text_->setText(text);
  updateIcon();
  update();
  show();
}

QString MessageBanner::text() const { return text_->text(); }

void MessageBanner::dismiss() { hide(); }

QColor MessageBanner::accentColor() const {
  return kind_ == Kind::Error ? statusColor(pb::RUN_STATUS_FAILED, palette()) : palette().color(QPalette::Highlight);
}

void MessageBanner::updateIcon() {
  const int size = style()->pixelMetric(QStyle::PM_SmallIconSize, nullptr, this);
  const auto icon = kind_ == Kind::Error ? QStyle::SP_MessageBoxCritical : QStyle::SP_MessageBoxInformation;
  icon_->setPixmap(style()->standardIcon(icon, nullptr, this).pixmap(size, size));
}

void MessageBanner::paintEvent(QPaintEvent* event) {
  // A tinted rounded box: the accent mixed into the window colour reads as a
  // soft band on light themes and a dim one on dark themes.
  QPainter painter(this);
  painter.setRenderHint(QPainter::Antialiasing);
  const QColor accent = accentColor();
  painter.setPen(QPen(accent, 1.0));
  painter.setBrush(blend(palette().color(QPalette::Window), accent, 0.16));
  painter.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 4.0, 4.0);
  QFrame::paintEvent(event);
}

void MessageBanner::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
    updateIcon();
  }
  QFrame::changeEvent(event);
}

}  // namespace lazyscope::gui
