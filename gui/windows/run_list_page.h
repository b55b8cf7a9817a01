// The runs of one history as a sortable, filterable table, with a line that
// says why it is empty when it is (nothing recorded yet, still loading, the
// file failed to open, nothing matches the filter).
#pragma once

#include <QWidget>
#include <vector>

#include "lazyscope/history.pb.h"

class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace lazyscope::gui {

class RunListModel;

class RunListPage : public QWidget {
  Q_OBJECT

 public:
  // What an empty table means; picks the text shown in its middle.
  enum class EmptyReason { NoHistory, Loading, Failed, Loaded };

  explicit RunListPage(QWidget* parent = nullptr);
  ~RunListPage() override;

  // Replaces the rows. The first rows after forgetColumnFit() widen the
  // columns that they do not fit in (unless the user's widths were restored).
  void setRuns(const std::vector<pb::RunSummary>& runs);
  void setEmptyReason(EmptyReason reason);
  void forgetColumnFit() { columnsFitted_ = false; }

  RunListModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  int totalCount() const;
  int shownCount() const;
  // The run of the current row, or 0; selectRun() makes run `runId` current.
  qint64 currentRunId() const;
  bool selectRun(qint64 runId);
  // Every selected run, in table order (Ctrl/Shift+click select several:
  // the Charts tab overlays them, Compare takes two, Delete takes any).
  std::vector<int64_t> selectedRunIds() const;

  // Run editing and comparing: the table, for the actions' context menu.
  QTableView* table() const { return table_; }

  QByteArray saveHeaderState() const;
  void restoreHeaderState(const QByteArray& state);

 signals:
  // The number of rows shown changed (new runs, or the filter).
  void shownCountChanged();
  // The run of the current row changed; 0 when no row is current.
  void currentRunChanged(qint64 runId);
  // The set of selected rows changed.
  void selectedRunsChanged();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void createFilter();
  void createTable();
  void updatePlaceholder();
  void applyDefaultColumnWidths();
  void fitColumnsToContents();

  RunListModel* model_;
  QSortFilterProxyModel* proxy_;
  QLineEdit* filter_ = nullptr;
  QTableView* table_ = nullptr;
  QLabel* placeholder_ = nullptr;
  EmptyReason emptyReason_ = EmptyReason::NoHistory;
  bool columnsFitted_ = false;
  bool userColumnWidths_ = false;
};

}  // namespace lazyscope::gui
