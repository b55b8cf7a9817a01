// The summary rows of a comparison: each metric in A and B, the signed delta
// (B - A) and the change in percent, the delta coloured green when B is
// better and red when it is worse (lower is better for times and counts of
// compiles and fallbacks; higher for the cache hit rate; steps are neutral).
#pragma once

#include <QAbstractTableModel>
#include <QPalette>
#include <vector>

#include "lazyscope/history.pb.h"

namespace lazyscope::gui {

class MetricDeltaModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Columns { Metric, A, B, Delta, Change, NUM_COLUMNS };
  enum Roles {
    SortRole = Qt::UserRole,
    VerdictRole,  // int: +1 B is better, -1 worse, 0 equal or neutral
  };

  explicit MetricDeltaModel(QObject *parent = nullptr);

  void setMetrics(std::vector<pb::MetricDelta> metrics);
  // Colours are picked for this palette's Base (light or dark).
  void setPalette(const QPalette &palette) { palette_ = palette; }

  int rowCount(const QModelIndex &parent = {}) const override;
  int columnCount(const QModelIndex &parent = {}) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<pb::MetricDelta> metrics_;
  QPalette palette_;
};

// "+3", "−12.5 ms", "+2.0 %": a signed value in the metric's unit.
QString signedMetricText(const std::string &metric, double value, bool withSign);
// Green or red readable on `palette`'s Base.
QColor verdictColor(int verdict, const QPalette &palette);

}  // namespace lazyscope::gui
