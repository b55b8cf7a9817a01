// The main window on a history produced the real way: the runner ran an
// example training script (ctest fixture `script_history`), and the window
// shows that run with the values the run actually had.
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QtTest>
#include <algorithm>

#include "loaders/run_profile_loader.h"
#include "models/metrics_model.h"
#include "models/run_list_model.h"
#include "query/history_reader.h"
#include "views/metrics_view.h"
#include "windows/main_window.h"
#include "windows/run_detail_view.h"
#include "windows/run_list_page.h"

using lazyscope::gui::MainWindow;
using lazyscope::gui::RunListModel;

class TestScriptHistory : public QObject {
  Q_OBJECT

 private slots:
  void showsTheRecordedRun() {
    const QString path = qEnvironmentVariable("LAZYSCOPE_SCRIPT_HISTORY");
    QVERIFY2(!path.isEmpty(), "LAZYSCOPE_SCRIPT_HISTORY is set by ctest");
    const int steps = qEnvironmentVariableIntValue("LAZYSCOPE_SCRIPT_STEPS");
    QVERIFY(steps > 1);

    MainWindow w;
    w.show();
    w.openHistory(path);
    auto* table = w.findChild<QTableView*>(QStringLiteral("runTable"));
    QVERIFY(table);
    QTRY_COMPARE(table->model()->rowCount(), 1);
    auto cell = [&](int column) { return table->model()->index(0, column).data().toString(); };
    QCOMPARE(cell(RunListModel::Name), QStringLiteral("linear_regression"));
    QCOMPARE(cell(RunListModel::Script), QStringLiteral("linear_regression.py"));
    QCOMPARE(cell(RunListModel::Status), QStringLiteral("succeeded"));
    QCOMPARE(cell(RunListModel::Steps), QString::number(steps));
    // One graph per training step: compiled once, then found in the cache.
    QCOMPARE(cell(RunListModel::Compiles), QStringLiteral("1"));
    QCOMPARE(cell(RunListModel::CacheHits), QString::number(steps - 1));
  }

  void metricsComeFromTheEngineSnapshots() {
    const QString path = qEnvironmentVariable("LAZYSCOPE_SCRIPT_HISTORY");
    const int steps = qEnvironmentVariableIntValue("LAZYSCOPE_SCRIPT_STEPS");
    QVERIFY(!path.isEmpty());
    const lazyscope::storage::HistoryReader reader(path.toStdString());
    const int64_t runId = reader.list_runs().front().run().id();

    // The profile carries the engine's own report, not the derived one.
    const lazyscope::gui::RunProfile profile = lazyscope::gui::RunProfileLoader::read(reader, runId);
    QVERIFY(!profile.metricsDerived);
    const auto find = [&](const char* name) -> const lazyscope::pb::MetricValue* {
      const auto it = std::find_if(profile.metrics.begin(), profile.metrics.end(),
                                   [&](const lazyscope::pb::MetricValue& m) { return m.name() == name; });
      return it == profile.metrics.end() ? nullptr : &*it;
    };
    QVERIFY(find("UncachedCompile") != nullptr);
    QCOMPARE(find("UncachedCompile")->value(), int64_t{1});
    QVERIFY(find("MarkStep") != nullptr);
    QVERIFY(find("MarkStep")->value() >= steps);
    // A timed metric with its percentiles, as the engine measured them.
    const lazyscope::pb::MetricValue* compile = find("CompileTime");
    QVERIFY(compile != nullptr);
    QVERIFY(!compile->is_counter());
    QCOMPARE(compile->count(), int64_t{1});
    QVERIFY(compile->total_ms() > 0);
    QVERIFY(compile->p50_ms() <= compile->p99_ms());

    // The Metrics tab shows it, says where it comes from, and searches it.
    MainWindow w;
    w.resize(1100, 800);
    w.show();
    w.openHistory(path);
    QTRY_COMPARE(w.runListPage()->totalCount(), 1);
    w.runListPage()->selectRun(runId);
    lazyscope::gui::RunDetailView* detail = w.runDetail();
    QTRY_VERIFY(detail->runId() == runId && !detail->isProfileLoading());
    QVERIFY(detail->showTab(QStringLiteral("metrics")));
    lazyscope::gui::MetricsView* metrics = detail->metrics();
    QCOMPARE(metrics->model()->rowCount(), static_cast<int>(profile.metrics.size()));
    QVERIFY2(metrics->note().contains(QStringLiteral("snapshot")), qPrintable(metrics->note()));
    QTest::keyClicks(metrics->search(), QStringLiteral("compiletime"));
    QCOMPARE(metrics->proxy()->rowCount(), 1);
    const QModelIndex row = metrics->proxy()->index(0, lazyscope::gui::MetricsModel::Count);
    QCOMPARE(row.data().toString(), QStringLiteral("1"));
  }
};

QTEST_MAIN(TestScriptHistory)
#include "tst_script_history.moc"
