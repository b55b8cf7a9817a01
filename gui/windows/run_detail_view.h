// The detail area for the run selected in the run table: tabs (Overview,
// Recompilations) filled from a RunDetailLoader, one background read per
// selection; a newer selection drops the result of an older one.
#pragma once

#include <QWidget>
#include <cstdint>
#include <memory>

class QLabel;
class QTabWidget;

namespace lazyscope::gui {

class GraphTab;
class OverviewTab;
class RecompilationsTab;
class RunDetailLoader;
struct RunDetail;

class RunDetailView : public QWidget {
  Q_OBJECT

 public:
  explicit RunDetailView(QWidget* parent = nullptr);
  ~RunDetailView() override;

  // Reads run `runId` of the history `path` in the background.
  void showRun(const QString& path, int64_t runId);
  // No run selected.
  void clear();

  bool isLoading() const;
  // The run shown, or 0.
  int64_t runId() const;
  QTabWidget* tabs() const { return tabs_; }
  OverviewTab* overview() const { return overview_; }
  RecompilationsTab* recompilations() const { return recompilations_; }
  GraphTab* graphs() const { return graphs_; }

 signals:
  // The detail of a run is on screen.
  void runShown(qint64 runId);

 private:
  void onLoaded(const RunDetail& detail);
  void onFailed(qint64 runId, const QString& message);

  RunDetailLoader* loader_;
  std::unique_ptr<RunDetail> detail_;
  QLabel* status_;
  QTabWidget* tabs_;
  OverviewTab* overview_;
  RecompilationsTab* recompilations_;
  GraphTab* graphs_ = nullptr;
};

}  // namespace lazyscope::gui
