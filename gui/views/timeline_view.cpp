#include "views/timeline_view.h"

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
    : QWidget(parent), timeline_(new TimelineWidget(this)), range_(new QLabel(this)), selection_(new QLabel(this)) {
  setObjectName(QStringLiteral("timelineView"));
  range_->setObjectName(QStringLiteral("timelineRange"));
  range_->setForegroundRole(QPalette::PlaceholderText);
  selection_->setObjectName(QStringLiteral("timelineSelection"));
  selection_->setTextFormat(Qt::RichText);
  selection_->setWordWrap(true);
  selection_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  QToolButton* fit = toolButton(tr("Fit"), tr("Show every step (F)"), QStringLiteral("zoom-fit-best"), this);
  QToolButton* zoomOut = toolButton(tr("Zoom out"), tr("Zoom out (−, S or the wheel)"), QStringLiteral("zoom-out"),
                                    this);
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
  std::vector<TimelineLane> lanes;
  if (profile.replicaSteps.size() <= 1) {  // one replica (or a profile made without replicas): no lane names
    lanes.push_back({QString(), profile.steps, profile.markers});
  } else {
    for (size_t r = 0; r < profile.replicaSteps.size(); ++r) {
      lanes.push_back({tr("rank %1").arg(profile.replicaSteps[r].replica()), profile.replicaSteps[r],
                       r < profile.replicaMarkers.size() ? profile.replicaMarkers[r] : std::vector<StepMarker>{}});
    }
  }
  timeline_->setLanes(std::move(lanes));
  showSelection(-1);
}

void TimelineView::clear() {
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
                               : timeline_->describeStep(step, timeline_->selectedLane())
                                     .replace(QStringLiteral("<br>"), QStringLiteral(" · ")));
}

}  // namespace lazyscope::gui
