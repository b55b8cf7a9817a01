// The Timeline, Charts, Fallbacks, Metrics and Output views of a run, on a
// real history: the timeline's geometry on its own; the models under
// QAbstractItemModelTester; the metrics derived from recorded events; and
// the views in the main window (select a run, switch tabs, click a step and
// see the selection reach the Recompilations tab, zoom and pan with keys and
// the wheel, search the metrics, read the output of a failed run, overlay
// runs in a chart, export images).
#include <QAbstractItemModelTester>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPlainTextEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "analysis/run_metrics.h"
#include "db/history_file.h"
#include "history_fixture.h"
#include "loaders/run_profile_loader.h"
#include "models/fallback_model.h"
#include "models/metrics_model.h"
#include "models/recompilation_model.h"
#include "models/run_list_model.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "util/color_scheme.h"
#include "util/run_status.h"
#include "views/charts_view.h"
#include "views/fallbacks_view.h"
#include "views/metrics_view.h"
#include "views/output_view.h"
#include "views/timeline_view.h"
#include "widgets/finding_card.h"
#include "widgets/message_banner.h"
#include "widgets/timeline_geometry.h"
#include "widgets/timeline_widget.h"
#include "windows/main_window.h"
#include "windows/overview_tab.h"
#include "windows/recompilations_tab.h"
#include "windows/run_detail_view.h"
#include "windows/run_list_page.h"
#include "windows/shortcut_sheet.h"

using namespace lazyscope;
using lazyscope::gui::RunProfile;
using lazyscope::gui::TimelineGeometry;
using lazyscope::gui::testing::HistoryFixture;

namespace {

constexpr int kSteps = 40;

const pb::MetricValue* findMetric(const std::vector<pb::MetricValue>& metrics, const std::string& name) {
  for (const pb::MetricValue& metric : metrics) {
    if (metric.name() == name) return &metric;
  }
  return nullptr;
}

// A recording of `replicas` ranks: rank r has 3 + r steps of 10 ms, each
// running a 8 ms graph of which rank 0 spends 6 ms waiting in collectives
// (it waits for the others) and the other ranks 1 ms; rank 0's loader ends
// with an empty barrier, which is no step.
int64_t recordRanks(const QString& path, int replicas) {
  storage::Recorder recorder(path.toStdString(), pb::RunInfo());
  for (int replica = 0; replica < replicas; ++replica) {
    for (int step = 0; step < 3 + replica; ++step) {
      pb::Event event;
      event.set_replica(replica);
      event.mutable_step()->set_step(step);
      event.mutable_step()->set_start_ns(step * 10'000'000);
      event.mutable_step()->set_end_ns((step + 1) * 10'000'000);
      event.mutable_step()->set_collective_ns(replica == 0 ? 6'000'000 : 1'000'000);
      event.mutable_step()->set_collective_bytes(4096);
      recorder.record(event);
      pb::Event execute;
      execute.set_replica(replica);
      execute.mutable_execute()->set_step(step);
      execute.mutable_execute()->set_start_ns(step * 10'000'000 + 1'000'000);
      execute.mutable_execute()->set_duration_ns(8'000'000);
      execute.mutable_execute()->set_cause(pb::SYNC_CAUSE_MARK_STEP);
      recorder.record(execute);
    }
  }
  pb::Event empty;  // the loader's last barrier on rank 0: nothing ran
  empty.mutable_step()->set_step(3);
  empty.mutable_step()->set_start_ns(30'000'000);
  empty.mutable_step()->set_end_ns(31'000'000);
  recorder.record(empty);
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  return recorder.run_id();
}

}  // namespace

