#include "windows/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMimeData>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QVBoxLayout>
#include <exception>
#include <optional>
#include <utility>

#include "db/history_file.h"
#include "loaders/history_loader.h"
#include "query/history_reader.h"
#include "widgets/message_banner.h"
#include "widgets/task_progress.h"
#include "windows/desktop_menus.h"
#include "windows/recent_files.h"
#include "windows/run_actions.h"
#include "windows/run_detail_view.h"
#include "windows/run_list_page.h"

namespace lazyscope::gui {

namespace {

const QString kGeometryKey = QStringLiteral("MainWindow/geometry");
const QString kHeaderKey = QStringLiteral("MainWindow/runTableHeader");
const QString kSplitterKey = QStringLiteral("MainWindow/splitter");
const QString kLastDirKey = QStringLiteral("MainWindow/lastDirectory");

// The single local file a drag carries, or an empty string.
QString draggedFile(const QMimeData* mime) {
  if (mime == nullptr || !mime->hasUrls() || mime->urls().size() != 1) return {};
  const QUrl url = mime->urls().constFirst();
  return url.isLocalFile() ? url.toLocalFile() : QString();
}

}  // namespace

QSize MainWindow::defaultSize(const QRect& available) {
  // Most of the screen: the run list's columns and a run's tabs need room,
  // and a window manager may not be there to maximize it. Never larger than
  // the screen, never smaller than what the tabs need where the screen allows.
  const QSize wanted(available.width() * 4 / 5, available.height() * 4 / 5);
  return wanted.expandedTo(QSize(1000, 700)).boundedTo(available.size());
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), loader_(new HistoryLoader(this)) {
  setWindowTitle(tr("LazyScope"));
  setAcceptDrops(true);
  createMenus();
  createCentralWidget();
  createStatusBar();

  connect(loader_, &HistoryLoader::started, this, &MainWindow::onLoadStarted);
  connect(loader_, &HistoryLoader::loaded, this, &MainWindow::onRunsLoaded);
  connect(loader_, &HistoryLoader::failed, this, &MainWindow::onLoadFailed);
  connect(loader_, &HistoryLoader::cancelled, this, &MainWindow::onLoadCancelled);
  connect(runs_, &RunListPage::shownCountChanged, this, &MainWindow::updateRunCount);
  connect(runs_, &RunListPage::selectedRunsChanged, this,
          [this] { detail_->overlayRuns(historyPath_, runs_->selectedRunIds()); });
  connect(runs_, &RunListPage::currentRunChanged, this, [this](qint64 runId) {
    if (runId > 0) {
      detail_->showRun(historyPath_, runId);
    } else {
      detail_->clear();
    }
  });

  // --- Run editing, comparing and script runs (gui3): a Run menu, the run
  // table's context menu and File ▸ Run Script….
  actions_ = new RunActions(this);
  QMenu* runMenu = menuBar()->addMenu(tr("&Run"));
  runMenu->addActions(actions_->runActions());
  fileMenu_->insertAction(fileMenuQuitSeparator_, actions_->runScriptAction());
  // --- end gui3

  readSettings();
  updateRunCount();
  runs_->setFocus();
}

MainWindow::~MainWindow() = default;

RunListModel* MainWindow::runModel() const { return runs_->model(); }

QSortFilterProxyModel* MainWindow::runProxyModel() const { return runs_->proxy(); }

bool MainWindow::isLoading() const { return loader_->isLoading(); }

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));

  QAction* open = file->addAction(tr("&Open…"), this, &MainWindow::showOpenDialog);
  open->setShortcut(QKeySequence::Open);
  open->setIcon(QIcon::fromTheme(QStringLiteral("document-open")));
  open->setStatusTip(tr("Open another history file"));

  recentMenu_ = file->addMenu(tr("Open &Recent"));
  recentMenu_->setObjectName(QStringLiteral("recentMenu"));
  recentMenu_->setIcon(QIcon::fromTheme(QStringLiteral("document-open-recent")));
  connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::fillRecentMenu);

  QAction* reloadAction = file->addAction(tr("&Reload"), this, &MainWindow::reload);
  reloadAction->setShortcut(QKeySequence(Qt::Key_F5));
  reloadAction->setIcon(QIcon::fromTheme(QStringLiteral("view-refresh")));
  reloadAction->setStatusTip(tr("Read the runs of this history again"));

  fileMenuQuitSeparator_ = file->addSeparator();
  fileMenu_ = file;
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  quit->setMenuRole(QAction::QuitRole);
  quit->setIcon(QIcon::fromTheme(QStringLiteral("application-exit")));

  addViewAndHelpMenus(this);
}

void MainWindow::createCentralWidget() {
  auto* central = new QWidget(this);
  banner_ = new MessageBanner(central);
  banner_->setObjectName(QStringLiteral("errorBanner"));
  splitter_ = new QSplitter(Qt::Vertical, central);
  splitter_->setObjectName(QStringLiteral("mainSplitter"));
  splitter_->setChildrenCollapsible(false);
  runs_ = new RunListPage(splitter_);
  detail_ = new RunDetailView(splitter_);
  splitter_->addWidget(runs_);
  splitter_->addWidget(detail_);
  splitter_->setStretchFactor(0, 2);
  splitter_->setStretchFactor(1, 3);

  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(6, 6, 6, 0);
  layout->setSpacing(6);
  layout->addWidget(banner_);
  layout->addWidget(splitter_, 1);
  setCentralWidget(central);
}

