// A run's metrics report, one row per counter, gauge or timing, in the
// engine's names. Filtering and sorting are left to a QSortFilterProxyModel
// (filter on the Name column, sort on SortRole).
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "lazyscope/events.pb.h"

namespace lazyscope::gui {

class MetricsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Columns { Name, Kind, Value, Count, Total, P50, P90, P99, NUM_COLUMNS };
  enum Roles { SortRole = Qt::UserRole };

  explicit MetricsModel(QObject* parent = nullptr);
  ~MetricsModel() override;

  void setMetrics(std::vector<pb::MetricValue> metrics);
  const std::vector<pb::MetricValue>& metrics() const { return metrics_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant displayData(const pb::MetricValue& metric, int column) const;
  QVariant sortData(const pb::MetricValue& metric, int column) const;

  std::vector<pb::MetricValue> metrics_;
};

}  // namespace lazyscope::gui
