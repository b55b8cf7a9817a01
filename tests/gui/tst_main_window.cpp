// MainWindow end to end on real history files: runs appear after the
// background load; corrupt and missing files are reported inline and the
// window keeps working; the default history may not exist yet.
#include <QAction>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMimeData>
#include <QScreen>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QtTest>

#include "history_fixture.h"
#include "models/run_list_model.h"
#include "widgets/message_banner.h"
#include "windows/main_window.h"
#include "windows/recent_files.h"

using lazyscope::gui::MainWindow;
using lazyscope::gui::MessageBanner;
using lazyscope::gui::testing::HistoryFixture;

namespace {

QTableView* table(const MainWindow& w) { return w.findChild<QTableView*>(QStringLiteral("runTable")); }
MessageBanner* banner(const MainWindow& w) { return w.findChild<MessageBanner*>(QStringLiteral("errorBanner")); }
QString labelText(const MainWindow& w, const char* name) {
  auto* label = w.findChild<QLabel*>(QString::fromLatin1(name));
  return label ? label->text() : QStringLiteral("<no label %1>").arg(QLatin1String(name));
}
QLabel* placeholder(const MainWindow& w) { return w.findChild<QLabel*>(QStringLiteral("runTablePlaceholder")); }
QAction* fileAction(const MainWindow& w, const QKeySequence& shortcut) {
  for (QAction* menu : w.menuBar()->actions()) {
    if (!menu->menu()) continue;
    for (QAction* action : menu->menu()->actions()) {
      if (action->shortcut() == shortcut) return action;
    }
  }
  return nullptr;
}
void drain() {
  QThreadPool::globalInstance()->waitForDone();
  QCoreApplication::processEvents();
  QCoreApplication::processEvents();
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void showsRunsAfterBackgroundLoad();
  void corruptFileIsReportedInlineAndWindowKeepsWorking();
  void missingFileIsReportedInline();
  void newerHistoryIsReportedInline();
  void lockedHistoryIsReportedInline();
  void missingDefaultHistoryIsNotAnError();
  void existingDefaultHistoryIsLoaded();
  void filterNarrowsRows();
  void reloadPicksUpNewRuns();
  void newerRequestWins();
  void droppedFileIsOpened();
  void menuHasShortcuts();
  void recentFilesRememberSuccessfulOpens();
  void geometryIsRestored();
  void firstOpenSizeComesFromTheScreen();

 private:
  QTemporaryDir dir_;
  std::unique_ptr<HistoryFixture> fixture_;
  QString garbage_;
};

void TestMainWindow::initTestCase() {
  QVERIFY(dir_.isValid());
  // Keep the user's real settings out of the tests, and the tests' out of them.
  QCoreApplication::setOrganizationName(QStringLiteral("LazyScopeTests"));
  QCoreApplication::setApplicationName(QStringLiteral("tst_main_window"));
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir_.filePath(QStringLiteral("config")));
  fixture_ = std::make_unique<HistoryFixture>(dir_.filePath(QStringLiteral("history.sqlite")));
  garbage_ = dir_.filePath(QStringLiteral("garbage.sqlite"));
  lazyscope::gui::testing::writeGarbageFile(garbage_);
}

void TestMainWindow::init() { QSettings().clear(); }

void TestMainWindow::showsRunsAfterBackgroundLoad() {
  MainWindow w;
  w.show();
  QVERIFY(table(w) && banner(w));
  w.openHistory(fixture_->path());
  QVERIFY(w.isLoading());
  QCOMPARE(table(w)->model()->rowCount(), 0);
  QVERIFY(placeholder(w)->isVisible());
  QCOMPARE(placeholder(w)->text(), QStringLiteral("Loading runs…"));
  QTRY_COMPARE(table(w)->model()->rowCount(), 3);
  QVERIFY(!w.isLoading());
  QVERIFY(!placeholder(w)->isVisible());
  QVERIFY(!banner(w)->isVisible());
  QCOMPARE(labelText(w, "runCountLabel"), QStringLiteral("3 runs"));
  QCOMPARE(labelText(w, "historyPathLabel"), fixture_->path());
  QCOMPARE(w.windowTitle(), QStringLiteral("history.sqlite"));
  // Newest first by default: the live run started last.
  QCOMPARE(table(w)->model()->index(0, 0).data(lazyscope::gui::RunListModel::RunIdRole).toLongLong(),
           fixture_->runningId);
  QCOMPARE(table(w)->model()->index(0, lazyscope::gui::RunListModel::Status).data().toString(),
           QStringLiteral("running"));
}

