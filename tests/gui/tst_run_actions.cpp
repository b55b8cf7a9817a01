// Editing, comparing and running from the run list on a real history:
// rename, tags and delete through storage's HistoryEditor (a refused delete
// shows in the banner), the Compare view of two runs (models under
// QAbstractItemModelTester, deltas coloured by better or worse, step times
// overlaid), the runner's command line, and a live script run started from
// the GUI that appears in the list at once and is stopped as interrupted.
#include <QAbstractItemModelTester>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QSettings>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

#include "dialogs/run_script_dialog.h"
#include "export/run_bundle.h"
#include "history_fixture.h"
#include "loaders/script_run.h"
#include "models/delta_table_model.h"
#include "models/metric_delta_model.h"
#include "models/run_list_model.h"
#include "views/compare_view.h"
#include "views/step_chart.h"
#include "widgets/message_banner.h"
#include "windows/main_window.h"
#include "windows/run_actions.h"
#include "windows/run_list_page.h"

using namespace lazyscope;
using namespace lazyscope::gui;

namespace {

// The run as last read, or an empty summary (id 0) when it is not listed.
pb::RunSummary run(const MainWindow &window, qint64 id) {
  for (const pb::RunSummary &r : window.runModel()->runs()) {
    if (r.run().id() == id) return r;
  }
  return {};
}

pb::RunSummary runNamed(const MainWindow &window, const std::string &name) {
  for (const pb::RunSummary &r : window.runModel()->runs()) {
    if (r.run().name() == name) return r;
  }
  return {};
}

}  // namespace

