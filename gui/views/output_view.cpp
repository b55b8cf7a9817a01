#include "views/output_view.h"

#include <QEvent>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTextCharFormat>
#include <QTextCursor>
#include <QVBoxLayout>

#include "loaders/run_profile_loader.h"
#include "util/run_status.h"
#include "widgets/message_banner.h"

namespace lazyscope::gui {

namespace {

QPlainTextEdit* monospaceText(const QString& name, QWidget* parent) {
  auto* text = new QPlainTextEdit(parent);
  text->setObjectName(name);
  text->setReadOnly(true);
  text->setLineWrapMode(QPlainTextEdit::NoWrap);
  text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  return text;
}

}  // namespace

QString expandTabs(const QString& text, int tabWidth) {
  if (!text.contains(QLatin1Char('\t'))) return text;
  QString out;
  out.reserve(text.size() + 16);
  int column = 0;
  for (const QChar c : text) {
    if (c == QLatin1Char('\t')) {
      const int spaces = tabWidth - column % tabWidth;
      out.append(QString(spaces, QLatin1Char(' ')));
      column += spaces;
    } else {
      out.append(c);
      column = (c == QLatin1Char('\n') || c == QLatin1Char('\r')) ? 0 : column + 1;
    }
  }
  return out;
}

OutputView::OutputView(QWidget* parent)
    : QWidget(parent),
      banner_(new MessageBanner(this)),
      traceback_(monospaceText(QStringLiteral("outputTraceback"), this)),
      output_(monospaceText(QStringLiteral("outputText"), this)),
      empty_(new QLabel(this)) {
  setObjectName(QStringLiteral("outputView"));
  banner_->setObjectName(QStringLiteral("outputFailure"));
  empty_->setObjectName(QStringLiteral("outputEmpty"));
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setForegroundRole(QPalette::PlaceholderText);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(4);
  layout->addWidget(banner_);
  layout->addWidget(traceback_, 1);
  layout->addWidget(empty_);
  layout->addWidget(output_, 2);
  clear();
}

OutputView::~OutputView() = default;

void OutputView::setProfile(const RunProfile& profile) {
  const pb::RunInfo& run = profile.run;
  const bool failed = run.status() == pb::RUN_STATUS_FAILED || run.status() == pb::RUN_STATUS_CRASHED;
  chunks_.clear();
  std::string stderrText;
  for (const pb::OutputChunk& chunk : profile.output.chunks()) {
    chunks_.emplace_back(chunk.stream() == "stderr", expandTabs(QString::fromStdString(chunk.text())));
    if (chunk.stream() == "stderr") stderrText += chunk.text();
  }
  // The error once: the script's stderr usually holds the traceback already
  // (Python printed it); then the banner points at it and no second copy of
  // the traceback is shown above the output.
  const bool hasTraceback = failed && !run.traceback().empty();
  const bool printed = hasTraceback && stderrText.find(run.traceback()) != std::string::npos;
  if (failed) {
    const QString error = run.error().empty() ? tr("exit code %1").arg(run.exit_code())
                                              : QString::fromStdString(run.error());
    banner_->showMessage(MessageBanner::Kind::Error,
                         hasTraceback ? tr("The run %1 (exit code %2): the traceback is %3.")
                                            .arg(statusText(run.status()))
                                            .arg(run.exit_code())
                                            .arg(printed ? tr("at the end of the output below") : tr("below"))
                                      : tr("The run %1: %2").arg(statusText(run.status()), error));
  } else {
    banner_->dismiss();
  }
  traceback_->setPlainText(expandTabs(QString::fromStdString(run.traceback())));
  traceback_->setVisible(hasTraceback && !printed);
  empty_->setText(tr("The script printed nothing."));
  empty_->setVisible(chunks_.empty());
  output_->setVisible(!chunks_.empty());
  render();
}

void OutputView::clear() {
  banner_->dismiss();
  traceback_->clear();
  traceback_->hide();
  chunks_.clear();
  output_->clear();
  output_->hide();
  empty_->setText(tr("No run selected."));
  empty_->show();
}

QString OutputView::outputText() const { return output_->toPlainText(); }

QString OutputView::tracebackText() const { return !traceback_->isHidden() ? traceback_->toPlainText() : QString(); }

bool OutputView::showsFailure() const { return !banner_->isHidden(); }

void OutputView::render() {
  output_->clear();
  QTextCursor cursor(output_->document());
  QTextCharFormat normal;
  QTextCharFormat error;
  error.setForeground(statusColor(pb::RUN_STATUS_FAILED, palette()));
  for (const auto& [isStderr, text] : chunks_) cursor.insertText(text, isStderr ? error : normal);
  // A failed run's traceback is at the end: show the end.
  output_->moveCursor(showsFailure() ? QTextCursor::End : QTextCursor::Start);
}

void OutputView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) render();
}

}  // namespace lazyscope::gui
