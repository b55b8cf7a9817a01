// RunListModel over runs read back from a real history: structure (checked
// by QAbstractItemModelTester), cell values against what the fixture wrote,
// raw sort values, and status colours that read on light and dark palettes.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QHeaderView>
#include <QImage>
#include <QPainter>
#include <QSortFilterProxyModel>
#include <QStyleOptionHeader>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>

#include "history_fixture.h"
#include "models/run_list_model.h"
#include "query/history_reader.h"
#include "util/format.h"
#include "util/run_status.h"
#include "widgets/sort_arrow_style.h"

using lazyscope::gui::RunListModel;
using lazyscope::gui::testing::HistoryFixture;
namespace pb = lazyscope::pb;

namespace {

// WCAG 2 contrast ratio of two colours.
double contrast(const QColor& a, const QColor& b) {
  auto luminance = [](const QColor& c) {
    auto channel = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
  };
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QPalette paletteWithBase(const QColor& base, const QColor& text) {
  QPalette palette;
  palette.setColor(QPalette::Base, base);
  palette.setColor(QPalette::Text, text);
  return palette;
}

}  // namespace

class TestRunListModel : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void passesModelTester();
  void passesModelTesterThroughProxy();
  void showsWhatWasRecorded();
  void sortRoleGivesRawNumbers();
  void proxySortsNumerically();
  void statusColoursReadOnLightAndDark();
  void formatsDurations();
  void resetToEmpty();
  void axesTickAtRoundNumbers();
  void sortArrowPointsTheWayValuesGo();

 private:
  int rowOf(const RunListModel& model, int64_t id) const;
  QVariant cell(const RunListModel& model, int64_t id, int column, int role = Qt::DisplayRole) const;

  QTemporaryDir dir_;
  std::unique_ptr<HistoryFixture> fixture_;
  std::vector<pb::RunSummary> runs_;
};

void TestRunListModel::initTestCase() {
  QVERIFY(dir_.isValid());
  fixture_ = std::make_unique<HistoryFixture>(dir_.filePath(QStringLiteral("history.sqlite")));
  runs_ = lazyscope::storage::HistoryReader(fixture_->path().toStdString()).list_runs();
  QCOMPARE(runs_.size(), size_t{3});
}

int TestRunListModel::rowOf(const RunListModel& model, int64_t id) const {
  for (int row = 0; row < model.rowCount(); ++row) {
    if (model.index(row, 0).data(RunListModel::RunIdRole).toLongLong() == id) return row;
  }
  return -1;
}

QVariant TestRunListModel::cell(const RunListModel& model, int64_t id, int column, int role) const {
  const int row = rowOf(model, id);
  if (row < 0) return {};
  return model.index(row, column).data(role);
}

void TestRunListModel::passesModelTester() {
  RunListModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRuns(runs_);
  QCOMPARE(model.rowCount(), 3);
  QCOMPARE(model.columnCount(), int(RunListModel::NUM_COLUMNS));
  model.setRuns({});
  model.setRuns(runs_);
}

void TestRunListModel::passesModelTesterThroughProxy() {
  RunListModel model;
  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(RunListModel::SortRole);
  proxy.setFilterKeyColumn(-1);
  proxy.setFilterCaseSensitivity(Qt::CaseInsensitive);
  QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setRuns(runs_);
  for (int column = 0; column < RunListModel::NUM_COLUMNS; ++column) {
    proxy.sort(column, Qt::AscendingOrder);
    proxy.sort(column, Qt::DescendingOrder);
  }
  proxy.setFilterFixedString(QStringLiteral("fail"));
  QCOMPARE(proxy.rowCount(), 1);
  QCOMPARE(proxy.index(0, 0).data(RunListModel::RunIdRole).toLongLong(), fixture_->failedId);
  proxy.setFilterFixedString(QString());
  QCOMPARE(proxy.rowCount(), 3);
  model.setRuns({});
  QCOMPARE(proxy.rowCount(), 0);
}

