// The status bar's progress and Cancel for long background work
// (TaskProgress + BackgroundJob): a quick job never shows it; a long one
// (held back here by keeping the thread pool busy, so the tests do not
// depend on the machine's speed) shows it after the delay, with its label;
// Cancel drops the job's result and the view says it was cancelled and how
// to get it back; a job that finishes hides it; a job whose owner is
// destroyed first delivers nothing.
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSemaphore>
#include <QSettings>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QToolButton>
#include <QtTest>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "history_fixture.h"
#include "loaders/background_job.h"
#include "views/graph_tab.h"
#include "views/graph_viewer.h"
#include "views/synthetic_graph.h"
#include "widgets/task_progress.h"
#include "windows/main_window.h"
#include "windows/run_detail_view.h"
#include "windows/run_list_page.h"

using namespace lazyscope;
using namespace lazyscope::gui;

namespace {

// Keeps every thread of the global pool (QtConcurrent's) waiting, so that a
// job started meanwhile cannot run until release(): a "long" job on demand.
class PoolBlocker {
 public:
  PoolBlocker() {
    QThreadPool* pool = QThreadPool::globalInstance();
    threads_ = pool->maxThreadCount();
    for (int i = 0; i < threads_; ++i) {
      pool->start([gate = gate_] { gate->acquire(); });
    }
  }
  ~PoolBlocker() { release(); }
  void release() {
    if (released_) return;
    released_ = true;
    gate_->release(threads_);
  }

 private:
  std::shared_ptr<QSemaphore> gate_ = std::make_shared<QSemaphore>(0);
  int threads_ = 0;
  bool released_ = false;
};

// A window served by a TaskProgress, as the main window is.
struct ServedRoot {
  QWidget root;
  TaskProgress* progress = new TaskProgress(&root);
  BackgroundJob* job = new BackgroundJob(&root);
  ServedRoot() {
    progress->serve(&root);
    root.show();
  }
};

}  // namespace

