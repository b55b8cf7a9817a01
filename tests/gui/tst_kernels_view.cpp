// The Kernels tab on a real history: the model under QAbstractItemModelTester
// (kernels by total time, their IR nodes as children with source lines), the
// view's caption, roofline chart and selection, a run without a profile
// saying why, and the tab in the main window reached by name (`--tab kernels`).
#include <QAbstractItemModelTester>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QScatterSeries>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

#include "history_fixture.h"
#include "models/kernel_model.h"
#include "query/history_reader.h"
#include "views/kernels_view.h"
#include "windows/main_window.h"
#include "windows/run_detail_view.h"
#include "windows/run_list_page.h"

using namespace lazyscope;
using gui::KernelModel;

class TestKernelsView : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    path_ = dir_.filePath(QStringLiteral("history.sqlite"));
    profiledId_ = gui::testing::recordProfiledRun(path_);
    plainId_ = gui::testing::recordFinishedRun(path_, QStringLiteral("unprofiled"), 3);
  }

  void modelShowsKernelsByTotalTimeWithTheirNodes() {
    KernelModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setReport(storage::HistoryReader(path_.toStdString()).kernel_report(profiledId_));
    QCOMPARE(model.rowCount(), 3);
    // fused: 10 x 200 us = 2 ms; gemm: 10 x 100 us = 1 ms; sum: 10 x 1 us.
    // A generated kernel says how it ran; a library kernel is named as it is.
    QCOMPARE(model.index(0, KernelModel::Kernel).data().toString(), QStringLiteral("fused_elementwise (compiled)"));
    QVERIFY(
        model.index(0, KernelModel::Kernel).data(Qt::ToolTipRole).toString().contains(QStringLiteral("avx2 compiled")));
    QCOMPARE(model.index(1, KernelModel::Kernel).data().toString(), QStringLiteral("gemm"));
    QVERIFY(model.index(1, KernelModel::Kernel).data(Qt::ToolTipRole).isNull());
    QCOMPARE(model.index(0, KernelModel::TotalTime).data(KernelModel::SortRole).toDouble(), 2.0);
    QCOMPARE(model.index(0, KernelModel::Calls).data().toLongLong(), 10LL);
    QCOMPARE(model.index(0, KernelModel::GFlops).data().toString(), QStringLiteral("–"));  // no FLOPs
    QCOMPARE(model.index(0, KernelModel::GBps).data().toString(), QStringLiteral("5.00"));
    QCOMPARE(model.index(0, KernelModel::Roofline).data().toString(), QStringLiteral("25%"));  // 5 of 20 GB/s
    // gemm: 2 MFLOP in 100 us = 20 GFLOP/s at 50 FLOP/byte, under a roof of 100.
    QCOMPARE(model.index(1, KernelModel::GFlops).data().toString(), QStringLiteral("20.00"));
    QCOMPARE(model.index(1, KernelModel::Roofline).data().toString(), QStringLiteral("20%"));
    // Its 40 kB fit the cache triad's 512 KiB: rated from cache; the fused
    // kernel's 1 MB stream from memory.
    QVERIFY2(
        model.index(1, KernelModel::Roofline).data(Qt::ToolTipRole).toString().contains(QStringLiteral("from cache")),
        qPrintable(model.index(1, KernelModel::Roofline).data(Qt::ToolTipRole).toString()));
    QVERIFY(
        model.index(0, KernelModel::Roofline).data(Qt::ToolTipRole).toString().contains(QStringLiteral("from memory")));
    QCOMPARE(model.index(1, KernelModel::Source).data().toString(), QStringLiteral("train_profiled.py:12"));
    QCOMPARE(model.index(0, KernelModel::Source).data().toString(), QStringLiteral("train_profiled.py:13"));

    const QModelIndex fused = model.index(0, 0);
    QCOMPARE(model.rowCount(fused), 2);
    QCOMPARE(model.index(0, KernelModel::Kernel, fused).data().toString(), QStringLiteral("add #2"));
    QCOMPARE(model.index(1, KernelModel::Kernel, fused).data().toString(), QStringLiteral("relu #3"));
    QCOMPARE(model.index(1, KernelModel::Source, fused).data().toString(), QStringLiteral("train_profiled.py:13"));
    QCOMPARE(model.index(1, KernelModel::Graph, fused).data().toString(), QStringLiteral("model.fc1"));
    QCOMPARE(model.parent(model.index(1, 0, fused)), fused);
    QCOMPARE(model.index(1, 0, fused).data(KernelModel::KernelIndexRole).toInt(), 0);
    QCOMPARE(model.rowCount(model.index(2, 0)), 0);  // "sum" covers no recorded node

    model.setReport({});
    QCOMPARE(model.rowCount(), 0);
  }

  void aKernelTimedOnlyOnItsFirstCallIsMarked() {
    pb::KernelReport report;
    for (const bool first : {true, false}) {
      pb::KernelRow& k = *report.add_kernels();
      k.set_name(first ? "gemm" : "sum");
      k.set_calls(first ? 1 : 9);
      k.set_samples(first ? 1 : 3);
      k.set_mean_us(first ? 127.0 : 3.0);
      k.set_first_call_only(first);
    }
    KernelModel model;
    model.setReport(report);
    QCOMPARE(model.index(0, KernelModel::MeanTime).data().toString().right(1), QStringLiteral("*"));
    QVERIFY(model.index(0, KernelModel::MeanTime)
                .data(Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("first and only call, which includes one-time set-up")));
    QVERIFY(!model.index(1, KernelModel::MeanTime).data().toString().endsWith(QLatin1Char('*')));
    QCOMPARE(model.index(1, KernelModel::MeanTime).data(Qt::ToolTipRole).toString(),
             QStringLiteral("mean of 3 timed calls"));
  }

  void viewPlotsTheRooflineAndHighlightsTheSelection() {
    gui::KernelsView view;
    view.resize(1000, 600);
    view.show();
    view.setRun(path_, profiledId_);
    QTRY_VERIFY(!view.isLoading());
    QVERIFY(view.emptyText().isEmpty());
    QVERIFY2(view.caption().contains(QStringLiteral("100.0 GFLOP/s (SGEMM), 20.0 GB/s")), qPrintable(view.caption()));
    QVERIFY(view.caption().contains(QStringLiteral("3 kernels in 1 profiled graph(s)")));
    QCOMPARE(view.plottedKernels(), 2);  // gemm and sum: the fused kernel has no FLOPs
    QChart* chart = view.roofline()->chart();
    QLineSeries *roof = nullptr, *cacheRoof = nullptr;
    QScatterSeries* selected = nullptr;
    for (QAbstractSeries* s : chart->series()) {
      if (auto* scatter = qobject_cast<QScatterSeries*>(s)) {
        if (scatter->name() == QStringLiteral("selected")) selected = scatter;
      } else if (auto* line = qobject_cast<QLineSeries*>(s)) {
        (line->name() == QStringLiteral("cache") ? cacheRoof : roof) = line;
      }
    }
    QVERIFY(roof != nullptr && cacheRoof != nullptr && selected != nullptr);
    // The roofs meet at the ridge: 100 GFLOP/s / 20 GB/s = 5 FLOP/byte.
    QCOMPARE(roof->count(), 3);
    QCOMPARE(roof->at(1), QPointF(5.0, 100.0));
    // The cache's slope meets the same peak at 100 / 80 = 1.25 FLOP/byte, dashed.
    QCOMPARE(cacheRoof->count(), 2);
    QCOMPARE(cacheRoof->at(1), QPointF(1.25, 100.0));
    QCOMPARE(cacheRoof->pen().style(), Qt::DashLine);
    QCOMPARE(roof->pen().style(), Qt::SolidLine);
    QVERIFY2(view.caption().contains(QStringLiteral("80.0 GB/s in cache (up to 512.0 KiB per kernel)")),
             qPrintable(view.caption()));
    // The first row (fused, no FLOPs) is selected: nothing to highlight.
    QCOMPARE(selected->count(), 0);
    QVERIFY(view.selectKernel(1));  // gemm
    QCOMPARE(selected->count(), 1);
    QCOMPARE(selected->at(0), QPointF(50.0, 20.0));
  }

  void logAxesLabelFewEnoughPowers() {
    QCOMPARE(gui::logAxisBase(0.1, 1000, 5), 10);    // 4 decades: 5 labels
    QCOMPARE(gui::logAxisBase(5e-5, 20, 5), 100);    // 5.6 decades: 0.0001, 0.01, 1 (and 100)
    QCOMPARE(gui::logAxisBase(1e-6, 1e6, 5), 1000);  // 12 decades
    QCOMPARE(gui::logAxisBase(5e-4, 200, 9), 10);
    QCOMPARE(gui::logAxisBase(0, 10, 5), 10);  // no range: the plain base
  }

  void aRunWithoutAProfileSaysWhy() {
    gui::KernelsView view;
    view.setRun(path_, plainId_);
    QTRY_VERIFY(!view.isLoading());
    // Its graphs ran, but the engine that recorded it did not profile them.
    QVERIFY2(view.emptyText().contains(QStringLiteral("executed 3 compiled graph(s) but recorded no kernel profile")),
             qPrintable(view.emptyText()));
    QCOMPARE(view.model()->rowCount(), 0);
    QCOMPARE(view.plottedKernels(), 0);
  }

  void theTabIsReachedByName() {
    gui::MainWindow window;
    window.resize(1100, 800);
    window.show();
    window.openHistory(path_);
    QTRY_COMPARE(window.runListPage()->totalCount(), 2);
    window.runListPage()->selectRun(profiledId_);
    gui::RunDetailView* detail = window.runDetail();
    QVERIFY(detail->showTab(QStringLiteral("kernels")));
    QCOMPARE(detail->tabs()->currentWidget(), static_cast<QWidget*>(detail->kernels()));
    QTRY_COMPARE(detail->kernels()->model()->rowCount(), 3);
    QTRY_COMPARE(detail->tabs()->tabText(detail->tabs()->indexOf(detail->kernels())), QStringLiteral("&Kernels (3)"));
  }

 private:
  QTemporaryDir dir_;
  QString path_;
  int64_t profiledId_ = 0;
  int64_t plainId_ = 0;
};

QTEST_MAIN(TestKernelsView)
#include "tst_kernels_view.moc"
