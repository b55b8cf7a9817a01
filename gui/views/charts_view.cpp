#include "views/charts_view.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QMessageBox>
#include <QStackedLayout>
#include <QToolButton>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <set>

#include "loaders/run_profile_loader.h"
#include "util/chart_theme.h"
#include "util/image_export.h"
#include "util/run_status.h"

namespace lazyscope::gui {

namespace {

// The step timings, as offered in the quantity box, and their column.
struct Timing {
  const char* name;
  const google::protobuf::RepeatedField<double>& (pb::StepSeries::*column)() const;
};
const Timing kTimings[] = {
    {QT_TRANSLATE_NOOP("ChartsView", "step time (ms)"), &pb::StepSeries::step_ms},
    {QT_TRANSLATE_NOOP("ChartsView", "trace (ms)"), &pb::StepSeries::trace_ms},
    {QT_TRANSLATE_NOOP("ChartsView", "compile (ms)"), &pb::StepSeries::compile_ms},
    {QT_TRANSLATE_NOOP("ChartsView", "execute (ms)"), &pb::StepSeries::execute_ms},
    {QT_TRANSLATE_NOOP("ChartsView", "transfer (ms)"), &pb::StepSeries::transfer_ms},
    {QT_TRANSLATE_NOOP("ChartsView", "host wait (ms)"), &pb::StepSeries::host_wait_ms},
};

}  // namespace

ChartsView::ChartsView(QWidget* parent)
    : QWidget(parent), quantity_(new QComboBox(this)), view_(new QChartView(this)), empty_(new QLabel(this)) {
  setObjectName(QStringLiteral("chartsView"));
  quantity_->setObjectName(QStringLiteral("chartQuantity"));
  quantity_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  quantity_->setToolTip(tr("What to plot over the steps"));
  view_->setObjectName(QStringLiteral("chartView"));
  view_->setRubberBand(QChartView::RectangleRubberBand);
  view_->setRenderHint(QPainter::Antialiasing);
  view_->chart()->legend()->setAlignment(Qt::AlignBottom);
  view_->chart()->setMargins(QMargins(4, 4, 4, 4));
  empty_->setObjectName(QStringLiteral("chartEmpty"));
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setForegroundRole(QPalette::PlaceholderText);
  empty_->setWordWrap(true);

  auto* reset = new QToolButton(this);
  reset->setText(tr("Reset zoom"));
  reset->setToolTip(tr("Show every step again (a right click zooms out one level)"));
  reset->setIcon(QIcon::fromTheme(QStringLiteral("zoom-original")));
  reset->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  reset->setAutoRaise(true);
  auto* exportButton = new QToolButton(this);
  exportButton->setObjectName(QStringLiteral("chartExport"));
  exportButton->setText(tr("Export…"));
  exportButton->setToolTip(tr("Save the chart as PNG or SVG"));
  exportButton->setIcon(QIcon::fromTheme(QStringLiteral("document-save-as")));
  exportButton->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  exportButton->setAutoRaise(true);
  auto* hint = new QLabel(tr("Drag a rectangle to zoom in."), this);
  hint->setForegroundRole(QPalette::PlaceholderText);

  auto* bar = new QHBoxLayout;
  bar->setSpacing(6);
  bar->addWidget(new QLabel(tr("Plot:"), this));
  bar->addWidget(quantity_);
  bar->addWidget(reset);
  bar->addWidget(exportButton);
  bar->addStretch(1);
  bar->addWidget(hint);

  stack_ = new QStackedLayout;
  stack_->addWidget(view_);
  stack_->addWidget(empty_);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(4);
  layout->addLayout(bar);
  layout->addLayout(stack_, 1);

  connect(quantity_, &QComboBox::currentIndexChanged, this, [this] { plot(); });
  connect(quantity_, &QComboBox::activated, this, [this] { chosen_ = quantity_->currentText(); });
  connect(reset, &QToolButton::clicked, this, &ChartsView::resetZoom);
  connect(exportButton, &QToolButton::clicked, this, [this] {
    const QString error = exportWidgetWithDialog(view_, QStringLiteral("chart"));
    if (!error.isEmpty()) QMessageBox::warning(this, tr("Export"), error);
  });
  applyTheme();
  clear();
}

ChartsView::~ChartsView() = default;

QChart* ChartsView::chart() const { return view_->chart(); }

void ChartsView::setProfile(const RunProfile& profile) { setRuns({profile}); }

void ChartsView::setRuns(const std::vector<RunProfile>& runs) {
  runs_.clear();
  for (const RunProfile& profile : runs) {
    runs_.push_back({profile.runId, QString::fromStdString(profile.run.name()), profile.steps, profile.scalars});
  }
  fillQuantities();
  plot();
}

void ChartsView::clear() { setRuns({}); }

QStringList ChartsView::quantities() const {
  QStringList names;
  for (int i = 0; i < quantity_->count(); ++i) names << quantity_->itemText(i);
  return names;
}

QString ChartsView::quantity() const { return quantity_->currentText(); }

bool ChartsView::setQuantity(const QString& name) {
  const int index = quantity_->findText(name);
  if (index < 0) return false;
  chosen_ = name;
  quantity_->setCurrentIndex(index);
  return true;
}

void ChartsView::fillQuantities() {
  // Keep what the user chose when the new runs have it (switching runs while
  // looking at the host wait keeps showing the host wait).
  std::set<QString> scalars;
  for (const Run& run : runs_) {
    for (const pb::ScalarSeries& series : run.scalars) scalars.insert(QString::fromStdString(series.name()));
  }
  const QSignalBlocker blocker(quantity_);
  quantity_->clear();
  for (const QString& name : scalars) quantity_->addItem(name);
  if (!scalars.empty()) quantity_->insertSeparator(quantity_->count());
  for (const Timing& timing : kTimings) quantity_->addItem(tr(timing.name));
  const int index = chosen_.isEmpty() ? -1 : quantity_->findText(chosen_);
  // Default: the first scalar (usually the loss), else the step time.
  quantity_->setCurrentIndex(index >= 0 ? index : 0);
}

std::vector<QPointF> ChartsView::pointsOf(const Run& run, const QString& quantity) const {
  std::vector<QPointF> points;
  for (const pb::ScalarSeries& series : run.scalars) {
    if (QString::fromStdString(series.name()) != quantity) continue;
    points.reserve(static_cast<size_t>(series.values_size()));
    for (int i = 0; i < series.values_size() && i < series.steps_size(); ++i) {
      if (std::isfinite(series.values(i))) points.emplace_back(static_cast<double>(series.steps(i)), series.values(i));
    }
    return points;
  }
  for (const Timing& timing : kTimings) {
    if (tr(timing.name) != quantity) continue;
    const auto& column = (run.steps.*timing.column)();
    points.reserve(static_cast<size_t>(column.size()));
    for (int i = 0; i < column.size() && i < run.steps.steps_size(); ++i) {
      points.emplace_back(static_cast<double>(run.steps.steps(i)), column.Get(i));
    }
  }
  return points;
}

std::vector<QPointF> ChartsView::thin(const std::vector<QPointF>& points, int maxPoints) {
  if (static_cast<int>(points.size()) <= maxPoints || maxPoints < 2) return points;
  const size_t buckets = static_cast<size_t>(maxPoints / 2);
  const size_t perBucket = (points.size() + buckets - 1) / buckets;
  std::vector<QPointF> out;
  out.reserve(buckets * 2);
  for (size_t begin = 0; begin < points.size(); begin += perBucket) {
    const auto first = points.begin() + static_cast<std::ptrdiff_t>(begin);
    const auto last = points.begin() + static_cast<std::ptrdiff_t>(std::min(begin + perBucket, points.size()));
    const auto [low, high] = std::minmax_element(first, last,
                                                 [](const QPointF& a, const QPointF& b) { return a.y() < b.y(); });
    if (low == high) {
      out.push_back(*low);
    } else if (low->x() < high->x()) {
      out.push_back(*low);
      out.push_back(*high);
    } else {
      out.push_back(*high);
      out.push_back(*low);
    }
  }
  return out;
}

void ChartsView::plot() {
  QChart* chart = view_->chart();
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
  const QString quantity = quantity_->currentText();
  if (runs_.empty()) {
    empty_->setText(tr("No run selected."));
    stack_->setCurrentWidget(empty_);
    return;
  }
  auto* x = new QValueAxis(chart);
  x->setTitleText(tr("step"));
  x->setLabelFormat(QStringLiteral("%d"));
  auto* y = new QValueAxis(chart);
  y->setTitleText(quantity);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  double minX = 0, maxX = 1, minY = 0, maxY = 1;
  bool any = false;
  for (const Run& run : runs_) {
    const std::vector<QPointF> points = thin(pointsOf(run, quantity), kMaxPoints);
    if (points.empty()) continue;
    auto* series = new QLineSeries(chart);
    series->setName(tr("#%1 %2").arg(run.id).arg(run.name));
    series->setPointsVisible(points.size() < 60);
    QList<QPointF> list(points.begin(), points.end());
    series->replace(list);
    chart->addSeries(series);
    series->attachAxis(x);
    series->attachAxis(y);
    for (const QPointF& p : points) {
      if (!any) {
        minX = maxX = p.x();
        minY = maxY = p.y();
        any = true;
      }
      minX = std::min(minX, p.x());
      maxX = std::max(maxX, p.x());
      minY = std::min(minY, p.y());
      maxY = std::max(maxY, p.y());
    }
  }
  if (!any) {
    empty_->setText(runs_.size() == 1 ? tr("Run %1 recorded no values of \"%2\".").arg(runs_.front().id).arg(quantity)
                                      : tr("None of these runs recorded \"%1\".").arg(quantity));
    stack_->setCurrentWidget(empty_);
    return;
  }
  stack_->setCurrentWidget(view_);
  // Timings start at zero so that bars of time are read against it; scalars
  // (a loss near 0.3) use their own range with a little headroom.
  const bool timing = quantity.endsWith(QLatin1String("(ms)"));
  const double pad = (maxY - minY) * 0.05 + (maxY == minY ? std::max(std::abs(maxY) * 0.1, 1e-3) : 0.0);
  x->setRange(minX, std::max(maxX, minX + 1));
  // A scalar that is never negative (a loss, an accuracy) keeps 0 as floor.
  y->setRange(timing || (minY >= 0.0 && minY - pad < 0.0) ? 0.0 : minY - pad, maxY + pad);
  x->applyNiceNumbers();
  y->applyNiceNumbers();
  chart->legend()->setVisible(runs_.size() > 1);
  chart->setTitle(runs_.size() == 1 ? QString() : tr("%1 runs overlaid").arg(runs_.size()));
  applyTheme();
}

void ChartsView::resetZoom() { view_->chart()->zoomReset(); }

QString ChartsView::exportImage(const QString& path) { return exportWidgetImage(view_, path); }

void ChartsView::applyTheme() {
  // The chart's own colours follow the window's palette (light or dark).
  QChart* chart = view_->chart();
  const QPalette pal = palette();
  applyChartPalette(chart, pal);
  const QList<QAbstractSeries*> series = chart->series();
  const bool dark = isDarkPalette(pal);
  static const QColor kLight[] = {QColor(0x1c, 0x71, 0xd8), QColor(0xc0, 0x1c, 0x28), QColor(0x26, 0xa2, 0x69),
                                  QColor(0x91, 0x41, 0xac), QColor(0xc6, 0x46, 0x00)};
  static const QColor kDark[] = {QColor(0x62, 0xa0, 0xea), QColor(0xff, 0x7b, 0x72), QColor(0x57, 0xe3, 0x89),
                                 QColor(0xc0, 0x61, 0xcb), QColor(0xff, 0xa3, 0x48)};
  for (qsizetype i = 0; i < series.size(); ++i) {
    if (auto* line = qobject_cast<QLineSeries*>(series[i])) {
      QPen pen(dark ? kDark[i % 5] : kLight[i % 5]);
      pen.setWidthF(1.5);
      line->setPen(pen);
    }
  }
  view_->setBackgroundBrush(pal.color(QPalette::Base));
}

void ChartsView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) applyTheme();
}

}  // namespace lazyscope::gui
