#include "models/metric_delta_model.h"

#include <cmath>

#include "util/format.h"
#include "util/run_status.h"

namespace lazyscope::gui {
namespace {

bool isTime(const std::string &metric) { return metric.ends_with("_ms"); }

QString metricTitle(const std::string &metric) {
  if (metric == "steps") return MetricDeltaModel::tr("Steps");
  if (metric == "wall_ms") return MetricDeltaModel::tr("Wall time");
  if (metric == "median_step_ms") return MetricDeltaModel::tr("Median step");
  if (metric == "compiles") return MetricDeltaModel::tr("Uncached compiles");
  if (metric == "compile_ms") return MetricDeltaModel::tr("Compile time");
  if (metric == "executions") return MetricDeltaModel::tr("Executions");
  if (metric == "execute_ms") return MetricDeltaModel::tr("Execute time");
  if (metric == "cache_hit_rate") return MetricDeltaModel::tr("Cache hit rate");
  if (metric == "fallbacks") return MetricDeltaModel::tr("CPU fallbacks");
  return QString::fromStdString(metric);
}

}  // namespace

QString signedMetricText(const std::string &metric, double value, bool withSign) {
  const QString sign = withSign ? signOf(value) : QString();
  const double magnitude = withSign ? std::abs(value) : value;
  if (isTime(metric)) return sign + formatStepTime(magnitude);
  if (metric == "cache_hit_rate") return sign + QStringLiteral("%1 %").arg(magnitude * 100, 0, 'f', 1);
  return sign + QString::number(magnitude, 'f', 0);
}

QColor verdictColor(int verdict, const QPalette &palette) {
  const bool dark = isDarkPalette(palette);
  if (verdict > 0) return dark ? QColor(0x6f, 0xd0, 0x7a) : QColor(0x1b, 0x7a, 0x2e);
  if (verdict < 0) return dark ? QColor(0xff, 0x7b, 0x72) : QColor(0xb3, 0x26, 0x1e);
  return palette.color(QPalette::Text);
}

MetricDeltaModel::MetricDeltaModel(QObject *parent) : QAbstractTableModel(parent) {}

void MetricDeltaModel::setMetrics(std::vector<pb::MetricDelta> metrics) {
  beginResetModel();
  metrics_ = std::move(metrics);
  endResetModel();
}

int MetricDeltaModel::rowCount(const QModelIndex &parent) const {
  return parent.isValid() ? 0 : static_cast<int>(metrics_.size());
}

int MetricDeltaModel::columnCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : NUM_COLUMNS; }

QVariant MetricDeltaModel::data(const QModelIndex &index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const pb::MetricDelta &m = metrics_[static_cast<size_t>(index.row())];
  const bool hasChange = m.a() != 0;
  const double change = hasChange ? m.delta() / std::abs(m.a()) * 100 : 0;
  switch (role) {
    case VerdictRole: return m.verdict();
    case Qt::ForegroundRole:
      if (index.column() == Delta || index.column() == Change) {
        return verdictColor(m.verdict(), palette_);
      }
      return {};
    case Qt::TextAlignmentRole:
      return index.column() == Metric ? QVariant() : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case SortRole:
      switch (index.column()) {
        case Metric: return metricTitle(m.metric());
        case A: return m.a();
        case B: return m.b();
        case Delta: return m.delta();
        case Change: return change;
        default: return {};
      }
    case Qt::DisplayRole:
      switch (index.column()) {
        case Metric: return metricTitle(m.metric());
        case A: return signedMetricText(m.metric(), m.a(), false);
        case B: return signedMetricText(m.metric(), m.b(), false);
        case Delta: return signedMetricText(m.metric(), m.delta(), true);
        case Change:
          if (!hasChange) return m.delta() == 0 ? QStringLiteral("0 %") : QStringLiteral("new");
          return QStringLiteral("%1%2 %").arg(signOf(change)).arg(std::abs(change), 0, 'f', 1);
        default: return {};
      }
    default: return {};
  }
}

QVariant MetricDeltaModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Metric: return tr("Metric");
    case A: return tr("A");
    case B: return tr("B");
    case Delta: return tr("Δ (B − A)");
    case Change: return tr("Change");
    default: return {};
  }
}

}  // namespace lazyscope::gui
