#include "models/delta_table_model.h"

#include <cmath>

#include "models/metric_delta_model.h"  // verdictColor
#include "util/format.h"

namespace lazyscope::gui {
namespace {

QString valueText(std::optional<double> value, bool isTime) {
  if (!value) return QStringLiteral("—");
  return isTime ? formatStepTime(*value) : QString::number(*value, 'f', 0);
}

struct Meaning {
  const char *metric;
  Better better;
};

// Costs are better lower; throughput and cache hits higher; how much work a
// run did (steps, executions) is neither.
constexpr Meaning kMeanings[] = {
    {"compiles", Better::Lower},       {"compile_ms", Better::Lower},      {"execute_ms", Better::Lower},
    {"fallbacks", Better::Lower},      {"fallback_ms", Better::Lower},     {"wall_ms", Better::Lower},
    {"median_step_ms", Better::Lower}, {"executions", Better::Neither},    {"steps", Better::Neither},
    {"steps_per_s", Better::Higher},   {"cache_hit_rate", Better::Higher},
};

}  // namespace

Better betterDirection(const QString &metric) {
  for (const Meaning &m : kMeanings) {
    if (metric == QLatin1String(m.metric)) return m.better;
  }
  return Better::Neither;
}

int deltaVerdict(Better better, double delta) {
  if (better == Better::Neither || delta == 0) return 0;
  return (delta < 0) == (better == Better::Lower) ? 1 : -1;
}

DeltaTableModel::DeltaTableModel(QStringList fixedTitles, std::vector<DeltaColumn> columns, QObject *parent)
    : QAbstractTableModel(parent), fixedTitles_(std::move(fixedTitles)), columns_(std::move(columns)) {}

void DeltaTableModel::setRows(std::vector<DeltaRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

void DeltaTableModel::setNoise(const QString &metric, double noise) {
  beginResetModel();
  noise_.insert(metric, noise);
  endResetModel();
}

int DeltaTableModel::rowCount(const QModelIndex &parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DeltaTableModel::columnCount(const QModelIndex &parent) const {
  return parent.isValid() ? 0 : FIRST_VALUE + static_cast<int>(columns_.size());
}

QVariant DeltaTableModel::data(const QModelIndex &index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const DeltaRow &row = rows_[static_cast<size_t>(index.row())];
  const int column = index.column();
  if (column < FIRST_VALUE) {
    if (role != Qt::DisplayRole && role != SortRole && role != Qt::ToolTipRole) return {};
    return column == Presence ? row.presence : column == Item ? row.item : row.where;
  }
  const size_t v = static_cast<size_t>(column - FIRST_VALUE);
  if (v >= row.values.size()) return {};
  const auto [a, b] = row.values[v];
  const DeltaColumn &spec = columns_[v];
  const bool isTime = spec.metric.endsWith(QLatin1String("_ms"));
  const double delta = b.value_or(0) - a.value_or(0);
  // A row in one run only is a difference of kind, not better or worse.
  const int verdict = a && b && std::abs(delta) > noise_.value(spec.metric, 0.0)
                          ? deltaVerdict(betterDirection(spec.metric), delta)
                          : 0;
  switch (role) {
    case SortRole:
    case DeltaRole: return delta;
    case VerdictRole: return verdict;
    case Qt::TextAlignmentRole: return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole: {
      if (verdict == 0) return {};
      return verdictColor(verdict, palette_);
    }
    case Qt::DisplayRole: {
      QString text = QStringLiteral("%1 → %2").arg(valueText(a, isTime), valueText(b, isTime));
      if (a && b && delta != 0) {
        text += QStringLiteral("  (%1%2)").arg(signOf(delta), valueText(std::abs(delta), isTime));
      }
      return text;
    }
    default: return {};
  }
}

QVariant DeltaTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section < FIRST_VALUE) return section < fixedTitles_.size() ? fixedTitles_[section] : QVariant();
  const size_t v = static_cast<size_t>(section - FIRST_VALUE);
  return v < columns_.size() ? QVariant(columns_[v].title + tr(" (A → B)")) : QVariant();
}

}  // namespace lazyscope::gui