void TestMainWindow::corruptFileIsReportedInlineAndWindowKeepsWorking() {
  MainWindow w;
  w.show();
  w.openHistory(fixture_->path());
  QTRY_COMPARE(table(w)->model()->rowCount(), 3);

  w.openHistory(garbage_);
  QTRY_VERIFY(banner(w)->isVisible());
  QCOMPARE(banner(w)->kind(), MessageBanner::Kind::Error);
  QVERIFY2(banner(w)->text().contains(QStringLiteral("garbage.sqlite")), qPrintable(banner(w)->text()));
  QCOMPARE(table(w)->model()->rowCount(), 0);
  QCOMPARE(w.historyPath(), garbage_);
  QVERIFY(QApplication::activeModalWidget() == nullptr);

  // Still usable: opening a good file works and clears the error.
  w.openHistory(fixture_->path());
  QTRY_COMPARE(table(w)->model()->rowCount(), 3);
  QVERIFY(!banner(w)->isVisible());
}

void TestMainWindow::missingFileIsReportedInline() {
  MainWindow w;
  w.show();
  const QString missing = dir_.filePath(QStringLiteral("nowhere/missing.sqlite"));
  w.openHistory(missing);
  QTRY_VERIFY(banner(w)->isVisible());
  QVERIFY2(banner(w)->text().contains(QStringLiteral("missing.sqlite")), qPrintable(banner(w)->text()));
  QCOMPARE(table(w)->model()->rowCount(), 0);
  QVERIFY(!QFileInfo::exists(missing));
  QVERIFY(QApplication::activeModalWidget() == nullptr);

  // The banner can be dismissed, and F5 tries again (and fails again).
  banner(w)->dismiss();
  QVERIFY(!banner(w)->isVisible());
  w.reload();
  QTRY_VERIFY(banner(w)->isVisible());
}

void TestMainWindow::newerHistoryIsReportedInline() {
  const QString path = dir_.filePath(QStringLiteral("future.sqlite"));
  lazyscope::gui::testing::writeNewerSchemaFile(path);
  MainWindow w;
  w.show();
  w.openHistory(path);
  QTRY_VERIFY(banner(w)->isVisible());
  const QString text = banner(w)->text();
  QVERIFY2(text.contains(QStringLiteral("future.sqlite")) && text.contains(QStringLiteral("newer")), qPrintable(text));
  QCOMPARE(table(w)->model()->rowCount(), 0);
  QVERIFY(QApplication::activeModalWidget() == nullptr);
}

void TestMainWindow::missingDefaultHistoryIsNotAnError() {
  const QString path = dir_.filePath(QStringLiteral("fresh/history.sqlite"));
  qputenv("LAZYSCOPE_HISTORY", path.toUtf8());
  MainWindow w;
  w.show();
  w.openDefaultHistory();
  QVERIFY(!w.isLoading());
  drain();
  QVERIFY(!banner(w)->isVisible());
  QCOMPARE(table(w)->model()->rowCount(), 0);
  QCOMPARE(w.historyPath(), path);
  const QString status = labelText(w, "historyPathLabel");
  QVERIFY2(status.contains(QStringLiteral("No runs recorded yet")), qPrintable(status));
  QVERIFY2(status.contains(path), qPrintable(status));
  QCOMPARE(labelText(w, "runCountLabel"), QStringLiteral("0 runs"));
  QVERIFY(placeholder(w)->isVisible());
  QVERIFY(placeholder(w)->text().contains(QStringLiteral("lazyscope run")));
  QVERIFY(!QFileInfo::exists(path));  // looking must not create it

  // Once something is recorded there, F5 shows it.
  lazyscope::gui::testing::recordFinishedRun(path, QStringLiteral("first"), 2);
  w.reload();
  QTRY_COMPARE(table(w)->model()->rowCount(), 1);
  QVERIFY(!banner(w)->isVisible());
  qunsetenv("LAZYSCOPE_HISTORY");
}

void TestMainWindow::existingDefaultHistoryIsLoaded() {
  qputenv("LAZYSCOPE_HISTORY", fixture_->path().toUtf8());
  MainWindow w;
  w.openDefaultHistory();
  QTRY_COMPARE(table(w)->model()->rowCount(), 3);
  QCOMPARE(w.historyPath(), fixture_->path());
  qunsetenv("LAZYSCOPE_HISTORY");
}

