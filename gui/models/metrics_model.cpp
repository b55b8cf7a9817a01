#include "models/metrics_model.h"

#include "lazyscope/event_text.h"
#include "util/format.h"

namespace lazyscope::gui {

namespace {

bool isNumeric(int column) { return column >= MetricsModel::Value; }

bool isBytes(const pb::MetricValue& metric) {
  return metric.is_counter() && QString::fromStdString(metric.name()).endsWith(QLatin1String("Bytes"));
}

}  // namespace

MetricsModel::MetricsModel(QObject* parent) : QAbstractTableModel(parent) {}

MetricsModel::~MetricsModel() = default;

void MetricsModel::setMetrics(std::vector<pb::MetricValue> metrics) {
  beginResetModel();
  metrics_ = std::move(metrics);
  endResetModel();
}

int MetricsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(metrics_.size());
}

int MetricsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : NUM_COLUMNS; }

QVariant MetricsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const pb::MetricValue& metric = metrics_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return displayData(metric, index.column());
    case SortRole: return sortData(metric, index.column());
    case Qt::ToolTipRole:
      if (index.column() == Value && isBytes(metric)) return tr("%1 bytes").arg(metric.value());
      return {};
    case Qt::TextAlignmentRole:
      return static_cast<int>((isNumeric(index.column()) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant MetricsModel::displayData(const pb::MetricValue& metric, int column) const {
  // A counter has a value only; a timed metric the rest. Empty cells, not
  // zeros, where a column does not apply.
  switch (column) {
    case Name: return QString::fromStdString(metric.name());
    case Kind: return QString::fromStdString(event_text::metric_kind_label(metric));
    case Value:
      if (!metric.is_counter()) return {};
      return isBytes(metric) ? formatBytes(metric.value()) : QString::number(metric.value());
    case Count: return metric.is_counter() ? QVariant() : QVariant::fromValue<qint64>(metric.count());
    case Total: return metric.is_counter() || metric.count() == 0 ? QVariant() : formatStepTime(metric.total_ms());
    case P50: return metric.is_counter() || metric.count() == 0 ? QVariant() : formatStepTime(metric.p50_ms());
    case P90: return metric.is_counter() || metric.count() == 0 ? QVariant() : formatStepTime(metric.p90_ms());
    case P99: return metric.is_counter() || metric.count() == 0 ? QVariant() : formatStepTime(metric.p99_ms());
    default: return {};
  }
}

QVariant MetricsModel::sortData(const pb::MetricValue& metric, int column) const {
  switch (column) {
    case Value: return QVariant::fromValue<qint64>(metric.is_counter() ? metric.value() : -1);
    case Count: return QVariant::fromValue<qint64>(metric.is_counter() ? -1 : metric.count());
    case Total: return metric.is_counter() ? -1.0 : metric.total_ms();
    case P50: return metric.is_counter() ? -1.0 : metric.p50_ms();
    case P90: return metric.is_counter() ? -1.0 : metric.p90_ms();
    case P99: return metric.is_counter() ? -1.0 : metric.p99_ms();
    default: return displayData(metric, column);
  }
}

QVariant MetricsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= NUM_COLUMNS) return {};
  if (role == Qt::DisplayRole) {
    switch (section) {
      case Name: return tr("Metric");
      case Kind: return tr("Kind");
      case Value: return tr("Value");
      case Count: return tr("Count");
      case Total: return tr("Total");
      case P50: return tr("p50");
      case P90: return tr("p90");
      case P99: return tr("p99");
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    return static_cast<int>((isNumeric(section) ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  }
  return {};
}

}  // namespace lazyscope::gui
