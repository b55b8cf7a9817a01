// The main window: the runs of one history file, with a filter, and the
// File menu to open another history. Runs are read in the background by a
// HistoryLoader; errors show up inline in a banner, never in a modal dialog,
// and the window stays usable after them.
#pragma once

#include <QMainWindow>
#include <vector>

#include "lazyscope/history.pb.h"

class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QSortFilterProxyModel;
class QTableView;

namespace lazyscope::gui {

class HistoryLoader;
class MessageBanner;
class RunListModel;

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
  // Reads the current history again (F5).
  void reload();

  QString historyPath() const { return historyPath_; }
  bool isLoading() const;
  RunListModel* runModel() const { return model_; }
  QSortFilterProxyModel* runProxyModel() const { return proxy_; }

 protected:
  void closeEvent(QCloseEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void createMenus();
  QWidget* createRunsPage();
  void createStatusBar();

  void showOpenDialog();
  void fillRecentMenu();
  void onLoadStarted();
  void onRunsLoaded(const QString& path, const std::vector<pb::RunSummary>& runs);
  void onLoadFailed(const QString& path, const QString& message);
  void setCurrentPath(const QString& path);
  void updateRunCount();
  // The text centred in the table while it has no rows (why it is empty and
  // what to do); hidden as soon as rows show.
  void updatePlaceholder();
  void applyDefaultColumnWidths();

  void readSettings();
  void writeSettings() const;

  QString historyPath_;
  bool isDefaultHistory_ = false;
  bool columnsSized_ = false;
  enum class EmptyReason { NoHistory, Loading, Failed, Loaded };
  EmptyReason emptyReason_ = EmptyReason::NoHistory;

  HistoryLoader* loader_;
  RunListModel* model_;
  QSortFilterProxyModel* proxy_;
  MessageBanner* banner_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QTableView* table_ = nullptr;
  QLabel* placeholder_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QLabel* pathLabel_ = nullptr;
  QLabel* countLabel_ = nullptr;
  QProgressBar* busy_ = nullptr;
};

}  // namespace lazyscope::gui