void MainWindow::createStatusBar() {
  pathLabel_ = new QLabel(this);
  pathLabel_->setObjectName(QStringLiteral("historyPathLabel"));
  pathLabel_->setTextFormat(Qt::PlainText);
  // Let a long path be cut rather than widen the window.
  pathLabel_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  pathLabel_->setMinimumWidth(100);

  // Every BackgroundJob under this window (loaders, the graph layout,
  // exports, a compare window) reports here.
  tasks_ = new TaskProgress(this);
  tasks_->serve(this);

  countLabel_ = new QLabel(this);
  countLabel_->setObjectName(QStringLiteral("runCountLabel"));

  statusBar()->addWidget(pathLabel_, 1);
  statusBar()->addPermanentWidget(tasks_);
  statusBar()->addPermanentWidget(countLabel_);
}

void MainWindow::setCurrentPath(const QString& path) {
  if (path != historyPath_) {
    runs_->setRuns({});  // rows of another file must not linger under this title
    runs_->forgetColumnFit();
    detail_->clear();
  }
  historyPath_ = path;
  setWindowTitle(QFileInfo(path).fileName());
  setWindowFilePath(path);
  pathLabel_->setText(path);
  pathLabel_->setToolTip(path);
}

void MainWindow::openHistory(const QString& path) {
  isDefaultHistory_ = false;
  setCurrentPath(QFileInfo(path).absoluteFilePath());
  banner_->dismiss();
  loader_->load(historyPath_);
}

