// The main window: the runs of one history file (a RunListPage) above the
// detail of the selected run (a RunDetailView), the File
// menu to open another, and a status bar with the file and its run count.
// Runs are read in the background by a HistoryLoader; errors show up inline
// in a banner, never in a modal dialog, and the window stays usable.
#pragma once

#include <QMainWindow>
#include <vector>

#include "lazyscope/history.pb.h"

class QAction;
class QLabel;
class QMenu;
class QSortFilterProxyModel;
class QSplitter;

namespace lazyscope::gui {

class HistoryLoader;
class MessageBanner;
class RunListModel;
class RunActions;
class RunDetailView;
class RunListPage;
class TaskProgress;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads the runs of `path` in the background. A missing or unreadable file
  // is reported in the banner.
  void openHistory(const QString& path);
  // Opens the user's default history (see storage::default_history_path()).
  // That file not existing yet is normal (nothing recorded so far): the list
  // stays empty and the status bar says where runs will appear.
  void openDefaultHistory();
  // Selects the run `ref` names once the runs of the history being loaded
  // arrive: a run id, a run name (the newest run of that name) or "last", as
  // the command line takes them. An unknown one is reported in the banner.
  // Without one, the newest run is selected.
  void selectRunWhenLoaded(const QString& ref) { pendingRun_ = ref; }
  void selectRunWhenLoaded(qint64 runId) { pendingRun_ = QString::number(runId); }
  // The size of a window opened for the first time on a screen whose
  // available area is `available` (afterwards the size is remembered).
  static QSize defaultSize(const QRect& available);
  // The id of the run `ref` names among `runs` (newest first), or 0.
  static int64_t findRun(const std::vector<pb::RunSummary>& runs, const QString& ref);
  // The id of the run `ref` names in the history at `historyPath`, as the
  // command line resolves it (storage's find_run: an id, "last", or the
  // newest run of a name); 0 with `problem` saying why (no such run, and
  // which there are; no history there) when there is none. For --run.
  static int64_t resolveRun(const QString& historyPath, const QString& ref, QString* problem);
  // Reads the current history again (F5).
  void reload();

  QString historyPath() const { return historyPath_; }
  bool isLoading() const;
  RunListModel* runModel() const;
  QSortFilterProxyModel* runProxyModel() const;
  RunListPage* runListPage() const { return runs_; }
  RunDetailView* runDetail() const { return detail_; }
  MessageBanner* banner() const { return banner_; }
  RunActions* runActions() const { return actions_; }
  // Progress and Cancel of long background work, in the status bar.
  TaskProgress* taskProgress() const { return tasks_; }

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void createMenus();
  void createCentralWidget();
  void createStatusBar();

  void showOpenDialog();
  void fillRecentMenu();
  void onLoadStarted();
  void onRunsLoaded(const QString& path, const std::vector<pb::RunSummary>& runs);
  void onLoadFailed(const QString& path, const QString& message);
  void onLoadCancelled(const QString& path);
  void setCurrentPath(const QString& path);
  void updateRunCount();

  void readSettings();
  void writeSettings() const;

  QString historyPath_;
  bool isDefaultHistory_ = false;
  bool lastLoadFailed_ = false;
  QString pendingRun_;

  HistoryLoader* loader_;
  MessageBanner* banner_ = nullptr;
  RunListPage* runs_ = nullptr;
  RunDetailView* detail_ = nullptr;
  QSplitter* splitter_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QLabel* pathLabel_ = nullptr;
  QLabel* countLabel_ = nullptr;
  TaskProgress* tasks_ = nullptr;
  RunActions* actions_ = nullptr;
  QMenu* fileMenu_ = nullptr;
  QAction* fileMenuQuitSeparator_ = nullptr;
};

}  // namespace lazyscope::gui