void TestRunListModel::showsWhatWasRecorded() {
  RunListModel model;
  model.setRuns(runs_);
  const int64_t ok = fixture_->succeededId, bad = fixture_->failedId, live = fixture_->runningId;
  QVERIFY(rowOf(model, ok) >= 0 && rowOf(model, bad) >= 0 && rowOf(model, live) >= 0);

  QCOMPARE(cell(model, ok, RunListModel::Id).toLongLong(), ok);
  QCOMPARE(cell(model, ok, RunListModel::Name).toString(), QStringLiteral("baseline"));
  QCOMPARE(cell(model, ok, RunListModel::Script).toString(), QStringLiteral("train_mlp.py"));
  QCOMPARE(cell(model, ok, RunListModel::Script, Qt::ToolTipRole).toString(),
           QStringLiteral("/work/proj/train_mlp.py"));

  QCOMPARE(cell(model, ok, RunListModel::Status).toString(), QStringLiteral("succeeded"));
  QCOMPARE(cell(model, bad, RunListModel::Status).toString(), QStringLiteral("failed"));
  QCOMPARE(cell(model, live, RunListModel::Status).toString(), QStringLiteral("running"));
  QVERIFY(cell(model, bad, RunListModel::Status, Qt::ToolTipRole)
              .toString()
              .contains(QStringLiteral("mat1 and mat2 shapes cannot be multiplied")));

  QCOMPARE(cell(model, ok, RunListModel::Steps).toLongLong(), 5);
  QCOMPARE(cell(model, ok, RunListModel::Compiles).toLongLong(), 1);
  QCOMPARE(cell(model, ok, RunListModel::CacheHits).toLongLong(), 4);
  QCOMPARE(cell(model, ok, RunListModel::MedianStep).toString(), QStringLiteral("12.0 ms"));
  QCOMPARE(cell(model, ok, RunListModel::LastLoss).toString(), QStringLiteral("0.4"));  // 2 / 5, the last step's
  QCOMPARE(cell(model, ok, RunListModel::LastLoss, RunListModel::SortRole).toDouble(), 0.4);
  QCOMPARE(cell(model, bad, RunListModel::LastLoss).toString(), QStringLiteral("—"));  // logged none
  QCOMPARE(cell(model, ok, RunListModel::Fallbacks).toLongLong(), 0);
  QCOMPARE(cell(model, bad, RunListModel::Tags).toString(), QStringLiteral("cnn, bs64"));
  QCOMPARE(cell(model, ok, RunListModel::Tags).toString(), QString());
  QCOMPARE(cell(model, bad, RunListModel::Steps).toLongLong(), 2);
  QCOMPARE(cell(model, bad, RunListModel::Compiles).toLongLong(), 1);
  QCOMPARE(cell(model, live, RunListModel::Steps).toLongLong(), 3);

  // The finished run started an hour before it finished; the live one 5 s
  // before the fixture was written, and its duration is the time so far.
  QCOMPARE(cell(model, ok, RunListModel::Duration).toString(), QStringLiteral("1 h 00 min"));
  const double liveMs = cell(model, live, RunListModel::Duration, RunListModel::SortRole).toDouble();
  QVERIFY2(liveMs >= 5000.0 && liveMs < 65'000.0, qPrintable(QString::number(liveMs)));
  QVERIFY(cell(model, live, RunListModel::Duration, Qt::ToolTipRole).toString().contains(QStringLiteral("so far")));
  QVERIFY(!cell(model, ok, RunListModel::Started).toString().isEmpty());

  // Only the status column is coloured.
  QVERIFY(cell(model, ok, RunListModel::Status, Qt::ForegroundRole).value<QColor>().isValid());
  QVERIFY(!cell(model, ok, RunListModel::Name, Qt::ForegroundRole).isValid());
  QCOMPARE(cell(model, bad, RunListModel::Status, RunListModel::StatusRole).toInt(), int(pb::RUN_STATUS_FAILED));
}

void TestRunListModel::sortRoleGivesRawNumbers() {
  RunListModel model;
  model.setRuns(runs_);
  const int64_t ok = fixture_->succeededId;
  const QVariant steps = cell(model, ok, RunListModel::Steps, RunListModel::SortRole);
  QCOMPARE(steps.typeId(), QMetaType::LongLong);
  QCOMPARE(steps.toLongLong(), 5);
  const QVariant median = cell(model, ok, RunListModel::MedianStep, RunListModel::SortRole);
  QCOMPARE(median.typeId(), QMetaType::Double);
  QCOMPARE(median.toDouble(), 12.0);
  QCOMPARE(cell(model, ok, RunListModel::Started, RunListModel::SortRole).typeId(), QMetaType::LongLong);
  QVERIFY(cell(model, ok, RunListModel::Duration, RunListModel::SortRole).toDouble() >= 0.0);
  QVERIFY(cell(model, fixture_->succeededId, RunListModel::Duration, RunListModel::SortRole).toDouble() >= 3'600'000.0);
  std::vector<pb::RunSummary> unknown(1);  // no times at all
  model.setRuns(unknown);
  QCOMPARE(model.index(0, RunListModel::Duration).data().toString(), QStringLiteral("—"));
  QVERIFY(model.index(0, RunListModel::Duration).data(RunListModel::SortRole).toDouble() < 0.0);
  QCOMPARE(model.index(0, RunListModel::Status).data().toString(), QStringLiteral("unknown"));
}

void TestRunListModel::proxySortsNumerically() {
  // 5 > 3 > 2 steps; compared as text "5" > "3" > "2" too, so also check ids
  // against a column where text order and numeric order differ.
  RunListModel model;
  QSortFilterProxyModel proxy;
  proxy.setSourceModel(&model);
  proxy.setSortRole(RunListModel::SortRole);
  model.setRuns(runs_);
  proxy.sort(RunListModel::Steps, Qt::DescendingOrder);
  QCOMPARE(proxy.index(0, 0).data(RunListModel::RunIdRole).toLongLong(), fixture_->succeededId);
  QCOMPARE(proxy.index(2, 0).data(RunListModel::RunIdRole).toLongLong(), fixture_->failedId);

  std::vector<pb::RunSummary> runs = runs_;
  runs[0].set_steps(9);
  runs[1].set_steps(10);
  runs[2].set_steps(100);
  model.setRuns(runs);
  proxy.sort(RunListModel::Steps, Qt::AscendingOrder);
  QCOMPARE(proxy.index(0, RunListModel::Steps).data().toLongLong(), 9);
  QCOMPARE(proxy.index(1, RunListModel::Steps).data().toLongLong(), 10);
  QCOMPARE(proxy.index(2, RunListModel::Steps).data().toLongLong(), 100);
}

void TestRunListModel::statusColoursReadOnLightAndDark() {
  const QPalette light = paletteWithBase(Qt::white, Qt::black);
  const QPalette dark = paletteWithBase(QColor(0x2b, 0x2b, 0x2b), QColor(0xee, 0xee, 0xee));
  QVERIFY(!lazyscope::gui::isDarkPalette(light));
  QVERIFY(lazyscope::gui::isDarkPalette(dark));
  for (pb::RunStatus status : {pb::RUN_STATUS_RUNNING, pb::RUN_STATUS_SUCCEEDED, pb::RUN_STATUS_FAILED,
                               pb::RUN_STATUS_INTERRUPTED, pb::RUN_STATUS_CRASHED}) {
    const QColor onLight = lazyscope::gui::statusColor(status, light);
    const QColor onDark = lazyscope::gui::statusColor(status, dark);
    const QByteArray what = lazyscope::gui::statusText(status).toUtf8();
    QVERIFY2(contrast(onLight, Qt::white) >= 4.5, what.constData());
    QVERIFY2(contrast(onDark, QColor(0x2b, 0x2b, 0x2b)) >= 4.5, what.constData());
  }
  QCOMPARE(lazyscope::gui::statusText(pb::RUN_STATUS_INTERRUPTED), QStringLiteral("interrupted"));
  QCOMPARE(lazyscope::gui::statusText(pb::RUN_STATUS_CRASHED), QStringLiteral("crashed"));
}

void TestRunListModel::formatsDurations() {
  using lazyscope::gui::formatDuration;
  using lazyscope::gui::formatStepTime;
  QCOMPARE(formatDuration(850), QStringLiteral("850 ms"));
  QCOMPARE(formatDuration(4321), QStringLiteral("4.32 s"));
  QCOMPARE(formatDuration(12345), QStringLiteral("12.3 s"));
  QCOMPARE(formatDuration(245'000), QStringLiteral("4 min 05 s"));
  QCOMPARE(formatDuration(7'620'000), QStringLiteral("2 h 07 min"));
  QCOMPARE(formatStepTime(0.4123), QStringLiteral("0.412 ms"));
  QCOMPARE(formatStepTime(3.4167), QStringLiteral("3.42 ms"));
  QCOMPARE(formatStepTime(42.14), QStringLiteral("42.1 ms"));
  QCOMPARE(formatStepTime(512.4), QStringLiteral("512 ms"));
  QCOMPARE(formatStepTime(1234.0), QStringLiteral("1.23 s"));
  // Sub-0.1 ms times keep three digits in microseconds (they read "0.000 ms").
  QCOMPARE(formatStepTime(0.023), QStringLiteral("23.0 µs"));
  QCOMPARE(formatStepTime(0.0021), QStringLiteral("2.10 µs"));
  QCOMPARE(formatStepTime(0.0004), QStringLiteral("0.400 µs"));
  QCOMPARE(formatStepTime(0.0), QStringLiteral("0 ms"));
}

void TestRunListModel::resetToEmpty() {
  RunListModel model;
  model.setRuns(runs_);
  QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
  model.setRuns({});
  QCOMPARE(reset.count(), 1);
  QCOMPARE(model.rowCount(), 0);
  QVERIFY(!model.index(0, 0).isValid());
}

void TestRunListModel::axesTickAtRoundNumbers() {
  using lazyscope::gui::niceAxis;
  // A 13 ms step no longer gives labels at 4.33 and 8.67 ms.
  QCOMPARE(niceAxis(13.0, 3).interval, 5.0);
  QCOMPARE(niceAxis(13.0, 3).top, 15.0);
  QCOMPARE(niceAxis(0.37, 4).interval, 0.1);
  QCOMPARE(niceAxis(0.37, 4).top, 0.4);
  QCOMPARE(niceAxis(20.0, 4).top, 20.0);  // already round: not pushed up
  QCOMPARE(niceAxis(0.0, 4).top, 1.0);
  for (double max : {0.013, 1.7, 8.67, 99.0, 1234.5}) {
    const auto axis = niceAxis(max, 3);
    QVERIFY(axis.top >= max);
    const double ticks = axis.top / axis.interval;
    QCOMPARE(std::round(ticks), ticks);  // the top is a tick
    const double mantissa = axis.interval / std::pow(10.0, std::floor(std::log10(axis.interval)));
    QVERIFY2(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9,
             qPrintable(QString::number(axis.interval)));
  }
}

void TestRunListModel::sortArrowPointsTheWayValuesGo() {
  // The run list sorted newest first (descending) draws what the
  // application's style draws for "down", and the other way round.
  QHeaderView header(Qt::Horizontal);
  auto* style = new lazyscope::gui::SortArrowStyle(&header);
  const auto draw = [&](const QStyle* with, QStyleOptionHeader::SortIndicator indicator) {
    QImage image(16, 16, QImage::Format_ARGB32);
    image.fill(Qt::white);
    QPainter painter(&image);
    QStyleOptionHeader option;
    option.rect = image.rect();
    option.sortIndicator = indicator;
    with->drawPrimitive(QStyle::PE_IndicatorHeaderArrow, &option, &painter, nullptr);
    return image;
  };
  const QStyle* plain = QApplication::style();
  QVERIFY(draw(plain, QStyleOptionHeader::SortUp) != draw(plain, QStyleOptionHeader::SortDown));
  QCOMPARE(draw(style, QStyleOptionHeader::SortUp), draw(plain, QStyleOptionHeader::SortDown));
  QCOMPARE(draw(style, QStyleOptionHeader::SortDown), draw(plain, QStyleOptionHeader::SortUp));
}

QTEST_MAIN(TestRunListModel)
#include "tst_run_list_model.moc"