class TestTaskProgress : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(settingsDir_.isValid());
    // Keep the user's real settings (recent files, geometry) out of the tests.
    QCoreApplication::setOrganizationName(QStringLiteral("LazyScopeTests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_task_progress"));
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settingsDir_.path());
  }

  void quickJobNeverShows() {
    ServedRoot served;
    TaskProgress* progress = served.progress;
    BackgroundJob* job = served.job;
    int delivered = 0;
    job->run(
        QStringLiteral("quick"), [] { return 42; }, [&](int value) { delivered = value; });
    QVERIFY(job->isRunning());
    QCOMPARE(delivered, 0);  // never inside run()
    QTRY_COMPARE(delivered, 42);
    QVERIFY(!job->isRunning());
    QTest::qWait(TaskProgress::kShowDelayMs + 150);
    QVERIFY(!progress->isVisible());
    QCOMPARE(progress->runningCount(), 0);
  }

  void longJobShowsAndFinishedJobHides() {
    ServedRoot served;
    TaskProgress* progress = served.progress;
    BackgroundJob* job = served.job;
    int delivered = 0;
    PoolBlocker blocker;
    job->run(
        QStringLiteral("Reading something big…"), [] { return 7; }, [&](int value) { delivered = value; });
    QTest::qWait(TaskProgress::kShowDelayMs / 3);
    QVERIFY(!progress->isVisible());  // not before the delay: no flicker
    QTRY_VERIFY(progress->isVisible());
    QCOMPARE(progress->text(), QStringLiteral("Reading something big…"));
    QVERIFY(progress->cancelButton()->isVisible());
    blocker.release();
    QTRY_COMPARE(delivered, 7);
    QVERIFY(!progress->isVisible());
  }

  void supersededJobIsDroppedAndStopped() {
    QWidget root;
    auto* job = new BackgroundJob(&root);
    std::vector<int> delivered;
    PoolBlocker blocker;
    auto firstSawStop = std::make_shared<std::atomic<int>>(-1);  // -1: not run yet
    job->run(
        QStringLiteral("first"),
        [firstSawStop](JobControl& control) {
          *firstSawStop = control.stopped() ? 1 : 0;
          return 1;
        },
        [&](int value) { delivered.push_back(value); });
    job->run(
        QStringLiteral("second"), [] { return 2; }, [&](int value) { delivered.push_back(value); });
    blocker.release();
    QTRY_COMPARE(delivered.size(), size_t{1});
    QTRY_VERIFY(*firstSawStop != -1);
    QTest::qWait(50);  // a late delivery of the first would have come by now
    QCOMPARE(delivered, std::vector<int>{2});
    QCOMPARE(firstSawStop->load(), 1);
  }

  // A view closed while its read is still queued or running: the work
  // still runs (it owns what it captured), its result is never delivered to
  // the destroyed job, and nothing touches the dead object. Many rounds, the
  // owner dying at different moments of the work (queued, mid-way, just
  // done), the way closing a window during a long read does.
  void ownerDestroyedWhileItsJobRunsGetsNoDelivery() {
    auto delivered = std::make_shared<std::atomic<int>>(0);
    auto ran = std::make_shared<std::atomic<int>>(0);
    constexpr int kRounds = 200;
    for (int round = 0; round < kRounds; ++round) {
      auto* owner = new QObject;
      auto* job = new BackgroundJob(owner);
      std::unique_ptr<PoolBlocker> blocker;
      if (round % 4 == 0) blocker = std::make_unique<PoolBlocker>();  // queued behind a busy pool
      job->run(
          QStringLiteral("doomed"),
          [ran, round] {
            std::this_thread::sleep_for(std::chrono::microseconds((round % 7) * 30));
            ++*ran;
            return round;
          },
          [delivered](int) { ++*delivered; });
      if (round % 3 == 1) QCoreApplication::processEvents();  // maybe the work is done, the delivery queued
      delete owner;
      blocker.reset();
    }
    QTRY_COMPARE(ran->load(), kRounds);
    QTest::qWait(100);  // a delivery posted to a dead job would come by now
    QCOMPARE(delivered->load(), 0);
  }

  void cancellingAGraphLayoutDropsItAndSaysSo() {
    QWidget root;
    auto* progress = new TaskProgress(&root);
    progress->serve(&root);
    auto* viewer = new GraphViewer(&root);
    root.resize(900, 600);
    root.show();
    QSignalSpy finished(viewer, &GraphViewer::layoutFinished);
    {
      PoolBlocker blocker;
      viewer->setGraph(std::make_shared<const pb::IrGraph>(syntheticGraph(5000)));
      QVERIFY(viewer->isLayingOut());
      QTRY_VERIFY(progress->isVisible());
      QVERIFY2(progress->text().startsWith(QStringLiteral("Laying out")), qPrintable(progress->text()));
      QTest::mouseClick(progress->cancelButton(), Qt::LeftButton);
      QVERIFY(!progress->isVisible());
      QVERIFY(!viewer->isLayingOut());
    }  // the pool runs the layout now: it sees its stop flag, and is dropped
    QTest::qWait(300);
    QCOMPARE(finished.count(), 0);
    QVERIFY2(viewer->message().contains(QStringLiteral("cancelled")), qPrintable(viewer->message()));
    auto* reload = viewer->findChild<QPushButton*>(QStringLiteral("graphReload"));
    QVERIFY(reload != nullptr && reload->isVisible());

    QTest::mouseClick(reload, Qt::LeftButton);
    QTRY_COMPARE(finished.count(), 1);
    QVERIFY(viewer->message().isEmpty());
    QVERIFY(!reload->isVisible());
    QVERIFY(!progress->isVisible());
  }

  // The timeline of a 100k-step run: Cancel drops the detail and profile
  // reads, the detail says so, and F5 reads the run again.
  void cancellingABigRunsReadDropsItAndReloadReadsItAgain() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("big.sqlite"));
    const int64_t runId = testing::recordFinishedRun(path, QStringLiteral("big"), 100'000);
    MainWindow window;
    window.show();
    window.openHistory(path);
    QTRY_VERIFY(!window.isLoading());
    QCOMPARE(window.runListPage()->totalCount(), 1);
    TaskProgress* progress = window.taskProgress();
    {
      PoolBlocker blocker;
      QVERIFY(window.runListPage()->selectRun(runId));
      QVERIFY(window.runDetail()->isLoading());
      QTRY_VERIFY(progress->isVisible());
      QVERIFY2(progress->text().contains(QStringLiteral("more")), qPrintable(progress->text()));
      QTest::mouseClick(progress->cancelButton(), Qt::LeftButton);
      QVERIFY(!progress->isVisible());
    }
    QTest::qWait(500);
    RunDetailView* detail = window.runDetail();
    QCOMPARE(detail->runId(), int64_t{0});  // the result was dropped
    QVERIFY(!detail->isProfileLoading());
    auto* status = detail->findChild<QLabel*>(QStringLiteral("runDetailStatus"));
    QVERIFY(status->isVisible());
    QVERIFY2(status->text().contains(QStringLiteral("cancelled")), qPrintable(status->text()));

    window.reload();
    QTRY_COMPARE_WITH_TIMEOUT(detail->runId(), runId, 20000);
    QTRY_VERIFY_WITH_TIMEOUT(!detail->isProfileLoading(), 20000);
    QTRY_VERIFY(!progress->isVisible());
  }

 private:
  QTemporaryDir settingsDir_;
};

QTEST_MAIN(TestTaskProgress)
#include "tst_task_progress.moc"