void TestMainWindow::filterNarrowsRows() {
  MainWindow w;
  w.show();
  w.openHistory(fixture_->path());
  QTRY_COMPARE(table(w)->model()->rowCount(), 3);
  auto* filter = w.findChild<QLineEdit*>(QStringLiteral("runFilter"));
  QVERIFY(filter);
  // Shortcuts (Esc below) need the window active and the filter focused.
  w.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&w));
  filter->setFocus();
  QTest::keyClicks(filter, QStringLiteral("FAIL"));
  QCOMPARE(table(w)->model()->rowCount(), 1);
  QCOMPARE(table(w)->model()->index(0, lazyscope::gui::RunListModel::Name).data().toString(),
           QStringLiteral("bad-shape"));
  QCOMPARE(labelText(w, "runCountLabel"), QStringLiteral("1 of 3 runs"));
  filter->clear();
  QCOMPARE(table(w)->model()->rowCount(), 3);
  QTest::keyClicks(filter, QStringLiteral("train_live"));
  QCOMPARE(table(w)->model()->rowCount(), 1);
  QCOMPARE(table(w)->model()->index(0, lazyscope::gui::RunListModel::Name).data().toString(), QStringLiteral("live"));
  QVERIFY(!placeholder(w)->isVisible());
  QTest::keyClicks(filter, QStringLiteral("zzz"));
  QCOMPARE(table(w)->model()->rowCount(), 0);
  QVERIFY(placeholder(w)->isVisible());
  QCOMPARE(placeholder(w)->text(), QStringLiteral("No runs match “train_livezzz”."));
  // Esc in the filter clears it.
  QTest::keyClick(filter, Qt::Key_Escape);
  QCOMPARE(filter->text(), QString());
  QCOMPARE(table(w)->model()->rowCount(), 3);
}

void TestMainWindow::reloadPicksUpNewRuns() {
  const QString path = dir_.filePath(QStringLiteral("growing.sqlite"));
  lazyscope::gui::testing::recordFinishedRun(path, QStringLiteral("one"), 3);
  MainWindow w;
  w.show();
  w.openHistory(path);
  QTRY_COMPARE(table(w)->model()->rowCount(), 1);
  lazyscope::gui::testing::recordFinishedRun(path, QStringLiteral("two"), 4);
  QAction* reload = fileAction(w, QKeySequence(Qt::Key_F5));
  QVERIFY(reload);
  reload->trigger();
  QTRY_COMPARE(table(w)->model()->rowCount(), 2);
  QCOMPARE(labelText(w, "runCountLabel"), QStringLiteral("2 runs"));
}

void TestMainWindow::newerRequestWins() {
  MainWindow w;
  w.show();
  w.openHistory(garbage_);
  w.openHistory(fixture_->path());
  QTRY_COMPARE(table(w)->model()->rowCount(), 3);
  drain();
  QVERIFY(!banner(w)->isVisible());  // the garbage file's late error is dropped
  QCOMPARE(table(w)->model()->rowCount(), 3);
  QCOMPARE(w.historyPath(), fixture_->path());
}

void TestMainWindow::droppedFileIsOpened() {
  MainWindow w;
  w.show();
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(fixture_->path())});
  QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  enter.setAccepted(false);
  QApplication::sendEvent(&w, &enter);
  QVERIFY(enter.isAccepted());
  QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&w, &drop);
  QTRY_COMPARE(table(w)->model()->rowCount(), 3);
  QCOMPARE(w.historyPath(), fixture_->path());

  // Several files, or a remote URL, are not taken.
  QMimeData several;
  several.setUrls({QUrl::fromLocalFile(fixture_->path()), QUrl::fromLocalFile(garbage_)});
  QDragEnterEvent refused(QPoint(10, 10), Qt::CopyAction, &several, Qt::LeftButton, Qt::NoModifier);
  refused.setAccepted(false);
  QApplication::sendEvent(&w, &refused);
  QVERIFY(!refused.isAccepted());
  QMimeData remote;
  remote.setUrls({QUrl(QStringLiteral("https://example.com/history.sqlite"))});
  QDragEnterEvent refusedRemote(QPoint(10, 10), Qt::CopyAction, &remote, Qt::LeftButton, Qt::NoModifier);
  refusedRemote.setAccepted(false);
  QApplication::sendEvent(&w, &refusedRemote);
  QVERIFY(!refusedRemote.isAccepted());
}

void TestMainWindow::menuHasShortcuts() {
  MainWindow w;
  QVERIFY(fileAction(w, QKeySequence::Open) != nullptr);
  QVERIFY(fileAction(w, QKeySequence(Qt::Key_F5)) != nullptr);
  QAction* quit = fileAction(w, QKeySequence(Qt::CTRL | Qt::Key_Q));
  QVERIFY(quit);
  w.show();
  QVERIFY(w.isVisible());
  quit->trigger();
  QVERIFY(!w.isVisible());
}

