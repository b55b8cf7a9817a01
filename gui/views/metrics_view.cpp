#include "views/metrics_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "loaders/run_profile_loader.h"
#include "models/metrics_model.h"

namespace lazyscope::gui {

MetricsView::MetricsView(QWidget* parent)
    : QWidget(parent),
      model_(new MetricsModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      search_(new QLineEdit(this)),
      table_(new QTableView(this)),
      note_(new QLabel(this)) {
  setObjectName(QStringLiteral("metricsView"));
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(MetricsModel::SortRole);
  proxy_->setFilterKeyColumn(MetricsModel::Name);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  search_->setObjectName(QStringLiteral("metricsSearch"));
  search_->setPlaceholderText(tr("Search metrics by name (e.g. compile, sync, bytes)"));
  search_->setClearButtonEnabled(true);
  table_->setObjectName(QStringLiteral("metricsTable"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);  // counters first, as the engine reports them
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // Compact rows, as in the run list: a report reads better dense.
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 8);
  table_->horizontalHeader()->setSectionResizeMode(MetricsModel::Name, QHeaderView::Stretch);
  note_->setObjectName(QStringLiteral("metricsNote"));
  note_->setWordWrap(true);
  note_->setForegroundRole(QPalette::PlaceholderText);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(4);
  layout->addWidget(search_);
  layout->addWidget(table_, 1);
  layout->addWidget(note_);
  // The box filters as one types: a metrics report is a few dozen rows.
  connect(search_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  clear();
}

MetricsView::~MetricsView() = default;

void MetricsView::setProfile(const RunProfile& profile) {
  model_->setMetrics(profile.metrics);
  if (profile.metrics.empty()) {
    note_->setText(tr("No metrics recorded for this run."));
  } else if (profile.metricsDerived) {
    note_->setText(
        tr("This run was recorded without snapshots of the engine's metrics report, so this "
           "report is derived from its recorded events."));
  } else {
    note_->setText(tr("The engine's metrics report as last recorded (step %1): each metric's newest "
                      "snapshot.")
                       .arg(profile.metricsStep));
  }
}

void MetricsView::clear() {
  model_->setMetrics({});
  note_->setText(tr("No run selected."));
}

QString MetricsView::note() const { return note_->text(); }

}  // namespace lazyscope::gui
