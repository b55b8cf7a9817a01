#include "views/compare_view.h"

#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <map>
#include <tuple>

#include "loaders/compare_loader.h"
#include "models/delta_table_model.h"
#include "models/metric_delta_model.h"
#include "models/recompilation_model.h"  // reasonKindText, shortHash, sourceText
#include "views/step_chart.h"

namespace lazyscope::gui {
namespace {

QString runTitle(const pb::RunSummary &summary) {
  return QStringLiteral("#%1 %2").arg(summary.run().id()).arg(QString::fromStdString(summary.run().name()));
}

std::optional<double> present(bool has, double value) { return has ? std::optional<double>(value) : std::nullopt; }

std::vector<DeltaRow> graphRows(const pb::RunComparison &runs) {
  std::vector<DeltaRow> rows;
  const auto add = [&rows](const pb::GraphMatch &match, const QString &presence) {
    const bool a = match.has_a();
    const bool b = match.has_b();
    DeltaRow row;
    row.presence = presence;
    row.item = shortHash(match.hash());
    row.where = QString::number(a ? match.a().node_count() : match.b().node_count()) + CompareView::tr(" nodes");
    row.values = {
        {present(a, static_cast<double>(match.a().compiles())), present(b, static_cast<double>(match.b().compiles()))},
        {present(a, match.a().compile_ms()), present(b, match.b().compile_ms())},
        {present(a, static_cast<double>(match.a().executions())),
         present(b, static_cast<double>(match.b().executions()))},
        {present(a, match.a().execute_ms()), present(b, match.b().execute_ms())}};
    rows.push_back(std::move(row));
  };
  for (const auto &match : runs.only_a()) add(match, CompareView::tr("only in A"));
  for (const auto &match : runs.only_b()) add(match, CompareView::tr("only in B"));
  for (const auto &match : runs.both()) add(match, CompareView::tr("both"));
  return rows;
}

std::vector<DeltaRow> reasonRows(const pb::RunComparison &runs) {
  std::vector<DeltaRow> rows;
  for (const pb::CompileReasonDelta &reason : runs.reasons()) {
    DeltaRow row;
    row.presence = reason.count_a() == 0   ? CompareView::tr("only in B")
                   : reason.count_b() == 0 ? CompareView::tr("only in A")
                                           : CompareView::tr("both");
    row.item = reasonKindText(reason.kind());
    row.where = sourceText(reason.source());
    row.values = {{static_cast<double>(reason.count_a()), static_cast<double>(reason.count_b())},
                  {reason.compile_ms_a(), reason.compile_ms_b()}};
    rows.push_back(std::move(row));
  }
  return rows;
}

// Fallback groups matched by op and source line; only those whose count
// differs.
std::vector<DeltaRow> fallbackRows(const std::vector<pb::FallbackGroup> &a, const std::vector<pb::FallbackGroup> &b) {
  using Key = std::tuple<std::string, std::string, int>;
  std::map<Key, std::pair<const pb::FallbackGroup *, const pb::FallbackGroup *>> groups;
  for (const auto &group : a) groups[{group.op(), group.source().file(), group.source().line()}].first = &group;
  for (const auto &group : b) groups[{group.op(), group.source().file(), group.source().line()}].second = &group;
  std::vector<DeltaRow> rows;
  for (const auto &[key, pair] : groups) {
    const auto [ga, gb] = pair;
    const int64_t countA = ga ? ga->count() : 0;
    const int64_t countB = gb ? gb->count() : 0;
    if (countA == countB) continue;
    DeltaRow row;
    row.presence = !ga ? CompareView::tr("only in B") : !gb ? CompareView::tr("only in A") : CompareView::tr("both");
    row.item = QString::fromStdString(std::get<0>(key));
    row.where = sourceText((ga ? ga : gb)->source());
    row.values = {{static_cast<double>(countA), static_cast<double>(countB)},
                  {ga ? ga->total_ms() : 0.0, gb ? gb->total_ms() : 0.0}};
    rows.push_back(std::move(row));
  }
  return rows;
}

StepChart::Series series(const QString &name, const QColor &color, const pb::StepSeries &steps) {
  StepChart::Series s{name, color, {}, {}};
  for (int i = 0; i < steps.steps_size() && i < steps.step_ms_size(); ++i) {
    s.steps.push_back(static_cast<double>(steps.steps(i)));
    s.ms.push_back(steps.step_ms(i));
  }
  return s;
}

}  // namespace

CompareView::CompareView(QWidget *parent)
    : QWidget(parent, Qt::Window),
      loader_(new CompareLoader(this)),
      metrics_(new MetricDeltaModel(this)),
      graphs_(new DeltaTableModel({tr("In"), tr("Graph"), tr("Size")},
                                  {{tr("Compiles"), QStringLiteral("compiles")},
                                   {tr("Compile time"), QStringLiteral("compile_ms")},
                                   {tr("Executions"), QStringLiteral("executions")},
                                   {tr("Execute time"), QStringLiteral("execute_ms")}},
                                  this)),
      reasons_(new DeltaTableModel(
          {tr("In"), tr("Reason"), tr("Source")},
          {{tr("Compiles"), QStringLiteral("compiles")}, {tr("Compile time"), QStringLiteral("compile_ms")}}, this)),
      fallbacks_(new DeltaTableModel(
          {tr("In"), tr("Op"), tr("Source")},
          {{tr("Fallbacks"), QStringLiteral("fallbacks")}, {tr("Time"), QStringLiteral("fallback_ms")}}, this)) {
  setObjectName(QStringLiteral("compareView"));
  setWindowTitle(tr("Compare runs"));
  resize(1000, 700);
  metrics_->setPalette(palette());
  for (DeltaTableModel *model : {graphs_, reasons_, fallbacks_}) model->setPalette(palette());

  title_ = new QLabel(this);
  title_->setObjectName(QStringLiteral("compareTitle"));
  title_->setTextFormat(Qt::PlainText);
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.2);
  big.setBold(true);
  title_->setFont(big);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("compareStatus"));
  status_->setWordWrap(true);
  status_->setTextFormat(Qt::PlainText);
  chart_ = new StepChart(this);

  auto *summary = new QSplitter(Qt::Horizontal, this);
  summary->addWidget(table(metrics_, QStringLiteral("compareMetrics")));
  summary->addWidget(chart_);
  summary->setStretchFactor(0, 1);
  summary->setStretchFactor(1, 1);
  summary->setSizes({520, 560});  // the metric table whole: Δ and change are its point

  tabs_ = new QTabWidget(this);
  tabs_->setObjectName(QStringLiteral("compareTabs"));
  tabs_->setDocumentMode(true);
  tabs_->addTab(table(graphs_, QStringLiteral("compareGraphs")), tr("Graphs"));
  tabs_->addTab(table(reasons_, QStringLiteral("compareReasons")), tr("Recompile reasons"));
  tabs_->addTab(table(fallbacks_, QStringLiteral("compareFallbacks")), tr("Fallbacks"));

  auto *split = new QSplitter(Qt::Vertical, this);
  split->addWidget(summary);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);

  auto *layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(status_);
  layout->addWidget(split, 1);

  connect(loader_, &CompareLoader::loaded, this, &CompareView::showComparison);
  connect(loader_, &CompareLoader::failed, this, [this](const QString &message) {
    status_->setText(tr("Could not compare the runs. %1").arg(message));
    status_->show();
  });
  connect(loader_, &CompareLoader::cancelled, this, [this] {
    status_->setText(tr("Comparing was cancelled — choose Compare again to reload."));
    status_->show();
  });
}