void MainWindow::openDefaultHistory() {
  QString path;
  try {
    path = QString::fromStdString(storage::default_history_path());
  } catch (const std::exception& e) {
    banner_->showMessage(MessageBanner::Kind::Error,
                         tr("Could not find the default history: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  if (QFileInfo::exists(path)) {
    openHistory(path);
    isDefaultHistory_ = true;
    return;
  }
  // Nothing recorded yet: not an error.
  loader_->cancel();
  statusBar()->clearMessage();
  banner_->dismiss();
  setCurrentPath(path);
  isDefaultHistory_ = true;
  lastLoadFailed_ = false;
  runs_->setEmptyReason(RunListPage::EmptyReason::NoHistory);
  pathLabel_->setText(tr("No runs recorded yet. Runs recorded with `lazyscope run` will appear here (%1).").arg(path));
  updateRunCount();
}

void MainWindow::reload() {
  if (isDefaultHistory_) {
    openDefaultHistory();
  } else if (!historyPath_.isEmpty()) {
    banner_->dismiss();
    loader_->load(historyPath_);
  }
}

void MainWindow::showOpenDialog() {
  QSettings settings;
  QString dir = historyPath_.isEmpty() ? QString() : QFileInfo(historyPath_).absolutePath();
  dir = settings.value(kLastDirKey, dir).toString();
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open History"), dir, tr("LazyScope histories (*.sqlite *.db *.lazyscope);;All files (*)"));
  if (path.isEmpty()) return;
  settings.setValue(kLastDirKey, QFileInfo(path).absolutePath());
  openHistory(path);
}

void MainWindow::fillRecentMenu() {
  recentMenu_->clear();
  const QStringList paths = RecentFiles().paths();
  int number = 0;
  for (const QString& path : paths) {
    const QFileInfo info(path);
    const QString label = QStringLiteral("&%1  %2  —  %3")
                              .arg(++number)
                              .arg(info.fileName(), QDir::toNativeSeparators(info.absolutePath()));
    QAction* action = recentMenu_->addAction(label, this, [this, path] { openHistory(path); });
    action->setData(path);
    action->setToolTip(path);
  }
  if (paths.isEmpty()) {
    recentMenu_->addAction(tr("No recent histories"))->setEnabled(false);
    return;
  }
  recentMenu_->addSeparator();
  recentMenu_->addAction(tr("&Clear Menu"), this, [] { RecentFiles().clear(); });
}

void MainWindow::onLoadStarted() {
  runs_->setEmptyReason(RunListPage::EmptyReason::Loading);
  statusBar()->showMessage(tr("Loading…"));
}

void MainWindow::onRunsLoaded(const QString& path, const std::vector<pb::RunSummary>& runs) {
  statusBar()->clearMessage();
  if (path != historyPath_) return;
  lastLoadFailed_ = false;
  RecentFiles().add(path);
  runs_->setEmptyReason(RunListPage::EmptyReason::Loaded);
  // A model reset forgets the current row without a signal: select the run
  // shown before again (which reads it afresh), or clear the detail.
  // The run asked for, not only one shown: a run whose read was cancelled
  // is read again by a reload, as the cancel message promises.
  int64_t shown = detail_->wantedRunId();
  const QString asked = std::exchange(pendingRun_, QString());
  if (!asked.isEmpty()) {
    shown = findRun(runs, asked);
    if (shown == 0) {
      banner_->showMessage(
          MessageBanner::Kind::Error,
          runs.empty() ? tr("There is no run “%1”: %2 has no runs yet.").arg(asked, QDir::toNativeSeparators(path))
                       : tr("There is no run “%1” in this history: give a run id (%2 to %3), a run name (e.g. "
                            "“%4”) or “last”. The newest run is shown.")
                             .arg(asked)
                             .arg(runs.back().run().id())
                             .arg(runs.front().run().id())
                             .arg(QString::fromStdString(runs.front().run().name())));
    }
  }
  // Opened on a history, show its newest run (the list is newest first)
  // rather than an empty detail.
  if (shown == 0 && !runs.empty()) shown = runs.front().run().id();
  runs_->setRuns(runs);
  if (shown == 0 || !runs_->selectRun(shown)) detail_->clear();
}

int64_t MainWindow::findRun(const std::vector<pb::RunSummary>& runs, const QString& ref) {
  if (runs.empty()) return 0;
  if (ref == QLatin1String("last")) return runs.front().run().id();
  // An id wins over a name made of digits, as in the command line.
  bool isNumber = false;
  const qint64 id = ref.toLongLong(&isNumber);
  if (isNumber) {
    for (const pb::RunSummary& run : runs) {
      if (run.run().id() == id) return id;
    }
  }
  const std::string name = ref.toStdString();
  for (const pb::RunSummary& run : runs) {  // newest first: the newest of that name
    if (run.run().name() == name) return run.run().id();
  }
  return 0;
}

int64_t MainWindow::resolveRun(const QString& historyPath, const QString& ref, QString* problem) {
  const QString where = QDir::toNativeSeparators(historyPath);
  try {
    if (!QFileInfo::exists(historyPath)) {
      *problem = tr("no run “%1”: there is no history at %2").arg(ref, where);
      return 0;
    }
    const storage::HistoryReader reader(historyPath.toStdString());
    if (const std::optional<int64_t> id = reader.find_run(ref.toStdString())) return *id;
    const std::vector<pb::RunSummary> runs = reader.list_runs();
    if (runs.empty()) {
      *problem = tr("no run “%1”: %2 has no runs yet").arg(ref, where);
    } else {
      *problem = tr("no run “%1” in %2: give a run id (%3 to %4), a run name (e.g. “%5”) or “last” "
                    "(`lazyscope runs` lists them)")
                     .arg(ref, where)
                     .arg(runs.back().run().id())
                     .arg(runs.front().run().id())
                     .arg(QString::fromStdString(runs.front().run().name()));
    }
  } catch (const std::exception& e) {
    *problem = tr("no run “%1”: cannot read %2: %3").arg(ref, where, QString::fromUtf8(e.what()));
  }
  return 0;
}

void MainWindow::onLoadFailed(const QString& path, const QString& message) {
  statusBar()->clearMessage();
  if (path != historyPath_) return;
  lastLoadFailed_ = true;
  runs_->setEmptyReason(RunListPage::EmptyReason::Failed);
  runs_->setRuns({});
  banner_->showMessage(MessageBanner::Kind::Error, tr("Could not load the history. %1").arg(message));
}

void MainWindow::onLoadCancelled(const QString& path) {
  statusBar()->clearMessage();
  if (path != historyPath_) return;
  // The rows of an earlier read (if any) stay; say they may be stale.
  runs_->setEmptyReason(RunListPage::EmptyReason::Loaded);
  banner_->showMessage(MessageBanner::Kind::Information, tr("Reading the runs was cancelled — press F5 to reload."));
}

void MainWindow::updateRunCount() {
  if (lastLoadFailed_) {
    countLabel_->setText(tr("no runs"));
    return;
  }
  const int total = runs_->totalCount();
  const int shown = runs_->shownCount();
  const QString runs = total == 1 ? tr("1 run") : tr("%1 runs").arg(total);
  countLabel_->setText(shown == total ? runs : tr("%1 of %2").arg(shown).arg(runs));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  writeSettings();
  QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!draggedFile(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QString path = draggedFile(event->mimeData());
  if (path.isEmpty()) return;
  event->acceptProposedAction();
  openHistory(path);
}

void MainWindow::readSettings() {
  const QSettings settings;
  if (!restoreGeometry(settings.value(kGeometryKey).toByteArray())) resize(defaultSize(screen()->availableGeometry()));
  if (!splitter_->restoreState(settings.value(kSplitterKey).toByteArray())) {
    // First open: the split by size hints gave the run list about 130 px
    // (four rows); two fifths of the window lists a dozen runs.
    const int height = size().height();
    splitter_->setSizes({height * 2 / 5, height * 3 / 5});
  }
  runs_->restoreHeaderState(settings.value(kHeaderKey).toByteArray());
}

void MainWindow::writeSettings() const {
  QSettings settings;
  settings.setValue(kGeometryKey, saveGeometry());
  settings.setValue(kHeaderKey, runs_->saveHeaderState());
  settings.setValue(kSplitterKey, splitter_->saveState());
}

}  // namespace lazyscope::gui
