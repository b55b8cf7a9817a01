// The Kernels tab's model: a run's profiled kernels (storage's KernelReport,
// most total time first) as top-level rows, each with its IR nodes (op, id,
// source line, module scope) as child rows. Sorting is left to a
// QSortFilterProxyModel on SortRole.
#pragma once

#include <QAbstractItemModel>

#include "lazyscope/history.pb.h"

namespace lazyscope::gui {

class KernelModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Columns { Kernel, TotalTime, Share, Calls, MeanTime, GFlops, GBps, Roofline, Graph, Source, NUM_COLUMNS };
  enum Roles {
    SortRole = Qt::UserRole,  // raw value of the cell
    KernelIndexRole,          // index into report().kernels() of the row (its parent's, for a node)
  };

  explicit KernelModel(QObject* parent = nullptr);
  ~KernelModel() override;

  void setReport(pb::KernelReport report);
  const pb::KernelReport& report() const { return report_; }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant kernelData(const pb::KernelRow& k, int column, int role) const;
  QVariant nodeData(const pb::KernelNode& n, int column, int role) const;

  pb::KernelReport report_;
};

// "train.py:11" for the kernel's nodes: the one line they share, "3 lines"
// when they come from several, "" when none is known.
QString kernelSourceText(const pb::KernelRow& kernel);

}  // namespace lazyscope::gui
