#include "views/kernels_view.h"

#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedLayout>
#include <QTreeView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "loaders/background_job.h"
#include "models/kernel_model.h"
#include "query/history_reader.h"
#include "util/chart_theme.h"
#include "util/format.h"
#include "util/run_status.h"

namespace lazyscope::gui {

namespace {

struct LoadResult {
  bool ok = false;
  pb::KernelReport report;
  QString error;
};

bool onChart(const pb::KernelRow& k) { return k.flops() > 0 && k.gflops() > 0 && k.intensity() > 0; }

}  // namespace

int logAxisBase(double lo, double hi, int maxLabels) {
  if (!(lo > 0) || !(hi > lo) || maxLabels < 2) return 10;
  const double decades = std::log10(hi / lo);
  int exponent = 1;
  while (decades / exponent + 1 > maxLabels) ++exponent;
  return static_cast<int>(std::lround(std::pow(10.0, exponent)));
}

KernelsView::KernelsView(QWidget* parent)
    : QWidget(parent),
      job_(new BackgroundJob(this)),
      model_(new KernelModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      tree_(new QTreeView(this)),
      chart_(new QChartView(this)),
      caption_(new QLabel(this)),
      empty_(new QLabel(this)) {
  setObjectName(QStringLiteral("kernelsView"));
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(KernelModel::SortRole);
  tree_->setObjectName(QStringLiteral("kernelTree"));
  tree_->setModel(proxy_);
  tree_->setSortingEnabled(true);
  tree_->sortByColumn(KernelModel::TotalTime, Qt::DescendingOrder);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->header()->setStretchLastSection(true);
  chart_->setObjectName(QStringLiteral("rooflineChart"));
  chart_->setRenderHint(QPainter::Antialiasing);
  chart_->setMinimumWidth(320);
  chart_->chart()->legend()->setAlignment(Qt::AlignBottom);
  chart_->chart()->setMargins(QMargins(4, 4, 4, 4));
  caption_->setObjectName(QStringLiteral("kernelsCaption"));
  caption_->setTextFormat(Qt::PlainText);
  caption_->setWordWrap(true);
  empty_->setObjectName(QStringLiteral("kernelsEmpty"));
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setForegroundRole(QPalette::PlaceholderText);
  empty_->setWordWrap(true);
  empty_->setTextFormat(Qt::PlainText);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(tree_);
  split->addWidget(chart_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* page = new QWidget(this);
  auto* pageLayout = new QVBoxLayout(page);
  pageLayout->setContentsMargins(0, 0, 0, 0);
  pageLayout->addWidget(split);
  stack_ = new QStackedLayout;
  stack_->addWidget(page);
  stack_->addWidget(empty_);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(4);
  layout->addWidget(caption_);
  layout->addLayout(stack_, 1);

  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& current) {
    highlight(current.isValid() ? current.data(KernelModel::KernelIndexRole).toInt() : -1);
  });
  applyTheme();
  clear();
}

KernelsView::~KernelsView() = default;

void KernelsView::setRun(const QString& path, int64_t runId) {
  showMessage(tr("Loading the kernel profile of run %1…").arg(runId));
  job_->run(
      tr("Reading kernel profile"),
      [path = path.toStdString(), runId] {
        LoadResult result;
        try {
          const storage::HistoryReader reader(path);
          result.report = reader.kernel_report(runId);
          result.ok = true;
        } catch (const std::exception& e) {
          result.error = QString::fromUtf8(e.what());
        }
        return result;
      },
      [this, runId](const LoadResult& result) {
        if (result.ok) {
          setReport(result.report);
        } else {
          model_->setReport({});
          caption_->clear();
          showMessage(tr("Could not read the kernel profile of run %1. %2").arg(runId).arg(result.error));
        }
      });
}

void KernelsView::setReport(const pb::KernelReport& report) {
  model_->setReport(report);
  emit kernelCountChanged(report.kernels_size());
  if (report.kernels_size() == 0) {
    caption_->clear();
    showMessage(tr("No kernel profile. %1").arg(QString::fromStdString(report.missing_reason())));
    plot();
    return;
  }
  QString text = tr("%1 kernels in %2 profiled graph(s), %3 ms of kernel time")
                     .arg(report.kernels_size())
                     .arg(report.graphs())
                     .arg(report.total_ms(), 0, 'f', 2);
  if (report.peak_bytes() > 0) text += tr("; memory-plan peak %1").arg(formatBytes(report.peak_bytes()));
  if (report.has_peaks()) {
    const pb::MachinePeakEvent& p = report.peaks();
    text += tr(". Machine: %1 GFLOP/s (SGEMM), %2 GB/s (STREAM triad)")
                .arg(p.gemm_gflops(), 0, 'f', 1)
                .arg(p.stream_gbps(), 0, 'f', 1);
    if (p.cache_gbps() > 0) {
      text += tr(", %1 GB/s in cache (up to %2 per kernel)")
                  .arg(p.cache_gbps(), 0, 'f', 1)
                  .arg(formatBytes(p.cache_bytes()));
    }
    text += tr(", %1 thread(s)%2.")
                .arg(p.threads())
                .arg(p.isa().empty() ? QString() : QStringLiteral(", ") + QString::fromStdString(p.isa()));
  } else {
    text += tr(". The run recorded no machine peaks: no roofs, no fractions.");
  }
  caption_->setText(text);
  stack_->setCurrentIndex(0);
  for (int c = 0; c < KernelModel::Source; ++c) tree_->resizeColumnToContents(c);
  plot();
  selectKernel(0);
}

void KernelsView::clear() {
  job_->cancel();
  model_->setReport({});
  caption_->clear();
  plot();
  showMessage(tr("No run selected."));
}

bool KernelsView::isLoading() const { return job_->isRunning(); }

QString KernelsView::caption() const { return caption_->text(); }

QString KernelsView::emptyText() const { return stack_->currentIndex() == 1 ? empty_->text() : QString(); }

int KernelsView::plottedKernels() const { return plotted_; }

bool KernelsView::selectKernel(int row) {
  if (row < 0 || row >= model_->rowCount()) return false;
  const QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
  tree_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  return true;
}

void KernelsView::showMessage(const QString& text) {
  empty_->setText(text);
  stack_->setCurrentIndex(1);
}

void KernelsView::plot() {
  QChart* chart = chart_->chart();
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
  selected_ = nullptr;
  plotted_ = 0;
  const pb::KernelReport& report = model_->report();
  // The ranges cover every point and, with peaks, the ridge where the roofs meet.
  double xmin = std::numeric_limits<double>::max(), xmax = 0, ymin = std::numeric_limits<double>::max(), ymax = 0;
  auto* points = new QScatterSeries(chart);
  points->setName(tr("kernels"));
  points->setMarkerSize(9);
  for (const pb::KernelRow& k : report.kernels()) {
    if (!onChart(k)) continue;
    points->append(k.intensity(), k.gflops());
    xmin = std::min(xmin, k.intensity());
    xmax = std::max(xmax, k.intensity());
    ymin = std::min(ymin, k.gflops());
    ymax = std::max(ymax, k.gflops());
    ++plotted_;
  }
  QLineSeries* roof = nullptr;
  if (report.has_peaks() && report.peaks().stream_gbps() > 0 && report.peaks().gemm_gflops() > 0) {
    const double peak = report.peaks().gemm_gflops(), bw = report.peaks().stream_gbps();
    const double ridge = peak / bw;
    xmin = std::min(xmin, ridge / 8);
    xmax = std::max(xmax, ridge * 8);
    ymax = std::max(ymax, peak);
    ymin = std::min(ymin, xmin * bw);
    roof = new QLineSeries(chart);
    roof->setName(tr("roofs"));  // the values are in the caption above
    roof->append(xmin / 2, xmin / 2 * bw);
    roof->append(ridge, peak);
    roof->append(xmax * 2, peak);
    chart->addSeries(roof);
    // The cache's slope, up to where it meets the GEMM peak: the roof of
    // kernels whose bytes fit the cache.
    if (const double cache = report.peaks().cache_gbps(); cache > bw) {
      auto* cacheRoof = new QLineSeries(chart);
      cacheRoof->setName(tr("cache"));
      cacheRoof->append(xmin / 2, xmin / 2 * cache);
      cacheRoof->append(peak / cache, peak);
      chart->addSeries(cacheRoof);
    }
  }
  if (plotted_ == 0 && roof == nullptr) {
    chart->setTitle(tr("No kernel with FLOPs was timed: nothing to place on a roofline."));
    return;
  }
  chart->setTitle(tr("Roofline (log-log)"));
  chart->addSeries(points);
  selected_ = new QScatterSeries(chart);
  selected_->setName(tr("selected"));
  selected_->setMarkerSize(15);
  chart->addSeries(selected_);
  auto* x = new QLogValueAxis(chart);
  x->setTitleText(tr("FLOP per byte"));
  x->setLabelFormat(QStringLiteral("%g"));
  x->setBase(logAxisBase(xmin / 2, xmax * 2, 5));  // the chart is narrow beside the table
  x->setRange(xmin / 2, xmax * 2);
  auto* y = new QLogValueAxis(chart);
  y->setTitleText(tr("GFLOP/s"));
  y->setLabelFormat(QStringLiteral("%g"));
  y->setBase(logAxisBase(ymin / 2, ymax * 2, 9));
  y->setRange(ymin / 2, ymax * 2);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : chart->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
  applyTheme();
}

void KernelsView::highlight(int kernel) {
  if (selected_ == nullptr) return;
  selected_->clear();
  const pb::KernelReport& report = model_->report();
  if (kernel < 0 || kernel >= report.kernels_size()) return;
  const pb::KernelRow& k = report.kernels(kernel);
  if (onChart(k)) selected_->append(k.intensity(), k.gflops());
}

void KernelsView::applyTheme() {
  QChart* chart = chart_->chart();
  const QPalette pal = palette();
  const bool dark = isDarkPalette(pal);
  applyChartPalette(chart, pal);
  const QColor roofColor = dark ? QColor(0xff, 0x7b, 0x72) : QColor(0xc0, 0x1c, 0x28);
  const QColor pointColor = dark ? QColor(0x62, 0xa0, 0xea) : QColor(0x1c, 0x71, 0xd8);
  const QColor selectedColor = dark ? QColor(0xff, 0xa3, 0x48) : QColor(0xc6, 0x46, 0x00);
  for (QAbstractSeries* s : chart->series()) {
    if (auto* line = qobject_cast<QLineSeries*>(s); line && !qobject_cast<QScatterSeries*>(s)) {
      QPen pen(roofColor);
      pen.setWidthF(2.0);
      // The cache's roof dashed: a bound only for kernels that fit the cache.
      if (line->name() == tr("cache")) pen.setStyle(Qt::DashLine);
      line->setPen(pen);
    } else if (auto* scatter = qobject_cast<QScatterSeries*>(s)) {
      const QColor c = scatter == selected_ ? selectedColor : pointColor;
      scatter->setColor(c);
      scatter->setBorderColor(scatter == selected_ ? pal.color(QPalette::Text) : c);
    }
  }
  chart_->setBackgroundBrush(pal.color(QPalette::Base));
}

void KernelsView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) applyTheme();
}

}  // namespace lazyscope::gui
