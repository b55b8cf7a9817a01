#include "views/timeline_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "loaders/run_profile_loader.h"
#include "util/image_export.h"
#include "widgets/timeline_widget.h"

namespace lazyscope::gui {

namespace {

QToolButton* toolButton(const QString& text, const QString& tip, const QString& icon, QWidget* parent) {
  auto* button = new QToolButton(parent);
  button->setText(text);
  button->setToolTip(tip);
  button->setIcon(QIcon::fromTheme(icon));
  button->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  button->setAutoRaise(true);
  return button;
}

}  // namespace

TimelineView::TimelineView(QWidget* parent)
    : QWidget(parent),
      timeline_(new TimelineWidget(this)),
      replica_(new QComboBox(this)),
      range_(new QLabel(this)),
      selection_(new QLabel(this)) {
  setObjectName(QStringLiteral("timelineView"));
  replica_->setObjectName(QStringLiteral("timelineReplica"));
  replica_->setToolTip(tr("The replica (thread or process rank) whose steps are shown"));
  connect(replica_, &QComboBox::activated, this, [this](int index) { showReplica(index); });
  range_->setObjectName(QStringLiteral("timelineRange"));
  range_->setForegroundRole(QPalette::PlaceholderText);
  selection_->setObjectName(QStringLiteral("timelineSelection"));
  selection_->setTextFormat(Qt::RichText);
  selection_->setWordWrap(true);
  selection_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  QToolButton* fit = toolButton(tr("Fit"), tr("Show every step (F)"), QStringLiteral("zoom-fit-best"), this);
  QToolButton* zoomOut = toolButton(tr("Zoom out"), tr("Zoom out (−, S or the wheel)"), QStringLiteral("zoom-out"), this);
  QToolButton* zoomIn = toolButton(tr("Zoom in"), tr("Zoom in (+, W or the wheel)"), QStringLiteral("zoom-in"), this);
  QToolButton* exportButton = toolButton(tr("Export…"), tr("Save the timeline as PNG or SVG"),
                                         QStringLiteral("document-save-as"), this);
  exportButton->setObjectName(QStringLiteral("timelineExport"));
  connect(fit, &QToolButton::clicked, timeline_, &TimelineWidget::fit);
  connect(zoomOut, &QToolButton::clicked, timeline_, &TimelineWidget::zoomOut);
  connect(zoomIn, &QToolButton::clicked, timeline_, &TimelineWidget::zoomIn);
  connect(exportButton, &QToolButton::clicked, this, [this] {
    const QString error = exportWidgetWithDialog(timeline_, QStringLiteral("timeline"));
    if (!error.isEmpty()) QMessageBox::warning(this, tr("Export"), error);
  });

  auto* bar = new QHBoxLayout;
  bar->setSpacing(2);
  bar->addWidget(fit);
  bar->addWidget(zoomOut);
  bar->addWidget(zoomIn);
  bar->addWidget(exportButton);
  bar->addSpacing(12);
  bar->addWidget(replica_);
  bar->addStretch(1);
  bar->addWidget(range_);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(4);
  layout->addLayout(bar);
  layout->addWidget(timeline_, 1);
  layout->addWidget(selection_);

  connect(timeline_, &TimelineWidget::visibleRangeChanged, this, &TimelineView::showRange);
  connect(timeline_, &TimelineWidget::stepSelected, this, &TimelineView::showSelection);
  connect(timeline_, &TimelineWidget::stepSelected, this, &TimelineView::stepSelected);
  clear();
}

TimelineView::~TimelineView() = default;

void TimelineView::setProfile(const RunProfile& profile) {
  replicaSteps_ = profile.replicaSteps;
  replicaMarkers_ = profile.replicaMarkers;
  if (replicaSteps_.empty()) {  // a profile made without replicas: replica 0's
    replicaSteps_.push_back(profile.steps);
    replicaMarkers_.push_back(profile.markers);
  }
  replica_->clear();
  for (size_t r = 0; r < replicaSteps_.size(); ++r) {
    replica_->addItem(tr("replica %1 (%2 steps)").arg(r).arg(replicaSteps_[r].steps_size()));
  }
  replica_->setVisible(replicaSteps_.size() > 1);
  showReplica(0);
}

bool TimelineView::showReplica(int replica) {
  if (replica < 0 || static_cast<size_t>(replica) >= replicaSteps_.size()) return false;
  replica_->setCurrentIndex(replica);
  timeline_->setData(replicaSteps_[static_cast<size_t>(replica)],
                     static_cast<size_t>(replica) < replicaMarkers_.size() ? replicaMarkers_[static_cast<size_t>(replica)]
                                                                           : std::vector<StepMarker>{});
  showSelection(-1);
  return true;
}

void TimelineView::clear() {
  replicaSteps_.clear();
  replicaMarkers_.clear();
  replica_->clear();
  replica_->hide();
  timeline_->clear();
  showSelection(-1);
}

QString TimelineView::exportImage(const QString& path) { return exportWidgetImage(timeline_, path); }

void TimelineView::showRange(qint64 first, qint64 last) {
  const int64_t count = timeline_->stepCount();
  range_->setText(count == 0 ? QString() : tr("steps %1–%2 of %3").arg(first).arg(last).arg(count));
}

void TimelineView::showSelection(qint64 step) {
  selection_->setText(step < 0 ? tr("Click a step for its breakdown; drag or use the arrow keys to pan, "
                                    "the wheel or +/− to zoom, F to fit.")
                               : timeline_->describeStep(step).replace(QStringLiteral("<br>"), QStringLiteral(" · ")));
}

}  // namespace lazyscope::gui