class TestRunActions : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("lazyscope-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_run_actions"));
    QSettings().clear();
    QVERIFY(dir_.isValid());
    path_ = dir_.filePath(QStringLiteral("history.sqlite"));
    fixture_ = std::make_unique<testing::HistoryFixture>(path_);
    reshapedId_ = testing::recordRecompilingRun(path_);
  }

  void init() {
    window_ = std::make_unique<MainWindow>();
    window_->show();
    window_->openHistory(path_);
    QTRY_VERIFY(window_->runListPage()->totalCount() >= 3);
    QTRY_VERIFY(!window_->isLoading());
  }
  void cleanup() { window_.reset(); }

  void renameAndTagARun() {
    RunActions *actions = window_->runActions();
    actions->renameRun(fixture_->succeededId, QStringLiteral("baseline v2"));
    QTRY_VERIFY(!actions->isEditing());
    QTRY_COMPARE(QString::fromStdString(run(*window_, fixture_->succeededId).run().name()),
                 QStringLiteral("baseline v2"));
    actions->setTags(fixture_->succeededId, splitList(QStringLiteral("fast, bs64 , fast")));
    QTRY_COMPARE(run(*window_, fixture_->succeededId).run().tags_size(), 2);
    QCOMPARE(run(*window_, fixture_->succeededId).run().tags(1), std::string("bs64"));
    QVERIFY(!window_->banner()->isVisible());
  }

  void actionsFollowTheSelection() {
    RunActions *actions = window_->runActions();
    const QList<QAction *> list = actions->runActions();
    QAction *compare = list[3];
    QVERIFY(window_->runListPage()->selectRun(fixture_->succeededId));
    QVERIFY(list[0]->isEnabled());  // rename one run
    QVERIFY(!compare->isEnabled());
    window_->runListPage()->table()->selectAll();
    QVERIFY(!list[0]->isEnabled());
    QVERIFY(list[2]->isEnabled());  // delete many
    // The table's context menu holds the actions, with their shortcuts.
    QCOMPARE(window_->runListPage()->table()->contextMenuPolicy(), Qt::ActionsContextMenu);
    QCOMPARE(list[0]->shortcut(), QKeySequence(Qt::Key_F2));
    QCOMPARE(list[2]->shortcut(), QKeySequence(QKeySequence::Delete));
  }

  void deletingALiveRunIsRefusedInTheBanner() {
    RunActions *actions = window_->runActions();
    QSignalSpy failed(actions, &RunActions::failed);
    actions->deleteRuns({fixture_->runningId});
    QTRY_COMPARE(failed.count(), 1);
    QVERIFY(window_->banner()->isVisible());
    QVERIFY2(window_->banner()->text().contains(QStringLiteral("delete run")), qPrintable(window_->banner()->text()));
    QCOMPARE(run(*window_, fixture_->runningId).run().id(), fixture_->runningId);
  }

  void deleteARun() {
    const qint64 id = testing::recordFinishedRun(path_, QStringLiteral("scratch"), 2);
    window_->reload();
    QTRY_COMPARE(run(*window_, id).run().id(), id);
    window_->runActions()->deleteRuns({id});
    QTRY_COMPARE(run(*window_, id).run().id(), 0);
  }

  void exportARunAsBundleAndTrace() {
    RunActions *actions = window_->runActions();
    QSignalSpy exported(actions, &RunActions::exported);
    QSignalSpy failed(actions, &RunActions::failed);

    // The bundle reads back as the same run, as `lazyscope import` reads it.
    const QString bundle = dir_.filePath(QStringLiteral("run.lsrun"));
    actions->exportRun(reshapedId_, bundle, RunExportFormat::Bundle);
    QTRY_COMPARE(exported.count(), 1);
    const pb::RunBundle read = storage::read_run_bundle_file(bundle.toStdString());
    QCOMPARE(QString::fromStdString(read.run().name()), QStringLiteral("reshaped"));
    QVERIFY(read.events_size() > 0);

    // The trace is Chrome trace-event JSON.
    const QString trace = dir_.filePath(QStringLiteral("run.trace.json"));
    actions->exportRun(reshapedId_, trace, RunExportFormat::ChromeTrace);
    QTRY_COMPARE(exported.count(), 2);
    QFile file(trace);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.readAll().contains("\"traceEvents\""));

    // An unwritable path and a vanished run are messages in the banner.
    actions->exportRun(reshapedId_, QStringLiteral("/nonexistent/dir/run.lsrun"), RunExportFormat::Bundle);
    QTRY_COMPARE(failed.count(), 1);
    QVERIFY(window_->banner()->text().contains(QStringLiteral("nonexistent")));
    actions->exportRun(99999, trace, RunExportFormat::ChromeTrace);
    QTRY_COMPARE(failed.count(), 2);
    QVERIFY2(failed.last().first().toString().contains(QStringLiteral("99999")),
             qPrintable(failed.last().first().toString()));
    QCOMPARE(exported.count(), 2);
  }

  void compareTwoRuns() {
    CompareView *view = window_->runActions()->compareRuns(reshapedId_, fixture_->succeededId);
    QAbstractItemModelTester metricsTester(view->metrics(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester graphsTester(view->graphs(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester reasonsTester(view->reasons(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_VERIFY(!view->isLoading());
    QCOMPARE(view->metrics()->rowCount(), 9);
    // A is the older run (baseline: 1 compile), B the reshaped one (2).
    int compilesRow = -1;
    for (int r = 0; r < view->metrics()->rowCount(); ++r) {
      if (view->metrics()->index(r, MetricDeltaModel::Metric).data().toString() == QStringLiteral("Uncached compiles"))
        compilesRow = r;
    }
    QVERIFY(compilesRow >= 0);
    QCOMPARE(view->metrics()->index(compilesRow, MetricDeltaModel::Delta).data().toString(), QStringLiteral("+1"));
    QCOMPARE(view->metrics()->index(compilesRow, MetricDeltaModel::Delta).data(MetricDeltaModel::VerdictRole).toInt(),
             -1);
    QVERIFY(view->graphs()->rowCount() >= 2);
    QCOMPARE(view->chart()->series().size(), size_t{2});
    QCOMPARE(view->chart()->series()[1].ms.size(), size_t{5});
    view->close();
  }

  // The Compare view's chart at its default size (1000 px window, the chart
  // beside the table): two runs with long names drew their legend in one
  // row, the second entry cut off at the right edge.
  void stepChartLegendWrapsInsteadOfClipping() {
    StepChart chart;
    chart.resize(380, 240);
    const auto series = [](const QString &name, QColor color) {
      return StepChart::Series{name, color, {0, 1, 2}, {5.0, 1.0, 1.2}};
    };
    chart.setSeries({series(QStringLiteral("A #12 recompile_demo_with_a_long_name"), Qt::blue),
                     series(QStringLiteral("B #13 recompile_fixed_with_a_long_name"), Qt::red)});
    const std::vector<StepChart::LegendEntry> legend = chart.legend();
    QCOMPARE(legend.size(), size_t{2});
    for (const StepChart::LegendEntry &entry : legend) {
      QVERIFY2(QRectF(chart.rect()).contains(entry.label), qPrintable(entry.text));
      QVERIFY(entry.text.endsWith(QStringLiteral("(3 steps)")));  // nothing elided: it fits in a row
      QVERIFY(entry.label.bottom() < chart.plotRect().top());     // the plot starts below the legend
    }
    QVERIFY(legend[1].label.top() > legend[0].label.top());  // a second row
    // Narrower than one label: elided, still inside.
    chart.resize(200, 200);
    for (const StepChart::LegendEntry &entry : chart.legend()) {
      QVERIFY2(QRectF(chart.rect()).contains(entry.label), qPrintable(entry.text));
      QVERIFY(entry.text.contains(QStringLiteral("…")));
    }
    // Wide enough: one row, as before.
    chart.resize(1200, 240);
    QCOMPARE(chart.legend()[1].label.top(), chart.legend()[0].label.top());
  }

  void metricVerdicts() {
    DeltaTableModel model({QStringLiteral("In"), QStringLiteral("Op"), QStringLiteral("Source")},
                          {{QStringLiteral("Count"), QStringLiteral("fallbacks")}});
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRows({{QStringLiteral("both"), QStringLiteral("softmax"), QStringLiteral("a.py:3"), {{3.0, 1.0}}},
                   {QStringLiteral("only in B"), QStringLiteral("gelu"), QString(), {{std::nullopt, 2.0}}}});
    QCOMPARE(model.index(0, DeltaTableModel::FIRST_VALUE).data().toString(), QStringLiteral("3 → 1  (−2)"));
    QCOMPARE(model.index(1, DeltaTableModel::FIRST_VALUE).data().toString(), QStringLiteral("— → 2"));
  }

  // Each column is coloured by what it measures: more compiles, time or
  // fallbacks are worse, more steps/s or cache hits better, more executions
  // neither; a row in one run only is not coloured at all.
  void deltaColoursFollowTheMetricsMeaning() {
    const QStringList metrics = {"compiles", "compile_ms",  "fallbacks",     "executions",
                                 "steps",    "steps_per_s", "cache_hit_rate"};
    std::vector<DeltaColumn> columns;
    for (const QString &metric : metrics) columns.push_back({metric, metric});
    DeltaTableModel model({QStringLiteral("In"), QStringLiteral("Item"), QStringLiteral("Where")}, columns);
    QPalette palette;
    model.setPalette(palette);
    // Every figure went up from A to B in row 0 and down in row 1.
    std::vector<std::pair<std::optional<double>, std::optional<double>>> up, down, onlyB;
    for (int i = 0; i < metrics.size(); ++i) {
      up.push_back({0.5, 0.75});
      down.push_back({0.75, 0.5});
      onlyB.push_back({std::nullopt, 0.75});
    }
    model.setRows({{"both", "g1", "", up}, {"both", "g2", "", down}, {"only in B", "g3", "", onlyB}});
    const std::map<QString, int> upVerdict = {{"compiles", -1},     {"compile_ms", -1}, {"fallbacks", -1},
                                              {"executions", 0},    {"steps", 0},       {"steps_per_s", 1},
                                              {"cache_hit_rate", 1}};
    for (int c = 0; c < metrics.size(); ++c) {
      const int column = DeltaTableModel::FIRST_VALUE + c;
      const int expected = upVerdict.at(metrics[c]);
      QCOMPARE(model.index(0, column).data(DeltaTableModel::VerdictRole).toInt(), expected);
      QCOMPARE(model.index(1, column).data(DeltaTableModel::VerdictRole).toInt(), -expected);
      QCOMPARE(model.index(2, column).data(DeltaTableModel::VerdictRole).toInt(), 0);
      QVERIFY(!model.index(2, column).data(Qt::ForegroundRole).isValid());
      const QVariant colour = model.index(0, column).data(Qt::ForegroundRole);
      if (expected == 0) {
        QVERIFY(!colour.isValid());
      } else {
        QCOMPARE(colour.value<QColor>(), verdictColor(expected, palette));
      }
    }
    QCOMPARE(betterDirection(QStringLiteral("no_such_metric")), Better::Neither);
    // A change within the runs' noise is no verdict: 0.25 ms more compile
    // time when compiles vary by 0.5 ms.
    model.setNoise(QStringLiteral("compile_ms"), 0.5);
    const int compileMs = DeltaTableModel::FIRST_VALUE + static_cast<int>(metrics.indexOf("compile_ms"));
    QCOMPARE(model.index(0, compileMs).data(DeltaTableModel::VerdictRole).toInt(), 0);
    QVERIFY(!model.index(0, compileMs).data(Qt::ForegroundRole).isValid());
    model.setNoise(QStringLiteral("compile_ms"), 0.1);
    QCOMPARE(model.index(0, compileMs).data(DeltaTableModel::VerdictRole).toInt(), -1);
  }

  void commandLineComesFromTheFlagTable() {
    ScriptRunOptions options;
    options.script = QStringLiteral("/tmp/train.py");
    options.args = {QStringLiteral("--steps"), QStringLiteral("3")};
    options.name = QStringLiteral("try");
    options.tags = {QStringLiteral("a"), QStringLiteral("b")};
    options.deviceKind = QStringLiteral("lazy");
    options.deviceCount = 2;
    options.bf16 = true;
    options.fallbackOps = {QStringLiteral("nonzero"), QStringLiteral("sort")};

    // Every option, as `lazyscope run --help` spells it; always --quiet.
    QCOMPARE(runCommandLine(options, QStringLiteral("/h.sqlite")), (QStringList{"run",
                                                                                "--history",
                                                                                "/h.sqlite",
                                                                                "--quiet",
                                                                                "--name",
                                                                                "try",
                                                                                "--tag",
                                                                                "a",
                                                                                "--tag",
                                                                                "b",
                                                                                "--devices",
                                                                                "2",
                                                                                "--device",
                                                                                "lazy",
                                                                                "--bf16",
                                                                                "--force-fallback",
                                                                                "nonzero,sort",
                                                                                "/tmp/train.py",
                                                                                "--",
                                                                                "--steps",
                                                                                "3"}));

    // Defaults add nothing but --quiet.
    ScriptRunOptions plain;
    plain.script = QStringLiteral("/tmp/train.py");
    QCOMPARE(runCommandLine(plain, QStringLiteral("/h.sqlite")),
             (QStringList{"run", "--history", "/h.sqlite", "--quiet", "/tmp/train.py"}));

    // An older runner without some flags: those options are left out.
    QStringList skipped;
    const QStringList args = runCommandLine(
        options, QStringLiteral("/h.sqlite"),
        {QStringLiteral("--quiet"), QStringLiteral("--name"), QStringLiteral("--tag"), QStringLiteral("--devices")},
        &skipped);
    QCOMPARE(args, (QStringList{"run", "--history", "/h.sqlite", "--quiet", "--name", "try", "--tag", "a", "--tag", "b",
                                "--devices", "2", "/tmp/train.py", "--", "--steps", "3"}));
    QCOMPARE(skipped, (QStringList{"--device", "--bf16", "--force-fallback"}));

    RunScriptDialog dialog(path_);
    dialog.setOptions(options);
    dialog.setSupportedFlags({QStringLiteral("--name"), QStringLiteral("--tag")});
    QVERIFY(!dialog.options().bf16);  // not supported: not passed
    QVERIFY(dialog.commandLine().contains(QStringLiteral("--tag")));
    QVERIFY(!dialog.commandLine().contains(QStringLiteral("--bf16")));
  }

  void flagTableMatchesTheRunnersHelp() {
    // The table must name only flags the real runner has: a renamed flag
    // would otherwise make every GUI-launched run fail to start.
    if (!QFileInfo(runnerPath()).isExecutable()) QSKIP("the lazyscope runner is not built");
    QProcess help;
    help.start(runnerPath(), {QStringLiteral("run"), QStringLiteral("--help")});
    QVERIFY(help.waitForFinished(30000));
    const QString text = QString::fromUtf8(help.readAllStandardOutput() + help.readAllStandardError());
    for (const RunFlag &row : kRunFlags) {
      const QString flag = QString::fromLatin1(row.flag);
      QVERIFY2(text.contains(QRegularExpression(QRegularExpression::escape(flag) + QStringLiteral("\\b"))),
               qPrintable(QStringLiteral("%1 is not in `lazyscope run --help`").arg(flag)));
    }
  }

  void liveRunAppearsAndIsInterrupted() {
    if (!QFileInfo(runnerPath()).isExecutable()) QSKIP("the lazyscope runner is not built");
    const QString script = dir_.filePath(QStringLiteral("slow.py"));
    QFile file(script);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(
        "import time\nimport lazyscope\nfrom lazyscope.core import "
        "lazy_model as lm\n"
        "x = lazyscope.ones(4, 4, device=lm.lazy_device())\n"
        "for step in range(600):\n    x = x * 1.0\n    lm.mark_step()\n "
        "   time.sleep(0.05)\n");
    file.close();
    ScriptRunOptions options;
    options.script = script;
    options.name = QStringLiteral("live-from-gui");
    RunActions *actions = window_->runActions();
    QVERIFY2(actions->startScript(options), qPrintable(window_->banner()->text()));
    QTRY_VERIFY_WITH_TIMEOUT(runNamed(*window_, "live-from-gui").run().id() != 0, 20000);
    QCOMPARE(runNamed(*window_, "live-from-gui").run().status(), pb::RUN_STATUS_RUNNING);
    const qint64 id = runNamed(*window_, "live-from-gui").run().id();
    QTRY_VERIFY_WITH_TIMEOUT(run(*window_, id).steps() > 0, 20000);
    QSignalSpy finished(actions->scriptRun(), &ScriptRun::finished);
    actions->stopScript();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    QTRY_COMPARE_WITH_TIMEOUT(run(*window_, id).run().status(), pb::RUN_STATUS_INTERRUPTED, 20000);
  }

 private:
  QTemporaryDir dir_;
  QString path_;
  std::unique_ptr<testing::HistoryFixture> fixture_;
  qint64 reshapedId_ = 0;
  std::unique_ptr<MainWindow> window_;
};

QTEST_MAIN(TestRunActions)
#include "tst_run_actions.moc"
