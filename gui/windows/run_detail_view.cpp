#include "windows/run_detail_view.h"

#include <QLabel>
#include <QTabWidget>
#include <QVBoxLayout>

#include "loaders/run_detail_loader.h"
#include "windows/overview_tab.h"
#include "windows/recompilations_tab.h"
#include "views/graph_tab.h"

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
  connect(graphs_, &GraphTab::graphCountChanged, this, [this](int count) {
    tabs_->setTabText(tabs_->indexOf(graphs_), tr("&Graphs (%1)").arg(count));
  });
  // --- end Graphs tab

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(4);
  layout->addWidget(status_);
  layout->addWidget(tabs_, 1);

  connect(loader_, &RunDetailLoader::loaded, this, &RunDetailView::onLoaded);
  connect(loader_, &RunDetailLoader::failed, this, &RunDetailView::onFailed);
}

RunDetailView::~RunDetailView() = default;

bool RunDetailView::isLoading() const { return loader_->isLoading(); }

int64_t RunDetailView::runId() const { return detail_ ? detail_->runId : 0; }

void RunDetailView::showRun(const QString& path, int64_t runId) {
  status_->setText(tr("Loading run %1…").arg(runId));
  status_->show();
  loader_->load(path, runId);
  graphs_->setRun(path, runId);  // Graphs tab (gui3)
}

void RunDetailView::clear() {
  loader_->cancel();
  status_->hide();
  recompilations_->clear();
  graphs_->clear();  // Graphs tab (gui3)
  overview_->clear();
  detail_.reset();
}

void RunDetailView::onLoaded(const RunDetail& detail) {
  status_->hide();
  auto next = std::make_unique<RunDetail>(detail);
  overview_->setRun(next->summary, next->findings);
  recompilations_->setRun(next.get());
  detail_ = std::move(next);  // the tab points into it: replaced only after setRun
  tabs_->setTabText(1, tr("Re&compilations (%1)").arg(detail_->compiles.size()));
  emit runShown(detail_->runId);
}

void RunDetailView::onFailed(qint64 runId, const QString& message) {
  clear();
  status_->setText(tr("Could not load run %1. %2").arg(runId).arg(message));
  status_->show();
}

}  // namespace lazyscope::gui
