#include "windows/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <exception>

#include "db/history_file.h"
#include "loaders/history_loader.h"
#include "models/run_list_model.h"
#include "widgets/message_banner.h"
#include "windows/recent_files.h"

namespace lazyscope::gui {

namespace {

const QString kGeometryKey = QStringLiteral("MainWindow/geometry");
const QString kHeaderKey = QStringLiteral("MainWindow/runTableHeader");
const QString kLastDirKey = QStringLiteral("MainWindow/lastDirectory");

// The single local file a drag carries, or an empty string.
QString draggedFile(const QMimeData* mime) {
  if (mime == nullptr || !mime->hasUrls() || mime->urls().size() != 1) return {};
  const QUrl url = mime->urls().constFirst();
  return url.isLocalFile() ? url.toLocalFile() : QString();
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      loader_(new HistoryLoader(this)),
      model_(new RunListModel(this)),
      proxy_(new QSortFilterProxyModel(this)) {
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(RunListModel::SortRole);
  proxy_->setSortCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterKeyColumn(-1);  // match any column

  setWindowTitle(tr("LazyScope"));
  setAcceptDrops(true);
  createMenus();
  setCentralWidget(createRunsPage());
  createStatusBar();

  connect(loader_, &HistoryLoader::started, this, &MainWindow::onLoadStarted);
  connect(loader_, &HistoryLoader::loaded, this, &MainWindow::onRunsLoaded);
  connect(loader_, &HistoryLoader::failed, this, &MainWindow::onLoadFailed);

  readSettings();
  updateRunCount();
  updatePlaceholder();
}

MainWindow::~MainWindow() = default;

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

  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  quit->setMenuRole(QAction::QuitRole);
  quit->setIcon(QIcon::fromTheme(QStringLiteral("application-exit")));
}

QWidget* MainWindow::createRunsPage() {
  auto* page = new QWidget(this);

  banner_ = new MessageBanner(page);
  banner_->setObjectName(QStringLiteral("errorBanner"));

  filter_ = new QLineEdit(page);
  filter_->setObjectName(QStringLiteral("runFilter"));
  filter_->setPlaceholderText(tr("Filter runs by name, script, status… (Ctrl+F)"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
    proxy_->setFilterFixedString(text);
    updateRunCount();
    updatePlaceholder();
  });
  auto* focusFilter = new QAction(this);
  focusFilter->setShortcut(QKeySequence::Find);
  connect(focusFilter, &QAction::triggered, this, [this] {
    filter_->setFocus(Qt::ShortcutFocusReason);
    filter_->selectAll();
  });
  addAction(focusFilter);
  auto* clearFilter = new QAction(filter_);
  clearFilter->setShortcut(QKeySequence(Qt::Key_Escape));
  clearFilter->setShortcutContext(Qt::WidgetShortcut);
  connect(clearFilter, &QAction::triggered, filter_, &QLineEdit::clear);
  filter_->addAction(clearFilter);

  table_ = new QTableView(page);
  table_->setObjectName(QStringLiteral("runTable"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunListModel::Started, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->setShowGrid(false);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  table_->horizontalHeader()->setHighlightSections(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->horizontalHeader()->setSectionResizeMode(RunListModel::Name, QHeaderView::Stretch);

  placeholder_ = new QLabel(table_->viewport());
  placeholder_->setObjectName(QStringLiteral("runTablePlaceholder"));
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setWordWrap(true);
  placeholder_->setTextFormat(Qt::PlainText);
  placeholder_->setAttribute(Qt::WA_TransparentForMouseEvents);
  placeholder_->setForegroundRole(QPalette::PlaceholderText);
  table_->viewport()->installEventFilter(this);
  applyDefaultColumnWidths();

  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(6, 6, 6, 0);
  layout->setSpacing(6);
  layout->addWidget(banner_);
  layout->addWidget(filter_);
  layout->addWidget(table_, 1);
  return page;
}

void MainWindow::createStatusBar() {
  pathLabel_ = new QLabel(this);
  pathLabel_->setObjectName(QStringLiteral("historyPathLabel"));
  pathLabel_->setTextFormat(Qt::PlainText);
  // Let a long path be cut rather than widen the window.
  pathLabel_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  pathLabel_->setMinimumWidth(100);

  busy_ = new QProgressBar(this);
  busy_->setRange(0, 0);  // indeterminate
  busy_->setMaximumWidth(120);
  busy_->setMaximumHeight(14);
  busy_->setTextVisible(false);
  busy_->hide();

  countLabel_ = new QLabel(this);
  countLabel_->setObjectName(QStringLiteral("runCountLabel"));

  statusBar()->addWidget(pathLabel_, 1);
  statusBar()->addPermanentWidget(busy_);
  statusBar()->addPermanentWidget(countLabel_);
}

void MainWindow::setCurrentPath(const QString& path) {
  if (path != historyPath_) {
    model_->setRuns({});  // rows of another file must not linger under this title
    columnsSized_ = false;
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
  busy_->hide();
  banner_->dismiss();
  setCurrentPath(path);
  isDefaultHistory_ = true;
  emptyReason_ = EmptyReason::NoHistory;
  updatePlaceholder();
  pathLabel_->setText(
      tr("No runs recorded yet. Runs recorded with `lazyscope run` will appear here (%1).").arg(path));
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

bool MainWindow::isLoading() const { return loader_->isLoading(); }

void MainWindow::showOpenDialog() {
  QSettings settings;
  QString dir = historyPath_.isEmpty() ? QString() : QFileInfo(historyPath_).absolutePath();
  dir = settings.value(kLastDirKey, dir).toString();
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open History"), dir,
      tr("LazyScope histories (*.sqlite *.db *.lazyscope);;All files (*)"));
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
  emptyReason_ = EmptyReason::Loading;
  updatePlaceholder();
  busy_->show();
  statusBar()->showMessage(tr("Loading…"));
}

void MainWindow::onRunsLoaded(const QString& path, const std::vector<pb::RunSummary>& runs) {
  busy_->hide();
  statusBar()->clearMessage();
  if (path != historyPath_) return;
  emptyReason_ = EmptyReason::Loaded;
  RecentFiles().add(path);
  model_->setRuns(runs);
  if (!columnsSized_ && !runs.empty()) {
    // Widen columns the first rows do not fit in, unless the user's own
    // widths were restored from the settings.
    if (!QSettings().contains(kHeaderKey)) {
      QHeaderView* header = table_->horizontalHeader();
      const QAbstractItemView* view = table_;  // sizeHintForColumn() is public there
      for (int column = 0; column < RunListModel::NUM_COLUMNS; ++column) {
        if (header->sectionResizeMode(column) != QHeaderView::Interactive) continue;
        const int wanted = view->sizeHintForColumn(column) + 12;  // breathing room
        header->resizeSection(column, std::max(header->sectionSize(column), wanted));
      }
    }
    columnsSized_ = true;
  }
  updateRunCount();
  updatePlaceholder();
}

void MainWindow::onLoadFailed(const QString& path, const QString& message) {
  busy_->hide();
  statusBar()->clearMessage();
  if (path != historyPath_) return;
  emptyReason_ = EmptyReason::Failed;
  model_->setRuns({});
  updatePlaceholder();
  banner_->showMessage(MessageBanner::Kind::Error, tr("Could not load the history. %1").arg(message));
  countLabel_->setText(tr("no runs"));
}

void MainWindow::updateRunCount() {
  const int total = model_->rowCount();
  const int shown = proxy_->rowCount();
  const QString runs = total == 1 ? tr("1 run") : tr("%1 runs").arg(total);
  countLabel_->setText(shown == total ? runs : tr("%1 of %2").arg(shown).arg(runs));
}

void MainWindow::updatePlaceholder() {
  QString text;
  if (proxy_->rowCount() == 0) {
    switch (emptyReason_) {
      case EmptyReason::NoHistory:
        text = tr("No runs recorded yet.\nRun a script with `lazyscope run train.py` and it will "
                  "appear here.");
        break;
      case EmptyReason::Loading: text = tr("Loading runs…"); break;
      case EmptyReason::Failed: text = tr("No runs to show.\nOpen another history with File ▸ Open… (Ctrl+O)."); break;
      case EmptyReason::Loaded:
        text = model_->rowCount() == 0 ? tr("This history has no runs yet.")
                                       : tr("No runs match “%1”.").arg(filter_->text());
        break;
    }
  }
  placeholder_->setText(text);
  placeholder_->setGeometry(table_->viewport()->rect().adjusted(24, 24, -24, -24));
  placeholder_->setVisible(!text.isEmpty());
}

void MainWindow::applyDefaultColumnWidths() {
  // Wide enough for typical values, so that even an empty table looks laid out.
  const QFontMetrics metrics(table_->font());
  const QString samples[RunListModel::NUM_COLUMNS] = {
      QStringLiteral("0000"),        QStringLiteral("mnist-mlp baseline"),
      QStringLiteral("train_mlp.py"), QStringLiteral("interrupted"),
      QStringLiteral("2024-12-31 23:59:59"), QStringLiteral("44 min 00 s"),
      QStringLiteral("000000"),      QStringLiteral("0000"),
      QStringLiteral("000000"),      QStringLiteral("000.0 ms")};
  QHeaderView* header = table_->horizontalHeader();
  for (int column = 0; column < RunListModel::NUM_COLUMNS; ++column) {
    const QString title = model_->headerData(column, Qt::Horizontal).toString();
    const int width = std::max(metrics.horizontalAdvance(samples[column]),
                               metrics.horizontalAdvance(title) + 16);  // + sort arrow
    header->resizeSection(column, width + 24);
  }
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (watched == table_->viewport() && event->type() == QEvent::Resize) updatePlaceholder();
  return QMainWindow::eventFilter(watched, event);
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
  if (!restoreGeometry(settings.value(kGeometryKey).toByteArray())) resize(1100, 640);
  const QByteArray header = settings.value(kHeaderKey).toByteArray();
  if (!header.isEmpty()) table_->horizontalHeader()->restoreState(header);
}

void MainWindow::writeSettings() const {
  QSettings settings;
  settings.setValue(kGeometryKey, saveGeometry());
  settings.setValue(kHeaderKey, table_->horizontalHeader()->saveState());
}

}  // namespace lazyscope::gui
