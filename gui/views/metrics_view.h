// The Metrics tab: the run's metrics report (counters and timed metrics with
// percentiles) as a table that a search box filters by name.
#pragma once

#include <QWidget>

class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace lazyscope::gui {

class MetricsModel;
struct RunProfile;

class MetricsView : public QWidget {
  Q_OBJECT

 public:
  explicit MetricsView(QWidget* parent = nullptr);
  ~MetricsView() override;

  void setProfile(const RunProfile& profile);
  void clear();

  MetricsModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QLineEdit* search() const { return search_; }
  QString note() const;

 private:
  MetricsModel* model_;
  QSortFilterProxyModel* proxy_;
  QLineEdit* search_;
  QTableView* table_;
  QLabel* note_;
};

}  // namespace lazyscope::gui
