#include "windows/overview_tab.h"

#include <QFileInfo>
#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include "util/format.h"
#include "util/run_status.h"
#include "widgets/finding_card.h"

namespace lazyscope::gui {

namespace {

const char* const kFigurePrefix = "figure_";

QLabel* sectionLabel(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  QFont font = label->font();
  font.setBold(true);
  font.setPointSizeF(font.pointSizeF() * 1.1);
  label->setFont(font);
  return label;
}

}  // namespace

OverviewTab::OverviewTab(QWidget* parent) : QWidget(parent) {
  auto* content = new QWidget;
  heading_ = sectionLabel(QString(), content);
  heading_->setObjectName(QStringLiteral("overviewHeading"));
  heading_->setTextFormat(Qt::PlainText);

  error_ = new QLabel(content);
  error_->setObjectName(QStringLiteral("overviewError"));
  error_->setTextFormat(Qt::PlainText);
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();

  figures_ = new QGridLayout;
  figures_->setHorizontalSpacing(16);
  figures_->setVerticalSpacing(4);
  addFigure(QStringLiteral("status"), tr("Status"), 0, 0);
  addFigure(QStringLiteral("steps"), tr("Steps"), 1, 0);
  addFigure(QStringLiteral("wall"), tr("Wall time"), 2, 0);
  addFigure(QStringLiteral("median"), tr("Median step"), 3, 0);
  addFigure(QStringLiteral("compiles"), tr("Compiles"), 0, 2);
  addFigure(QStringLiteral("compileTime"), tr("Compile time"), 1, 2);
  addFigure(QStringLiteral("executions"), tr("Executions"), 2, 2);
  addFigure(QStringLiteral("cacheHitRate"), tr("Cache hit rate"), 3, 2);
  addFigure(QStringLiteral("fallbacks"), tr("CPU fallbacks"), 0, 4);
  figures_->setColumnStretch(5, 1);

  noFindings_ = new QLabel(tr("Nothing in this run stands out."), content);
  noFindings_->setObjectName(QStringLiteral("noFindings"));
  noFindings_->setForegroundRole(QPalette::PlaceholderText);
  findings_ = new QVBoxLayout;
  findings_->setSpacing(6);

  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(12, 12, 12, 12);
  layout->setSpacing(8);
  layout->addWidget(heading_);
  layout->addWidget(error_);
  layout->addLayout(figures_);
  layout->addSpacing(8);
  layout->addWidget(sectionLabel(tr("Diagnosis"), content));
  layout->addWidget(noFindings_);
  layout->addLayout(findings_);
  layout->addStretch(1);

  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(content);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(scroll);
  clear();
}

OverviewTab::~OverviewTab() = default;

QLabel* OverviewTab::addFigure(const QString& name, const QString& title, int row, int column) {
  auto* caption = new QLabel(title + QLatin1Char(':'));
  caption->setForegroundRole(QPalette::PlaceholderText);
  auto* value = new QLabel;
  value->setObjectName(QLatin1String(kFigurePrefix) + name);
  value->setTextFormat(Qt::PlainText);
  value->setTextInteractionFlags(Qt::TextSelectableByMouse);
  figures_->addWidget(caption, row, column);
  figures_->addWidget(value, row, column + 1);
  return value;
}

QString OverviewTab::figure(const QString& name) const {
  const auto* label = findChild<QLabel*>(QLatin1String(kFigurePrefix) + name);
  return label ? label->text() : QString();
}

void OverviewTab::setRun(const pb::RunSummary& summary, const std::vector<pb::Finding>& findings) {
  const pb::RunInfo& run = summary.run();
  heading_->setText(
      tr("Run %1 — %2 (%3)")
          .arg(run.id())
          .arg(QString::fromStdString(run.name()), QFileInfo(QString::fromStdString(run.script_path())).fileName()));
  auto set = [this](const char* name, const QString& text) {
    if (auto* label = findChild<QLabel*>(QLatin1String(kFigurePrefix) + QLatin1String(name))) {
      label->setText(text);
    }
  };
  set("status", statusText(run.status()));
  if (auto* status = findChild<QLabel*>(QLatin1String(kFigurePrefix) + QLatin1String("status"))) {
    QPalette palette = status->palette();
    palette.setColor(QPalette::WindowText, statusColor(run.status(), palette));
    status->setPalette(palette);
  }
  set("steps", QString::number(summary.steps()));
  set("wall", summary.wall_ms() > 0 ? formatDuration(summary.wall_ms()) : QStringLiteral("—"));
  set("median", summary.steps() > 0 ? formatStepTime(summary.median_step_ms()) : QStringLiteral("—"));
  set("compiles", QString::number(summary.compiles()));
  set("compileTime", formatStepTime(summary.compile_ms()));
  set("executions", QString::number(summary.executions()));
  set("cacheHitRate", summary.executions() > 0
                          ? QStringLiteral("%1 %").arg(100.0 * static_cast<double>(summary.cache_hits()) /
                                                           static_cast<double>(summary.executions()),
                                                       0, 'f', 1)
                          : QStringLiteral("—"));
  set("fallbacks", QString::number(summary.fallbacks()));

  const bool failed = run.status() == pb::RUN_STATUS_FAILED;
  error_->setVisible(failed);
  if (failed) {
    error_->setText(run.error().empty() ? tr("Failed with exit code %1").arg(run.exit_code())
                                        : tr("Failed: %1").arg(QString::fromStdString(run.error())));
    QPalette palette = error_->palette();
    palette.setColor(QPalette::WindowText, statusColor(run.status(), palette));
    error_->setPalette(palette);
  }
  setFindings(findings);
}

void OverviewTab::setFindings(const std::vector<pb::Finding>& findings) {
  while (QLayoutItem* item = findings_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  for (const pb::Finding& finding : findings) {
    auto* card = new FindingCard(finding);
    const QString tab = evidenceTab(finding.rule());
    if (!tab.isEmpty()) {
      const QString title = tab.left(1).toUpper() + tab.mid(1);
      card->setEvidenceLink(tr("Show in %1 ›").arg(title));
      connect(card, &FindingCard::evidenceRequested, this, [this, finding] { emit evidenceRequested(finding); });
    }
    findings_->addWidget(card);
  }
  noFindings_->setVisible(findings.empty());
}

QString OverviewTab::evidenceTab(const std::string& rule) {
  // Each diagnosis rule (storage/analysis/diagnosis.cpp) and the view where
  // its occurrences are listed or drawn.
  if (rule == "recompilation") return QStringLiteral("recompilations");
  if (rule == "cpu-fallback") return QStringLiteral("fallbacks");
  if (rule == "host-sync" || rule == "growing-graph" || rule == "blocking-transfer") {
    return QStringLiteral("timeline");
  }
  return {};
}

void OverviewTab::clear() {
  heading_->setText(tr("No run selected"));
  for (auto* label : findChildren<QLabel*>()) {
    if (label->objectName().startsWith(QLatin1String(kFigurePrefix))) label->setText(QStringLiteral("—"));
  }
  error_->hide();
  setFindings({});
  noFindings_->hide();  // no run, no diagnosis: not "nothing stands out"
}

}  // namespace lazyscope::gui
