// The main window on a history produced the real way: the runner ran an
// example training script (ctest fixture `script_history`), and the window
// shows that run with the values the run actually had.
#include <QTableView>
#include <QtTest>

#include "models/run_list_model.h"
#include "windows/main_window.h"

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
};

QTEST_MAIN(TestScriptHistory)
#include "tst_script_history.moc"