class TestRunViews : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("lazyscope-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_run_views"));
    QSettings().clear();
    QVERIFY(dir_.isValid());
    path_ = dir_.filePath(QStringLiteral("history.sqlite"));
    fixture_ = std::make_unique<HistoryFixture>(path_);
    profiledId_ = gui::testing::recordProfiledRun(path_, kSteps);
    secondId_ = gui::testing::recordProfiledRun(path_, 20, QStringLiteral("second"), 2.0);
  }

  void cleanup() { window_.reset(); }

  // ---- geometry ----------------------------------------------------------

  void geometryFitsAndZoomsAroundTheAnchor() {
    TimelineGeometry g;
    g.setWidth(1000);
    g.setCount(100);
    QCOMPARE(g.first(), 0.0);
    QCOMPARE(g.span(), 100.0);
    QCOMPARE(g.toX(50), 500.0);
    QCOMPARE(g.toPosition(250), 25.0);
    QVERIFY(g.isFit());
    g.zoom(2.0, 250);  // position 25 stays under x = 250
    QCOMPARE(g.span(), 50.0);
    QCOMPARE(g.toPosition(250), 25.0);
    QVERIFY(!g.isFit());
    g.zoom(1000.0, 0);  // never narrower than a few steps
    QCOMPARE(g.span(), TimelineGeometry::kMinSpan);
    g.fit();
    QVERIFY(g.isFit());
  }

  void geometryPansInsideTheRun() {
    TimelineGeometry g;
    g.setWidth(100);
    g.setCount(100);
    g.zoom(4.0, 0);  // steps 0-25
    g.pan(50);       // half a view later
    QCOMPARE(g.first(), 12.5);
    g.pan(-1000);
    QCOMPARE(g.first(), 0.0);
    g.toEnd();
    QCOMPARE(g.last(), 100.0);
    g.ensureVisible(10);
    QCOMPARE(g.first(), 10.0);
    g.toStart();
    QCOMPARE(g.first(), 0.0);
    // An empty or tiny run is shown whole and does not divide by zero.
    g.setCount(0);
    QCOMPARE(g.span(), 1.0);
    g.zoom(2.0, 50);
    QCOMPARE(g.first(), 0.0);
  }

  // ---- loader, derived metrics and models --------------------------------

  void profileReadsEverythingTheViewsShow() {
    const storage::HistoryReader reader(path_.toStdString());
    const RunProfile profile = gui::RunProfileLoader::read(reader, profiledId_);
    QCOMPARE(profile.runId, profiledId_);
    QCOMPARE(profile.steps.steps_size(), kSteps);
    QCOMPARE(profile.scalars.size(), size_t{2});
    QCOMPARE(profile.scalars[0].name(), std::string("loss"));
    QCOMPARE(profile.fallbackGroups.size(), size_t{2});
    QVERIFY(!profile.output.chunks().empty());
    // Markers: 2 compiles, 8 + 4 fallbacks, 4 item() syncs (mark_step is not one).
    int compiles = 0, fallbacks = 0, syncs = 0;
    for (const gui::StepMarker& marker : profile.markers) {
      compiles += marker.kind == gui::StepMarker::Kind::Compile;
      fallbacks += marker.kind == gui::StepMarker::Kind::Fallback;
      syncs += marker.kind == gui::StepMarker::Kind::Sync;
    }
    QCOMPARE(compiles, 2);
    QCOMPARE(fallbacks, 12);
    QCOMPARE(syncs, 4);
    QVERIFY(std::is_sorted(profile.markers.begin(), profile.markers.end(),
                           [](const auto& a, const auto& b) { return a.step < b.step; }));
    QCOMPARE(gui::RunProfileLoader::read(reader, 9999).runId, int64_t{0});
  }

  void metricsAreDerivedFromEvents() {
    const storage::HistoryReader reader(path_.toStdString());
    const std::vector<pb::MetricValue> metrics = storage::derive_metrics(*reader.timeline(profiledId_));
    QCOMPARE(findMetric(metrics, "UncachedCompile")->value(), int64_t{2});
    QCOMPARE(findMetric(metrics, "MarkStep")->value(), int64_t{kSteps});
    QCOMPARE(findMetric(metrics, "Fallbacks")->value(), int64_t{12});
    QCOMPARE(findMetric(metrics, "SyncCause.item")->value(), int64_t{4});
    const pb::MetricValue* compile = findMetric(metrics, "CompileTime");
    QVERIFY(!compile->is_counter());
    QCOMPARE(compile->count(), int64_t{2});
    QCOMPARE(compile->total_ms(), 60.0);
    // numpy.percentile([20, 40], [50, 99]): between the two, not either.
    QCOMPARE(compile->p50_ms(), 30.0);
    QCOMPARE(compile->p99_ms(), 39.8);
    QCOMPARE(findMetric(metrics, "StepTime")->count(), int64_t{kSteps});
  }

  void fallbackModelPassesTheTester() {
    const storage::HistoryReader reader(path_.toStdString());
    gui::FallbackModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setGroups(reader.fallback_groups(profiledId_));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), int{gui::FallbackModel::NUM_COLUMNS});
    // Most expensive first: nonzero, 8 times 2 ms, 4096 bytes each.
    QCOMPARE(model.index(0, gui::FallbackModel::Op).data().toString(), QStringLiteral("nonzero"));
    QCOMPARE(model.index(0, gui::FallbackModel::Source).data().toString(), QStringLiteral("train_profiled.py:14"));
    QCOMPARE(model.index(0, gui::FallbackModel::Count).data().toLongLong(), 8);
    QCOMPARE(model.index(0, gui::FallbackModel::TotalTime).data().toString(), QStringLiteral("16.0 ms"));
    QCOMPARE(model.index(0, gui::FallbackModel::Bytes).data().toString(), QStringLiteral("32.0 KiB"));
    QCOMPARE(model.index(0, gui::FallbackModel::Bytes).data(gui::FallbackModel::SortRole).toLongLong(), 32768);
    QCOMPARE(model.index(0, gui::FallbackModel::Steps).data().toString(), QStringLiteral("0–35"));
    model.setGroups({});
    QCOMPARE(model.rowCount(), 0);
  }

  void metricsModelPassesTheTester() {
    const storage::HistoryReader reader(path_.toStdString());
    gui::MetricsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setMetrics(storage::derive_metrics(*reader.timeline(profiledId_)));
    QVERIFY(model.rowCount() > 10);
    QCOMPARE(model.index(0, gui::MetricsModel::Name).data().toString(), QStringLiteral("ExecuteCount"));
    QCOMPARE(model.index(0, gui::MetricsModel::Kind).data().toString(), QStringLiteral("counter"));
    // A counter has no percentiles: the cell is empty, not zero.
    QVERIFY(!model.index(0, gui::MetricsModel::P50).data().isValid());
    // Each metric labelled by its kind: the live-buffer gauges are not
    // counters, timed metrics are timings.
    const auto kindOf = [&model](const QString& name) {
      for (int row = 0; row < model.rowCount(); ++row) {
        if (model.index(row, gui::MetricsModel::Name).data().toString() == name) {
          return model.index(row, gui::MetricsModel::Kind).data().toString();
        }
      }
      return QStringLiteral("(no row %1)").arg(name);
    };
    QCOMPARE(kindOf(QStringLiteral("CompileTime")), QStringLiteral("timing"));
    QCOMPARE(kindOf(QStringLiteral("UncachedCompile")), QStringLiteral("counter"));
    std::vector<pb::MetricValue> snapshot(2);
    snapshot[0].set_name("LiveDeviceBufferBytes");
    snapshot[0].set_is_counter(true);
    snapshot[0].set_value(4096);
    snapshot[1].set_name("TransferToDeviceBytes");
    snapshot[1].set_is_counter(true);
    snapshot[1].set_value(4096);
    model.setMetrics(snapshot);
    QCOMPARE(kindOf(QStringLiteral("LiveDeviceBufferBytes")), QStringLiteral("gauge"));
    QCOMPARE(kindOf(QStringLiteral("TransferToDeviceBytes")), QStringLiteral("counter"));
    model.setMetrics({});
    QCOMPARE(model.rowCount(), 0);
  }

  // ---- the views in the main window --------------------------------------

  void timelineClickSelectsAStepAndItsCompile() {
    gui::RunDetailView* detail = openRun(profiledId_);
    QVERIFY(detail->showTab(QStringLiteral("timeline")));
    gui::TimelineWidget* timeline = detail->timeline()->timeline();
    QTRY_VERIFY(timeline->isVisible());
    QCOMPARE(timeline->stepCount(), kSteps);
    QCOMPARE(timeline->firstVisibleStep(), 0);
    QCOMPARE(timeline->lastVisibleStep(), kSteps - 1);

    // Click the middle of the recompiling step's bar.
    const auto& g = timeline->geometryModel();
    const int plotLeft = timeline->width() - 8 - static_cast<int>(g.width());
    const int x = plotLeft + static_cast<int>(g.toX(gui::testing::kProfiledRecompileStep + 0.5));
    QCOMPARE(timeline->stepAt(x), gui::testing::kProfiledRecompileStep);
    QSignalSpy selected(detail->timeline(), &gui::TimelineView::stepSelected);
    QTest::mouseClick(timeline, Qt::LeftButton, {}, QPoint(x, timeline->height() - 40));
    QCOMPARE(selected.count(), 1);
    QCOMPARE(selected.first().first().toLongLong(), gui::testing::kProfiledRecompileStep);
    QCOMPARE(timeline->selectedStep(), gui::testing::kProfiledRecompileStep);
    // The Recompilations tab now shows that step's compile.
    QVERIFY2(detail->recompilations()->reasonText().contains(QStringLiteral("[64, 16]")),
             qPrintable(detail->recompilations()->reasonText()));
    // The tooltip text has the step's breakdown and markers.
    const QString tip = timeline->describeStep(gui::testing::kProfiledRecompileStep);
    QVERIFY2(tip.contains(QStringLiteral("compile: 20.0 ms")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("shape")), qPrintable(tip));
    // Selected, the bar still shows its breakdown: the pixel clicked is one
    // of the parts' own colours, not covered by the selection.
    const QColor pixel = timeline->grab().toImage().pixelColor(x, timeline->height() - 40);
    bool isPart = false;
    for (int part = 0; part < gui::TimelineWidget::NUM_PARTS; ++part) {
      isPart |= pixel ==
                gui::TimelineWidget::partColor(static_cast<gui::TimelineWidget::Part>(part), timeline->palette());
    }
    QVERIFY2(isPart, qPrintable(pixel.name()));

    QTest::keyClick(timeline, Qt::Key_Escape);
    QCOMPARE(timeline->selectedStep(), -1);
  }

  void timelineZoomsAndPansWithKeysAndWheel() {
    gui::RunDetailView* detail = openRun(profiledId_);
    detail->showTab(QStringLiteral("timeline"));
    gui::TimelineWidget* timeline = detail->timeline()->timeline();
    QTRY_COMPARE(timeline->stepCount(), kSteps);
    timeline->setFocus();
    QSignalSpy range(timeline, &gui::TimelineWidget::visibleRangeChanged);

    QTest::keyClick(timeline, Qt::Key_Plus);
    QTest::keyClick(timeline, Qt::Key_Plus);
    QVERIFY(range.count() >= 2);
    const int64_t zoomedSpan = timeline->lastVisibleStep() - timeline->firstVisibleStep();
    QVERIFY2(zoomedSpan < kSteps - 1, qPrintable(QString::number(zoomedSpan)));

    QTest::keyClick(timeline, Qt::Key_End);
    QCOMPARE(timeline->lastVisibleStep(), kSteps - 1);
    QVERIFY(timeline->firstVisibleStep() > 0);
    QTest::keyClick(timeline, Qt::Key_Left);
    QVERIFY(timeline->lastVisibleStep() < kSteps - 1);
    QTest::keyClick(timeline, Qt::Key_Home);
    QCOMPARE(timeline->firstVisibleStep(), 0);

    // A wheel notch toward the user zooms out, anchored under the cursor.
    const QPointF at(timeline->width() / 2.0, timeline->height() / 2.0);
    QWheelEvent wheel(at, timeline->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(timeline, &wheel);
    QVERIFY(timeline->lastVisibleStep() - timeline->firstVisibleStep() > zoomedSpan);

    // Dragging pans: drag right to see earlier steps.
    timeline->zoomIn();
    timeline->zoomIn();
    QTest::keyClick(timeline, Qt::Key_End);
    const int64_t before = timeline->firstVisibleStep();
    QTest::mousePress(timeline, Qt::LeftButton, {}, QPoint(200, 150));
    QMouseEvent move(QEvent::MouseMove, QPointF(400, 150), timeline->mapToGlobal(QPointF(400, 150)), Qt::NoButton,
                     Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(timeline, &move);
    QTest::mouseRelease(timeline, Qt::LeftButton, {}, QPoint(400, 150));
    QVERIFY2(timeline->firstVisibleStep() < before, qPrintable(QString::number(timeline->firstVisibleStep())));
    QCOMPARE(timeline->selectedStep(), -1);  // a drag is not a click

    QTest::keyClick(timeline, Qt::Key_F);
    QCOMPARE(timeline->firstVisibleStep(), 0);
    QCOMPARE(timeline->lastVisibleStep(), kSteps - 1);
  }

  void timelineAggregatesManySteps() {
    gui::TimelineWidget timeline;
    timeline.resize(300, 200);
    pb::StepSeries steps;
    for (int i = 0; i < 100000; ++i) {
      steps.add_steps(i);
      steps.add_step_ms(i == 54321 ? 90.0 : 1.0);
      steps.add_execute_ms(i == 54321 ? 90.0 : 1.0);
    }
    timeline.setData(steps, {});
    timeline.show();
    QVERIFY(timeline.geometryModel().stepsPerPixel() > 100);
    // The column holding the spike reports the spike, not a calm neighbour.
    const int plotLeft = timeline.width() - 8 - static_cast<int>(timeline.geometryModel().width());
    const int x = plotLeft + static_cast<int>(timeline.geometryModel().toX(54321.5));
    QCOMPARE(timeline.stepAt(x), 54321);
    QElapsedTimer timer;
    timer.start();
    timeline.grab();
    QVERIFY2(timer.elapsed() < 2000, qPrintable(QString::number(timer.elapsed())));
  }

  void chartsPlotScalarsAndOverlayRuns() {
    gui::RunDetailView* detail = openRun(profiledId_);
    QVERIFY(detail->showTab(QStringLiteral("charts")));
    gui::ChartsView* charts = detail->charts();
    QTRY_COMPARE(charts->runCount(), 1);
    QVERIFY(charts->quantities().contains(QStringLiteral("loss")));
    QVERIFY(charts->quantities().contains(QStringLiteral("host wait (ms)")));
    QCOMPARE(charts->quantity(), QStringLiteral("loss"));  // the first scalar by default
    QCOMPARE(charts->chart()->series().size(), 1);
    auto* loss = qobject_cast<QLineSeries*>(charts->chart()->series().first());
    QCOMPARE(loss->count(), kSteps);
    QCOMPARE(loss->at(3).y(), 0.25);

    QVERIFY(charts->setQuantity(QStringLiteral("compile (ms)")));
    loss = qobject_cast<QLineSeries*>(charts->chart()->series().first());
    QCOMPARE(loss->at(gui::testing::kProfiledRecompileStep).y(), 20.0);
    QVERIFY(!charts->setQuantity(QStringLiteral("no such thing")));

    // Two runs selected: one line each, with a legend.
    detail->overlayRuns(path_, {profiledId_, secondId_});
    QTRY_COMPARE(charts->runCount(), 2);
    QCOMPARE(charts->quantity(), QStringLiteral("compile (ms)"));  // the user's choice is kept
    QCOMPARE(charts->chart()->series().size(), 2);
    QVERIFY(charts->chart()->legend()->isVisible());
    QVERIFY(charts->chart()->series()[1]->name().contains(QStringLiteral("second")));

    // Rubber-band zoom and reset.
    auto* x = charts->chart()->axes(Qt::Horizontal).first();
    const QVariant before = x->property("max");
    charts->chart()->zoomIn(QRectF(charts->chart()->plotArea().center(), QSizeF(50, 50)));
    QVERIFY(x->property("max") != before);
    charts->resetZoom();
    QCOMPARE(x->property("max"), before);
  }

  void selectingSeveralRunsOverlaysThem() {
    gui::RunDetailView* detail = openRun(profiledId_);
    QVERIFY(detail != nullptr);
    auto* table = window_->runListPage()->findChild<QTableView*>(QStringLiteral("runTable"));
    int secondRow = -1;
    for (int row = 0; row < table->model()->rowCount(); ++row) {
      if (table->model()->index(row, 0).data(gui::RunListModel::RunIdRole).toLongLong() == secondId_) secondRow = row;
    }
    QVERIFY(secondRow >= 0);
    const QRect second = table->visualRect(table->model()->index(secondRow, 1));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::ControlModifier, second.center());
    QCOMPARE(window_->runListPage()->selectedRunIds().size(), size_t{2});
    QVERIFY(detail->isOverlaying());
    QTRY_COMPARE(detail->charts()->runCount(), 2);
    QTRY_VERIFY(!detail->isProfileLoading());
    QCOMPARE(detail->charts()->runCount(), 2);  // the current run's own load does not undo the overlay

    // Back to one run: its chart alone.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, second.center());
    QVERIFY(!detail->isOverlaying());
    QTRY_COMPARE(detail->runId(), secondId_);
    QTRY_COMPARE(detail->charts()->runCount(), 1);
    QTRY_VERIFY(!detail->isProfileLoading());
    QCOMPARE(detail->charts()->chart()->series().size(), 1);
    QVERIFY(detail->charts()->chart()->series().first()->name().contains(QStringLiteral("second")));
  }

  void chartsThinLongSeriesKeepingSpikes() {
    std::vector<QPointF> points;
    for (int i = 0; i < 100000; ++i) points.emplace_back(i, i == 777 ? 50.0 : 1.0);
    const std::vector<QPointF> thin = gui::ChartsView::thin(points, 1000);
    QVERIFY(thin.size() <= 1000);
    QVERIFY(std::any_of(thin.begin(), thin.end(), [](const QPointF& p) { return p.y() == 50.0; }));
    QVERIFY(std::is_sorted(thin.begin(), thin.end(), [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); }));
    QCOMPARE(gui::ChartsView::thin({QPointF(0, 1)}, 1000).size(), size_t{1});
  }

  void fallbacksHighlightTheSourceLine() {
    gui::RunDetailView* detail = openRun(profiledId_);
    QVERIFY(detail->showTab(QStringLiteral("fallbacks")));
    gui::FallbacksView* fallbacks = detail->fallbacks();
    QTRY_COMPARE(fallbacks->model()->rowCount(), 2);
    QCOMPARE(fallbacks->highlightedLine(), 14);
    QVERIFY(fallbacks->source()->toPlainText().contains(QStringLiteral("w.nonzero()")));
    QCOMPARE(fallbacks->source()->textCursor().blockNumber(), 13);
    QVERIFY(fallbacks->sourceCaption().contains(QStringLiteral("line 14")));
    // Clicking the second row moves the highlight.
    QTableView* table = fallbacks->table();
    const QRect row = table->visualRect(table->model()->index(1, 0));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, row.center());
    QCOMPARE(fallbacks->highlightedLine(), 17);
    QVERIFY(fallbacks->selectLine(14));
    QCOMPARE(fallbacks->highlightedLine(), 14);
    const int tab = detail->tabs()->indexOf(fallbacks);
    QCOMPARE(detail->tabs()->tabText(tab), QStringLiteral("&Fallbacks (12)"));

    // A run without fallbacks says so.
    detail = openRun(fixture_->succeededId);
    QTRY_COMPARE(detail->fallbacks()->model()->rowCount(), 0);
    QTRY_VERIFY(!detail->isProfileLoading());
    QVERIFY(!detail->fallbacks()->findChild<QLabel*>(QStringLiteral("fallbacksEmpty"))->isHidden());
  }

  void metricsSearchFilters() {
    gui::RunDetailView* detail = openRun(profiledId_);
    QVERIFY(detail->showTab(QStringLiteral("metrics")));
    gui::MetricsView* metrics = detail->metrics();
    QTRY_VERIFY(metrics->model()->rowCount() > 10);
    // The fixture records no metric snapshots: the view falls back to the
    // derived report and says so.
    QVERIFY(metrics->note().contains(QStringLiteral("without snapshots")));
    QTest::keyClicks(metrics->search(), QStringLiteral("compile"));
    QCOMPARE(metrics->proxy()->rowCount(), 3);  // CachedCompile, UncachedCompile, CompileTime
    metrics->search()->clear();
    QCOMPARE(metrics->proxy()->rowCount(), metrics->model()->rowCount());
  }

  void outputShowsStreamsAndTheTraceback() {
    gui::RunDetailView* detail = openRun(profiledId_);
    QVERIFY(detail->showTab(QStringLiteral("output")));
    QTRY_VERIFY(detail->output()->outputText().contains(QStringLiteral("step 0 loss 1")));
    QVERIFY(detail->output()->outputText().contains(QStringLiteral("warning: sort falls back")));
    QVERIFY(!detail->output()->showsFailure());

    detail = openRun(fixture_->failedId);
    QTRY_VERIFY(detail->output()->showsFailure());
    QVERIFY(detail->output()->tracebackText().contains(QStringLiteral("line 42")));
  }

  void outputShowsAPrintedTracebackOnceAndExpandsTabs() {
    QCOMPARE(gui::expandTabs(QStringLiteral("a\tb\nxyzwvut\tc\t")), QStringLiteral("a       b\nxyzwvut c       "));
    gui::RunProfile profile;
    profile.runId = 7;
    profile.run.set_status(pb::RUN_STATUS_FAILED);
    profile.run.set_exit_code(1);
    const std::string error = "ValueError: bad batch";
    const std::string traceback = "Traceback (most recent call last):\n  File \"t.py\", line 3\n" + error + "\n";
    profile.run.set_error(error);
    profile.run.set_traceback(traceback);
    pb::OutputChunk* out = profile.output.add_chunks();
    out->set_stream("stdout");
    out->set_text("epoch\t1\tloss\t0.5\n");
    pb::OutputChunk* err = profile.output.add_chunks();
    err->set_stream("stderr");
    err->set_text(traceback);
    gui::OutputView view;
    view.setProfile(profile);
    QVERIFY(view.showsFailure());
    const QString banner = view.findChild<gui::MessageBanner*>(QStringLiteral("outputFailure"))->text();
    const QString shown = banner + view.tracebackText() + view.outputText();
    QCOMPARE(shown.count(QString::fromStdString(error)), 1);
    QVERIFY2(banner.contains(QStringLiteral("at the end of the output")), qPrintable(banner));
    QVERIFY(view.outputText().startsWith(QStringLiteral("epoch   1       loss    0.5")));

    // Not printed by the script: the traceback shows above the output, once.
    profile.output.mutable_chunks()->RemoveLast();
    view.setProfile(profile);
    const QString again = view.findChild<gui::MessageBanner*>(QStringLiteral("outputFailure"))->text() +
                          view.tracebackText() + view.outputText();
    QCOMPARE(again.count(QString::fromStdString(error)), 1);
  }

  void timelineShowsALanePerRank() {
    for (const int ranks : {2, 4}) {
      const QString path = dir_.filePath(QStringLiteral("ranks%1.sqlite").arg(ranks));
      const int64_t runId = recordRanks(path, ranks);
      const gui::RunProfile profile = gui::RunProfileLoader::read(storage::HistoryReader(path.toStdString()), runId);
      QCOMPARE(profile.replicaSteps.size(), size_t(ranks));
      gui::TimelineView view;
      view.resize(1000, 700);
      view.setProfile(profile);
      view.show();
      QVERIFY(QTest::qWaitForWindowExposed(&view));
      gui::TimelineWidget* timeline = view.timeline();
      QCOMPARE(timeline->laneCount(), ranks);
      QCOMPARE(timeline->stepCount(), 3 + ranks - 1);  // the columns: every rank's steps together
      for (int lane = 0; lane < ranks; ++lane) {
        QCOMPARE(timeline->laneName(lane), QStringLiteral("rank %1").arg(lane));
        QCOMPARE(timeline->laneStepCount(lane), 3 + lane);  // not rank 0's empty barrier
        // Lanes are stacked apart, each taller than a line of text.
        const QRect area = timeline->laneRect(lane);
        QVERIFY2(area.height() > timeline->fontMetrics().height() * 2, qPrintable(QString::number(area.height())));
        if (lane > 0) QVERIFY(area.top() > timeline->laneRect(lane - 1).bottom());
        QCOMPARE(timeline->laneAt(area.center().y()), lane);
      }
      // Step 2 sits in the same column of every lane; the last rank's last
      // step only in its own.
      const auto& g = timeline->geometryModel();
      const int plotLeft = timeline->laneRect(0).left();
      const int x2 = plotLeft + static_cast<int>(g.toX(2.5));
      for (int lane = 0; lane < ranks; ++lane) QCOMPARE(timeline->stepAt(x2, lane), 2);
      const int xLast = plotLeft + static_cast<int>(g.toX(ranks + 1.5));
      QCOMPARE(timeline->stepAt(xLast, ranks - 1), ranks + 1);
      QCOMPARE(timeline->stepAt(xLast, 0), -1);
      // Each lane's tooltip is its own: rank 0 waited 6 ms in collectives.
      const QString tip0 = timeline->describeStep(2, 0);
      QVERIFY2(tip0.contains(QStringLiteral("rank 0, step 2")), qPrintable(tip0));
      QVERIFY2(tip0.contains(QStringLiteral("collective wait: 6.00 ms")), qPrintable(tip0));
      QVERIFY2(tip0.contains(QStringLiteral("execute: 2.00 ms")), qPrintable(tip0));
      const QString tip1 = timeline->describeStep(2, 1);
      QVERIFY2(tip1.contains(QStringLiteral("collective wait: 1.00 ms")), qPrintable(tip1));
      QCOMPARE(timeline->describeStep(3, 0), QString());  // rank 0's step 3 ran nothing
      // The collective wait is drawn: a pixel near the top of rank 0's bar
      // (execute 2 ms, then 6 ms of collective wait, of 10 ms) has its colour.
      const QRect lane0 = timeline->laneRect(0);
      const QImage image = timeline->grab().toImage();
      const QColor collective = gui::TimelineWidget::partColor(gui::TimelineWidget::Collective, timeline->palette());
      bool found = false;
      for (int y = lane0.top(); y <= lane0.bottom() && !found; ++y) found = image.pixelColor(x2, y) == collective;
      QVERIFY(found);
      // A click in lane 1 selects its step, and the breakdown below is rank 1's.
      QSignalSpy selected(&view, &gui::TimelineView::stepSelected);
      QTest::mouseClick(timeline, Qt::LeftButton, {}, QPoint(x2, timeline->laneRect(1).center().y()));
      QCOMPARE(selected.count(), 1);
      QCOMPARE(timeline->selectedStep(), 2);
      QCOMPARE(timeline->selectedLane(), 1);
      const QString shown = view.findChild<QLabel*>(QStringLiteral("timelineSelection"))->text();
      QVERIFY2(shown.contains(QStringLiteral("rank 1, step 2")), qPrintable(shown));
    }
  }

  void exportWritesPngAndSvg() {
    gui::RunDetailView* detail = openRun(profiledId_);
    detail->showTab(QStringLiteral("timeline"));
    QTRY_COMPARE(detail->timeline()->timeline()->stepCount(), kSteps);
    const QString png = dir_.filePath(QStringLiteral("timeline.png"));
    const QString svg = dir_.filePath(QStringLiteral("chart.svg"));
    QCOMPARE(detail->timeline()->exportImage(png), QString());
    QVERIFY(QImage(png).width() > 100);
    QCOMPARE(detail->charts()->exportImage(svg), QString());
    QFile file(svg);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.readAll().contains("<svg"));
    const QString error = detail->timeline()->exportImage(dir_.filePath(QStringLiteral("timeline.bmp")));
    QVERIFY2(error.contains(QStringLiteral(".png or .svg")), qPrintable(error));
    QVERIFY(!detail->timeline()->exportImage(QStringLiteral("/nonexistent/dir/x.png")).isEmpty());
  }

  void findingsLinkToTheirEvidence() {
    QCOMPARE(gui::OverviewTab::evidenceTab("recompilation"), QStringLiteral("recompilations"));
    QCOMPARE(gui::OverviewTab::evidenceTab("cpu-fallback"), QStringLiteral("fallbacks"));
    QCOMPARE(gui::OverviewTab::evidenceTab("host-sync"), QStringLiteral("timeline"));
    QCOMPARE(gui::OverviewTab::evidenceTab("no-such-rule"), QString());

    gui::RunDetailView* detail = openRun(profiledId_);
    QVERIFY(detail->showTab(QStringLiteral("overview")));
    gui::FindingCard* fallbackCard = nullptr;
    gui::FindingCard* recompileCard = nullptr;
    for (gui::FindingCard* card : detail->overview()->findChildren<gui::FindingCard*>()) {
      auto* link = card->findChild<QLabel*>(QStringLiteral("findingEvidence"));
      if (link != nullptr && link->text().contains(QStringLiteral("Fallbacks"))) fallbackCard = card;
      if (link != nullptr && link->text().contains(QStringLiteral("Recompilations"))) recompileCard = card;
    }
    QVERIFY(fallbackCard != nullptr);
    emit fallbackCard->evidenceRequested();
    QCOMPARE(detail->tabs()->currentWidget(), detail->fallbacks());
    QVERIFY(detail->fallbacks()->highlightedLine() == 14 || detail->fallbacks()->highlightedLine() == 17);

    QVERIFY(recompileCard != nullptr);
    detail->recompilations()->selectCompile(0);
    emit recompileCard->evidenceRequested();
    QCOMPARE(detail->tabs()->currentWidget(), detail->recompilations());
    QVERIFY2(detail->recompilations()->reasonText().contains(QStringLiteral("[64, 16]")),
             qPrintable(detail->recompilations()->reasonText()));

    // A host-sync finding selects its first step in the timeline.
    pb::Finding sync;
    sync.set_rule("host-sync");
    sync.set_first_step(30);
    QMetaObject::invokeMethod(detail->overview(), "evidenceRequested", Q_ARG(lazyscope::pb::Finding, sync));
    QCOMPARE(detail->tabs()->currentWidget(), detail->timeline());
    QCOMPARE(detail->timeline()->timeline()->selectedStep(), 30);
  }

  void colorSchemeSwitchesThePalette() {
    gui::ColorScheme scheme = gui::ColorScheme::System;
    QVERIFY(gui::parseColorScheme(QStringLiteral(" Dark "), &scheme));
    QCOMPARE(scheme, gui::ColorScheme::Dark);
    QVERIFY(!gui::parseColorScheme(QStringLiteral("purple"), &scheme));

    gui::RunDetailView* detail = openRun(profiledId_);
    QVERIFY(detail != nullptr);
    gui::TimelineWidget* timeline = detail->timeline()->timeline();
    const QColor lightCompile = gui::TimelineWidget::partColor(gui::TimelineWidget::Compile, timeline->palette());
    QVERIFY(!gui::isDarkPalette(timeline->palette()));
    gui::applyColorScheme(gui::ColorScheme::Dark);
    QVERIFY(gui::isDarkPalette(QApplication::palette()));
    QTRY_VERIFY(gui::isDarkPalette(timeline->palette()));
    QVERIFY(gui::TimelineWidget::partColor(gui::TimelineWidget::Compile, timeline->palette()) != lightCompile);
    // The chart follows the palette too.
    QCOMPARE(detail->charts()->chart()->backgroundBrush().color(), timeline->palette().color(QPalette::Base));
    gui::applyColorScheme(gui::ColorScheme::System);
    QTRY_VERIFY(!gui::isDarkPalette(timeline->palette()));
    QCOMPARE(gui::currentColorScheme(), gui::ColorScheme::System);
  }

  void f1OpensTheShortcutSheet() {
    openRun(profiledId_);
    QVERIFY(!gui::ShortcutSheet::entries().empty());
    QVERIFY(window_->findChild<gui::ShortcutSheet*>() == nullptr);
    window_->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(window_.get()));
    QTest::keyClick(window_.get(), Qt::Key_F1);
    auto* sheet = window_->findChild<gui::ShortcutSheet*>();
    QVERIFY(sheet != nullptr);
    QTRY_VERIFY(sheet->isVisible());
    sheet->close();
    QTest::keyClick(window_.get(), Qt::Key_Slash, Qt::ControlModifier);
    QTRY_VERIFY(window_->findChild<gui::ShortcutSheet*>() != nullptr);
  }

  void tabsAreFoundByName() {
    gui::RunDetailView* detail = openRun(profiledId_);
    for (const char* name : {"overview", "Recompilations", "timeline", "charts", "fallbacks", "metrics", "output"}) {
      QVERIFY2(detail->showTab(QString::fromLatin1(name)), name);
    }
    QVERIFY(!detail->showTab(QStringLiteral("nope")));
  }

 private:
  // A fresh main window on the history with run `runId` shown.
  gui::RunDetailView* openRun(int64_t runId) {
    window_ = std::make_unique<gui::MainWindow>();
    window_->resize(1100, 800);
    window_->show();
    window_->openHistory(path_);
    if (!QTest::qWaitFor([this] { return window_->runListPage()->totalCount() == 5; })) return nullptr;
    window_->runListPage()->selectRun(runId);
    gui::RunDetailView* detail = window_->runDetail();
    if (!QTest::qWaitFor([detail, runId] { return detail->runId() == runId && !detail->isProfileLoading(); })) {
      return nullptr;
    }
    return detail;
  }

  QTemporaryDir dir_;
  QString path_;
  std::unique_ptr<HistoryFixture> fixture_;
  int64_t profiledId_ = 0;
  int64_t secondId_ = 0;
  std::unique_ptr<gui::MainWindow> window_;
};

QTEST_MAIN(TestRunViews)
#include "tst_run_views.moc"