CompareView::~CompareView() = default;

QTableView *CompareView::table(QAbstractItemModel *model, const QString &name) {
  auto *proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model);
  proxy->setSortRole(Qt::UserRole);  // every model's SortRole
  auto *view = new QTableView(this);
  view->setObjectName(name);
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->sortByColumn(-1, Qt::AscendingOrder);  // the model's order until a header is clicked
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setAlternatingRowColors(true);
  view->setWordWrap(false);
  view->verticalHeader()->hide();
  view->horizontalHeader()->setStretchLastSection(true);
  connect(model, &QAbstractItemModel::modelReset, view, [view] { view->resizeColumnsToContents(); });
  return view;
}

void CompareView::compare(const QString &path, int64_t runA, int64_t runB) {
  title_->setText(tr("Run #%1 (A) vs run #%2 (B)").arg(runA).arg(runB));
  status_->setText(tr("Reading both runs…"));
  status_->show();
  loader_->load(path, runA, runB);
}

bool CompareView::isLoading() const { return loader_->isLoading(); }

QString CompareView::statusText() const { return status_->isVisible() ? status_->text() : QString(); }

void CompareView::showComparison(const Comparison &comparison) {
  const pb::RunComparison &runs = comparison.runs;
  title_->setText(tr("A: %1   vs   B: %2").arg(runTitle(runs.a()), runTitle(runs.b())));
  setWindowTitle(tr("Compare %1 and %2").arg(runTitle(runs.a()), runTitle(runs.b())));
  status_->setText(
      tr("Deltas are B − A: green where B is better, red where it is worse. "
         "Graphs are matched by their structural hash."));
  metrics_->setMetrics({runs.metrics().begin(), runs.metrics().end()});
  // The summary's noise of compile and execute time bounds what a graph's
  // own change of them may be before it is coloured.
  for (const pb::MetricDelta &metric : runs.metrics()) {
    const QString name = QString::fromStdString(metric.metric());
    for (DeltaTableModel *model : {graphs_, reasons_, fallbacks_}) model->setNoise(name, metric.noise());
  }
  graphs_->setRows(graphRows(runs));
  reasons_->setRows(reasonRows(runs));
  fallbacks_->setRows(fallbackRows(comparison.fallbacksA, comparison.fallbacksB));
  tabs_->setTabText(0, tr("Graphs (%1 only in A, %2 only in B, %3 in both)")
                           .arg(runs.only_a_size())
                           .arg(runs.only_b_size())
                           .arg(runs.both_size()));
  tabs_->setTabText(1, tr("Recompile reasons (%1)").arg(runs.reasons_size()));
  tabs_->setTabText(2, tr("Fallbacks (%1)").arg(fallbacks_->rowCount()));
  // Blue and orange: told apart by most colour-blind readers, on light and
  // dark.
  chart_->setSeries({series(tr("A ") + runTitle(runs.a()), QColor(0x3b, 0x82, 0xd6), comparison.stepsA),
                     series(tr("B ") + runTitle(runs.b()), QColor(0xf0, 0x8c, 0x1a), comparison.stepsB)});
}

void CompareView::changeEvent(QEvent *event) {
  if (event->type() == QEvent::PaletteChange) {
    metrics_->setPalette(palette());
    for (DeltaTableModel *model : {graphs_, reasons_, fallbacks_}) model->setPalette(palette());
  }
  QWidget::changeEvent(event);
}

}  // namespace lazyscope::gui