void TestMainWindow::recentFilesRememberSuccessfulOpens() {
  const QString other = dir_.filePath(QStringLiteral("other.sqlite"));
  lazyscope::gui::testing::recordFinishedRun(other, QStringLiteral("solo"), 1);
  MainWindow w;
  w.show();
  w.openHistory(fixture_->path());
  QTRY_COMPARE(table(w)->model()->rowCount(), 3);
  w.openHistory(garbage_);  // a failed open is not remembered
  QTRY_VERIFY(banner(w)->isVisible());
  w.openHistory(other);
  QTRY_COMPARE(table(w)->model()->rowCount(), 1);
  QCOMPARE(lazyscope::gui::RecentFiles().paths(), (QStringList{other, fixture_->path()}));

  // The menu lists them newest first; choosing one opens it.
  auto* menu = w.findChild<QMenu*>(QStringLiteral("recentMenu"));
  QVERIFY(menu);
  QMetaObject::invokeMethod(menu, "aboutToShow");
  QList<QAction*> entries;
  for (QAction* action : menu->actions()) {
    if (!action->data().toString().isEmpty()) entries.append(action);
  }
  QCOMPARE(entries.size(), 2);
  QCOMPARE(entries.at(0)->data().toString(), other);
  QCOMPARE(entries.at(1)->data().toString(), fixture_->path());
  entries.at(1)->trigger();
  QTRY_COMPARE(table(w)->model()->rowCount(), 3);
  QCOMPARE(w.historyPath(), fixture_->path());
  QCOMPARE(lazyscope::gui::RecentFiles().paths().constFirst(), fixture_->path());

  for (int i = 0; i < 12; ++i) lazyscope::gui::RecentFiles().add(dir_.filePath(QStringLiteral("h%1.sqlite").arg(i)));
  QCOMPARE(lazyscope::gui::RecentFiles().paths().size(), lazyscope::gui::RecentFiles::kMaxEntries);
  QCOMPARE(lazyscope::gui::RecentFiles().paths().constFirst(), dir_.filePath(QStringLiteral("h11.sqlite")));
}

void TestMainWindow::geometryIsRestored() {
  {
    MainWindow w;
    w.resize(640, 420);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.close();  // saves the settings
  }
  MainWindow again;
  QCOMPARE(again.size(), QSize(640, 420));
}

void TestMainWindow::firstOpenSizeComesFromTheScreen() {
  // Most of a 1600x1000 screen (no window manager to maximize it), and never
  // more than a small screen has.
  QCOMPARE(MainWindow::defaultSize(QRect(0, 0, 1600, 1000)), QSize(1280, 800));
  QCOMPARE(MainWindow::defaultSize(QRect(0, 0, 1024, 600)), QSize(1000, 600));
  MainWindow w;  // no saved geometry (init() clears the settings)
  QCOMPARE(w.size(), MainWindow::defaultSize(w.screen()->availableGeometry()));
  // The run list gets two fifths of the split, not the four rows its size
  // hint left it.
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  auto* splitter = w.findChild<QSplitter*>(QStringLiteral("mainSplitter"));
  QVERIFY(splitter != nullptr);
  const QList<int> sizes = splitter->sizes();
  QVERIFY2(sizes[0] >= (sizes[0] + sizes[1]) * 35 / 100,
           qPrintable(QStringLiteral("%1 of %2").arg(sizes[0]).arg(sizes[0] + sizes[1])));
}

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"

void TestMainWindow::lockedHistoryIsReportedInline() {
  const QString path = dir_.filePath(QStringLiteral("locked.sqlite"));
  lazyscope::gui::testing::recordFinishedRun(path, QStringLiteral("locked-run"), 3);
  MainWindow w;
  w.show();
  {
    lazyscope::gui::testing::ExclusiveLock lock(path);
    QVERIFY(lock.held());
    w.openHistory(path);
    // The reader waits out its busy timeout (seconds), then says so; the
    // window never blocks meanwhile (the read is in the background).
    QTRY_VERIFY_WITH_TIMEOUT(banner(w)->isVisible(), 30000);
    QCOMPARE(banner(w)->kind(), MessageBanner::Kind::Error);
    QVERIFY2(banner(w)->text().contains(QStringLiteral("locked.sqlite")), qPrintable(banner(w)->text()));
    // It says why, so that the person knows to wait or close the other program.
    QVERIFY2(banner(w)->text().contains(QStringLiteral("lock"), Qt::CaseInsensitive) ||
                 banner(w)->text().contains(QStringLiteral("busy"), Qt::CaseInsensitive),
             qPrintable(banner(w)->text()));
    QVERIFY(QApplication::activeModalWidget() == nullptr);
  }
  // Once the other program lets go, reloading works.
  w.reload();
  QTRY_COMPARE_WITH_TIMEOUT(table(w)->model()->rowCount(), 1, 30000);
  QVERIFY(!banner(w)->isVisible());
}
