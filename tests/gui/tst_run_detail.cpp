// The detail area of the main window on a real history: selecting a run in
// the table reads it in the background and shows its figures and diagnosis;
// the Recompilations tab shows a recompile's reason and both graphs with the
// differing nodes highlighted; a newer selection wins over an older one.
#include <QLabel>
#include <QSettings>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "history_fixture.h"
#include "models/graph_diff_model.h"
#include "models/recompilation_model.h"
#include "query/history_reader.h"
#include "widgets/finding_card.h"
#include "widgets/message_banner.h"
#include "windows/main_window.h"
#include "windows/overview_tab.h"
#include "windows/recompilations_tab.h"
#include "windows/run_detail_view.h"
#include "windows/run_list_page.h"

using namespace lazyscope;
using lazyscope::gui::GraphDiffModel;
using lazyscope::gui::MainWindow;
using lazyscope::gui::RecompilationModel;
using lazyscope::gui::testing::HistoryFixture;

class TestRunDetail : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("lazyscope-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_run_detail"));
    QSettings().clear();
    QVERIFY(dir_.isValid());
    path_ = dir_.filePath(QStringLiteral("history.sqlite"));
    fixture_ = std::make_unique<HistoryFixture>(path_);
    reshapedId_ = gui::testing::recordRecompilingRun(path_);
  }

  void init() {
    window_ = std::make_unique<MainWindow>();
    window_->show();
    window_->openHistory(path_);
    QTRY_COMPARE(window_->runListPage()->totalCount(), 4);
  }
  void cleanup() { window_.reset(); }

  void overviewShowsFiguresAndFindings() {
    QVERIFY(window_->runListPage()->selectRun(reshapedId_));
    QTRY_COMPARE(window_->runDetail()->runId(), reshapedId_);
    const gui::OverviewTab* overview = window_->runDetail()->overview();
    QCOMPARE(overview->figure(QStringLiteral("status")), QStringLiteral("succeeded"));
    QCOMPARE(overview->figure(QStringLiteral("steps")), QStringLiteral("5"));
    QCOMPARE(overview->figure(QStringLiteral("median")), QStringLiteral("10.0 ms"));
    QCOMPARE(overview->figure(QStringLiteral("compiles")), QStringLiteral("2"));
    QCOMPARE(overview->figure(QStringLiteral("compileTime")), QStringLiteral("70.0 ms"));
    QCOMPARE(overview->figure(QStringLiteral("executions")), QStringLiteral("5"));
    QCOMPARE(overview->figure(QStringLiteral("cacheHitRate")), QStringLiteral("60.0 %"));
    QCOMPARE(overview->figure(QStringLiteral("fallbacks")), QStringLiteral("0"));

    const auto cards = overview->findChildren<gui::FindingCard*>();
    QVERIFY(!cards.isEmpty());
    // 30 ms of recompiling in 120 ms of steps: a quarter of the run.
    QCOMPARE(cards.first()->severity(), pb::SEVERITY_CRITICAL);
    const QString title = cards.first()->findChild<QLabel*>(QStringLiteral("findingTitle"))->text();
    QVERIFY2(title.contains(QStringLiteral("input 0 shape")), qPrintable(title));
    QVERIFY(
        cards.first()->findChild<QLabel*>(QStringLiteral("findingFix"))->text().startsWith(QStringLiteral("Fix: ")));
    QVERIFY(!overview->findChild<QLabel*>(QStringLiteral("noFindings"))->isVisible());
    QVERIFY(!overview->findChild<QLabel*>(QStringLiteral("overviewError"))->isVisible());
  }

  void failedRunShowsItsError() {
    QVERIFY(window_->runListPage()->selectRun(fixture_->failedId));
    QTRY_COMPARE(window_->runDetail()->runId(), fixture_->failedId);
    const gui::OverviewTab* overview = window_->runDetail()->overview();
    QCOMPARE(overview->figure(QStringLiteral("status")), QStringLiteral("failed"));
    QCOMPARE(overview->figure(QStringLiteral("steps")), QStringLiteral("2"));
    auto* error = overview->findChild<QLabel*>(QStringLiteral("overviewError"));
    QVERIFY(error->isVisible());
    QVERIFY(error->text().contains(QString::fromUtf8(HistoryFixture::kError)));
  }

  void recompilationShowsBothGraphsWithTheDifference() {
    QVERIFY(window_->runListPage()->selectRun(reshapedId_));
    QTRY_COMPARE(window_->runDetail()->runId(), reshapedId_);
    window_->runDetail()->tabs()->setCurrentWidget(window_->runDetail()->recompilations());
    gui::RecompilationsTab* tab = window_->runDetail()->recompilations();
    QCOMPARE(tab->model()->rowCount(), 2);
    auto* table = tab->findChild<QTableView*>(QStringLiteral("recompilationTable"));
    // The recompile (step 2) is selected at once, not the first compile.
    QCOMPARE(table->currentIndex().data(RecompilationModel::CompileIndexRole).toInt(), 1);
    QCOMPARE(tab->model()->index(1, RecompilationModel::ReasonKind).data().toString(), QStringLiteral("shape"));
    QVERIFY2(tab->reasonText().contains(QStringLiteral("input 0 shape changed from [8, 3] to [4, 3]")),
             qPrintable(tab->reasonText()));

    auto* diffTable = tab->findChild<QTableView*>(QStringLiteral("graphDiffTable"));
    QAbstractItemModel* diff = diffTable->model();
    QCOMPARE(diff->rowCount(), 4);
    auto cell = [diff](int row, int column, int role = Qt::DisplayRole) { return diff->index(row, column).data(role); };
    QCOMPARE(cell(0, GraphDiffModel::BeforeShape).toString(), QStringLiteral("f32[8, 3]"));
    QCOMPARE(cell(0, GraphDiffModel::AfterShape).toString(), QStringLiteral("f32[4, 3]"));
    QVERIFY(cell(0, GraphDiffModel::AfterOp, GraphDiffModel::DiffersRole).toBool());
    QVERIFY(cell(0, GraphDiffModel::AfterOp, Qt::BackgroundRole).isValid());
    // w is the same in both graphs, and not highlighted.
    QCOMPARE(cell(1, GraphDiffModel::BeforeShape).toString(), cell(1, GraphDiffModel::AfterShape).toString());
    QVERIFY(!cell(1, GraphDiffModel::AfterOp, Qt::BackgroundRole).isValid());
    QVERIFY(cell(2, GraphDiffModel::AfterOp, GraphDiffModel::DiffersRole).toBool());
    QVERIFY(!cell(3, GraphDiffModel::AfterOp, GraphDiffModel::DiffersRole).toBool());
    QVERIFY(tab->reasonText().contains(QStringLiteral("2 nodes differ")));

    // The first compile has nothing to compare with: only its own graph.
    tab->selectCompile(0);
    QCOMPARE(diff->rowCount(), 4);
    QCOMPARE(cell(0, GraphDiffModel::BeforeOp).toString(), QString());
    QCOMPARE(cell(0, GraphDiffModel::AfterShape).toString(), QStringLiteral("f32[8, 3]"));
    QVERIFY(tab->reasonText().contains(QStringLiteral("No earlier graph")));
    QVERIFY(tab->reasonText().contains(QStringLiteral("not a recompilation")));
    // Alone, it differs from nothing: no row highlighted.
    for (int row = 0; row < diff->rowCount(); ++row) {
      QVERIFY(!cell(row, GraphDiffModel::AfterOp, GraphDiffModel::DiffersRole).toBool());
      QVERIFY(!cell(row, GraphDiffModel::AfterOp, Qt::BackgroundRole).isValid());
    }
    // The tab counts the one recompilation, not the first compile.
    QCOMPARE(tab->model()->recompileCount(), 1);
    QCOMPARE(window_->runDetail()->tabs()->tabText(1).remove(QLatin1Char('&')), QStringLiteral("Recompilations (1)"));
    QVERIFY(tab->model()->index(0, 0).data(Qt::ForegroundRole).isValid());   // first compile: greyed
    QVERIFY(!tab->model()->index(1, 0).data(Qt::ForegroundRole).isValid());  // the recompile
  }

  void newerSelectionWins() {
    QSignalSpy shown(window_->runDetail(), &gui::RunDetailView::runShown);
    QVERIFY(window_->runListPage()->selectRun(reshapedId_));
    QVERIFY(window_->runListPage()->selectRun(fixture_->succeededId));
    QTRY_COMPARE(shown.size(), 1);
    QTest::qWait(50);
    QCOMPARE(shown.size(), 1);
    QCOMPARE(window_->runDetail()->runId(), fixture_->succeededId);
    QCOMPARE(window_->runDetail()->overview()->figure(QStringLiteral("steps")), QStringLiteral("5"));
    QCOMPARE(window_->runDetail()->recompilations()->model()->rowCount(), 1);
  }

  void runAskedForBeforeLoadingIsSelected() {
    MainWindow w;
    w.selectRunWhenLoaded(fixture_->failedId);
    w.openHistory(path_);
    QTRY_COMPARE(w.runDetail()->runId(), fixture_->failedId);
    QCOMPARE(w.runListPage()->currentRunId(), fixture_->failedId);
  }

  void theNewestRunIsSelectedOnOpen() {
    MainWindow w;
    w.openHistory(path_);
    // The run list is newest first: its first run, not "No run selected".
    QTRY_VERIFY(w.runDetail()->runId() != 0);
    const std::vector<pb::RunSummary> runs = storage::HistoryReader(path_.toStdString()).list_runs();
    QCOMPARE(w.runDetail()->runId(), runs.front().run().id());
    QCOMPARE(w.runListPage()->currentRunId(), runs.front().run().id());
  }

  void runAskedForByNameIsSelected() {
    MainWindow w;
    w.selectRunWhenLoaded(QStringLiteral("bad-shape"));
    w.openHistory(path_);
    QTRY_COMPARE(w.runDetail()->runId(), fixture_->failedId);
    QVERIFY(w.banner()->isHidden());
  }

  void anUnknownRunIsReportedAndTheNewestShown() {
    for (const QString& ref : {QStringLiteral("999"), QStringLiteral("abc")}) {
      MainWindow w;
      w.show();
      w.selectRunWhenLoaded(ref);
      w.openHistory(path_);
      QTRY_VERIFY(w.runDetail()->runId() != 0);
      QVERIFY(w.banner()->isVisible());
      QVERIFY2(w.banner()->text().contains(QStringLiteral("There is no run “%1”").arg(ref)),
               qPrintable(w.banner()->text()));
      QVERIFY2(w.banner()->text().contains(QStringLiteral("reshaped")), qPrintable(w.banner()->text()));
    }
  }

  // --run, resolved before the window opens: the newest run of a name, as
  // the CLI picks it; an unknown one is an error naming what there is.
  void runOptionResolvesAsTheCommandLineDoes() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("names.sqlite"));
    const int64_t first = gui::testing::recordFinishedRun(path, QStringLiteral("twice"), 2);
    const int64_t other = gui::testing::recordFinishedRun(path, QStringLiteral("once"), 2);
    const int64_t second = gui::testing::recordFinishedRun(path, QStringLiteral("twice"), 3);
    QVERIFY(first < second);
    QString problem;
    QCOMPARE(MainWindow::resolveRun(path, QStringLiteral("twice"), &problem), second);
    QCOMPARE(MainWindow::resolveRun(path, QString::number(first), &problem), first);
    QCOMPARE(MainWindow::resolveRun(path, QStringLiteral("once"), &problem), other);
    QCOMPARE(MainWindow::resolveRun(path, QStringLiteral("last"), &problem), second);
    QVERIFY(problem.isEmpty());
    for (const QString& ref : {QStringLiteral("999"), QStringLiteral("abc")}) {
      QCOMPARE(MainWindow::resolveRun(path, ref, &problem), int64_t{0});
      QVERIFY2(problem.contains(QStringLiteral("no run “%1” in").arg(ref)), qPrintable(problem));
      QVERIFY2(problem.contains(QStringLiteral("(%1 to %2)").arg(first).arg(second)), qPrintable(problem));
    }
    QCOMPARE(MainWindow::resolveRun(dir.filePath(QStringLiteral("none.sqlite")), QStringLiteral("1"), &problem),
             int64_t{0});
    QVERIFY2(problem.contains(QStringLiteral("there is no history at")), qPrintable(problem));
  }

  void noRunSelectedShowsNoDiagnosis() {
    window_->runDetail()->clear();
    const gui::OverviewTab* overview = window_->runDetail()->overview();
    QVERIFY(!overview->findChild<QLabel*>(QStringLiteral("noFindings"))->isVisible());
    QVERIFY(overview->findChildren<gui::FindingCard*>().isEmpty());
  }

  void tabNamesAreTheNamesShowTabTakes() {
    const QStringList names = window_->runDetail()->tabNames();
    QCOMPARE(names, (QStringList{"overview", "recompilations", "graphs", "kernels", "timeline", "charts", "fallbacks",
                                 "metrics", "output"}));
    for (const QString& name : names) QVERIFY(window_->runDetail()->showTab(name));
    QVERIFY(!window_->runDetail()->showTab(QStringLiteral("bogus")));
  }

  void reloadKeepsTheSelectedRun() {
    QVERIFY(window_->runListPage()->selectRun(reshapedId_));
    QTRY_COMPARE(window_->runDetail()->runId(), reshapedId_);
    window_->reload();
    QTRY_VERIFY(!window_->isLoading());
    QTRY_VERIFY(!window_->runDetail()->isLoading());
    QCOMPARE(window_->runListPage()->currentRunId(), reshapedId_);
    QCOMPARE(window_->runDetail()->runId(), reshapedId_);
  }

 private:
  QTemporaryDir dir_;
  QString path_;
  std::unique_ptr<HistoryFixture> fixture_;
  int64_t reshapedId_ = 0;
  std::unique_ptr<MainWindow> window_;
};

QTEST_MAIN(TestRunDetail)
#include "tst_run_detail.moc"
