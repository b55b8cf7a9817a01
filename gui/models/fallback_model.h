// CPU fallbacks of one run grouped by op and source line (as the storage
// query library groups them, most expensive first), one row per group.
// Sorting is left to a QSortFilterProxyModel on SortRole.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "lazyscope/history.pb.h"

namespace lazyscope::gui {

class FallbackModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Columns { Op, Source, Count, TotalTime, Bytes, Steps, NUM_COLUMNS };
  enum Roles {
    SortRole = Qt::UserRole,  // raw value of the cell
    GroupIndexRole,           // the row's index into groups(), in every column
  };

  explicit FallbackModel(QObject* parent = nullptr);
  ~FallbackModel() override;

  void setGroups(std::vector<pb::FallbackGroup> groups);
  const std::vector<pb::FallbackGroup>& groups() const { return groups_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant displayData(const pb::FallbackGroup& group, int column) const;
  QVariant sortData(const pb::FallbackGroup& group, int column) const;

  std::vector<pb::FallbackGroup> groups_;
};

}  // namespace lazyscope::gui
