#include "windows/run_detail_view.h"

#include <QLabel>
#include <QTabWidget>
#include <QVBoxLayout>

#include "loaders/run_detail_loader.h"
#include "loaders/run_profile_loader.h"
#include "models/recompilation_model.h"
#include "views/charts_view.h"
#include "views/fallbacks_view.h"
#include "views/graph_tab.h"
#include "views/kernels_view.h"
#include "views/metrics_view.h"
#include "views/output_view.h"
#include "views/timeline_view.h"
#include "widgets/timeline_widget.h"
#include "windows/overview_tab.h"
#include "windows/recompilations_tab.h"

namespace lazyscope::gui {

RunDetailView::RunDetailView(QWidget* parent)
    : QWidget(parent),
      loader_(new RunDetailLoader(this)),
      status_(new QLabel(this)),
      tabs_(new QTabWidget(this)),
      overview_(new OverviewTab(tabs_)),
      recompilations_(new RecompilationsTab(tabs_)) {
  status_->setObjectName(QStringLiteral("runDetailStatus"));
  status_->setTextFormat(Qt::PlainText);
  status_->setWordWrap(true);
  status_->hide();
  tabs_->setObjectName(QStringLiteral("runDetailTabs"));
  tabs_->setDocumentMode(true);
  tabs_->addTab(overview_, tr("&Overview"));
  tabs_->addTab(recompilations_, tr("Re&compilations"));
  // --- Graphs tab (gui3): reads its own data, by path and run id.
  graphs_ = new GraphTab(tabs_);
  graphs_->setObjectName(QStringLiteral("graphTab"));
  tabs_->addTab(graphs_, tr("&Graphs"));
  connect(graphs_, &GraphTab::graphCountChanged, this,
          [this](int count) { tabs_->setTabText(tabs_->indexOf(graphs_), tr("&Graphs (%1)").arg(count)); });
  // --- end Graphs tab
  // --- Kernels tab: reads its own data (the kernel profile), by path and run id.
  kernels_ = new KernelsView(tabs_);
  tabs_->addTab(kernels_, tr("&Kernels"));
  connect(kernels_, &KernelsView::kernelCountChanged, this, [this](int count) {
    tabs_->setTabText(tabs_->indexOf(kernels_), count == 0 ? tr("&Kernels") : tr("&Kernels (%1)").arg(count));
  });

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(4);
  layout->addWidget(status_);
  layout->addWidget(tabs_, 1);

  connect(loader_, &RunDetailLoader::loaded, this, &RunDetailView::onLoaded);
  connect(loader_, &RunDetailLoader::failed, this, &RunDetailView::onFailed);
  connect(loader_, &RunDetailLoader::cancelled, this, &RunDetailView::onCancelled);
  addProfileTabs();
}

RunDetailView::~RunDetailView() = default;

bool RunDetailView::isLoading() const { return loader_->isLoading(); }

int64_t RunDetailView::runId() const { return detail_ ? detail_->runId : 0; }

void RunDetailView::showRun(const QString& path, int64_t runId) {
  wantedRunId_ = runId;
  status_->setText(tr("Loading run %1…").arg(runId));
  status_->show();
  loader_->load(path, runId);
  profileLoader_->load(path, runId);
  graphs_->setRun(path, runId);  // Graphs tab (gui3)
  kernels_->setRun(path, runId);
}

void RunDetailView::clear() {
  loader_->cancel();
  profileLoader_->cancel();
  overlayLoader_->cancel();
  overlayIds_.clear();
  profile_.reset();
  timeline_->clear();
  charts_->clear();
  fallbacks_->clear();
  metrics_->clear();
  output_->clear();
  status_->hide();
  recompilations_->clear();
  graphs_->clear();  // Graphs tab (gui3)
  kernels_->clear();
  overview_->clear();
  detail_.reset();
  wantedRunId_ = 0;
}

void RunDetailView::onLoaded(const RunDetail& detail) {
  status_->hide();
  auto next = std::make_unique<RunDetail>(detail);
  overview_->setRun(next->summary, next->findings);
  recompilations_->setRun(next.get());
  detail_ = std::move(next);  // the tab points into it: replaced only after setRun
  // Recompilations only: a graph's first compile is not one.
  tabs_->setTabText(1, tr("Re&compilations (%1)").arg(recompilations_->model()->recompileCount()));
  emit runShown(detail_->runId);
}

void RunDetailView::onFailed(qint64 runId, const QString& message) {
  clear();
  status_->setText(tr("Could not load run %1. %2").arg(runId).arg(message));
  status_->show();
}

void RunDetailView::onCancelled(qint64 runId) {
  // Whatever of the run did arrive stays; the line says that the rest (the
  // overview or the timeline and charts) was stopped, not empty.
  status_->setText(tr("Loading run %1 was cancelled — press F5 to reload.").arg(runId));
  status_->show();
}

// ---------------------------------------------------------------------------
// Timeline, Charts, Fallbacks, Metrics and Output (gui2).

void RunDetailView::addProfileTabs() {
  profileLoader_ = new RunProfileLoader(this);
  overlayLoader_ = new RunProfileLoader(this);
  timeline_ = new TimelineView(tabs_);
  charts_ = new ChartsView(tabs_);
  fallbacks_ = new FallbacksView(tabs_);
  metrics_ = new MetricsView(tabs_);
  output_ = new OutputView(tabs_);
  tabs_->addTab(timeline_, tr("&Timeline"));
  tabs_->addTab(charts_, tr("C&harts"));
  tabs_->addTab(fallbacks_, tr("&Fallbacks"));
  tabs_->addTab(metrics_, tr("&Metrics"));
  tabs_->addTab(output_, tr("O&utput"));
  connect(profileLoader_, &RunProfileLoader::loaded, this, &RunDetailView::onProfileLoaded);
  connect(overlayLoader_, &RunProfileLoader::loadedMany, charts_, &ChartsView::setRuns);
  connect(profileLoader_, &RunProfileLoader::cancelled, this, &RunDetailView::onCancelled);
  // A failed read is already reported by the detail loader's message.
  connect(timeline_, &TimelineView::stepSelected, this, &RunDetailView::selectCompileOfStep);
  connect(overview_, &OverviewTab::evidenceRequested, this, &RunDetailView::showEvidence);
}

bool RunDetailView::isProfileLoading() const { return profileLoader_->isLoading(); }

void RunDetailView::onProfileLoaded(const RunProfile& profile) {
  profile_ = std::make_unique<RunProfile>(profile);
  timeline_->setProfile(profile);
  if (!isOverlaying()) charts_->setProfile(profile);
  fallbacks_->setProfile(profile);
  metrics_->setProfile(profile);
  output_->setProfile(profile);
  auto setCount = [this](QWidget* tab, const QString& title, size_t count) {
    tabs_->setTabText(tabs_->indexOf(tab), count == 0 ? title : QStringLiteral("%1 (%2)").arg(title).arg(count));
  };
  int64_t fallbacks = 0;
  for (const pb::FallbackGroup& group : profile.fallbackGroups) fallbacks += group.count();
  setCount(fallbacks_, tr("&Fallbacks"), static_cast<size_t>(fallbacks));
}

void RunDetailView::overlayRuns(const QString& path, const std::vector<int64_t>& runIds) {
  const bool was = isOverlaying();
  overlayIds_ = runIds;
  if (isOverlaying()) {
    overlayLoader_->loadMany(path, runIds);
    return;
  }
  overlayLoader_->cancel();
  if (was && profile_) charts_->setProfile(*profile_);
}

void RunDetailView::selectCompileOfStep(qint64 step) {
  // The step's first compile, if it compiled: what a person looks at next.
  const RecompilationModel* model = recompilations_->model();
  for (int row = 0; row < model->rowCount(); ++row) {
    if (model->compiles()[static_cast<size_t>(row)].step() == step) {
      recompilations_->selectCompile(row);
      return;
    }
  }
}

void RunDetailView::showEvidence(const pb::Finding& finding) {
  const QString tab = OverviewTab::evidenceTab(finding.rule());
  if (tab.isEmpty() || !showTab(tab)) return;
  if (tab == QLatin1String("recompilations")) {
    selectCompileOfStep(finding.first_step());
  } else if (tab == QLatin1String("fallbacks")) {
    fallbacks_->selectLine(static_cast<int>(finding.source().line()));
  } else {
    timeline_->timeline()->selectStep(finding.first_step());
    timeline_->timeline()->setFocus();
  }
}

QStringList RunDetailView::tabNames() const {
  QStringList names;
  for (int i = 0; i < tabs_->count(); ++i) {
    QString title = tabs_->tabText(i).remove(QLatin1Char('&'));
    title = title.left(title.indexOf(QLatin1String(" ("))).trimmed();  // "Recompilations (3)"
    names << title.toLower();
  }
  return names;
}

bool RunDetailView::showTab(const QString& name) {
  const int index = static_cast<int>(tabNames().indexOf(name.toLower()));
  if (index < 0) return false;
  tabs_->setCurrentIndex(index);
  return true;
}

}  // namespace lazyscope::gui
