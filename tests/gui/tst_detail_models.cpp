// The models of the run detail area: the recompilations table and the
// side-by-side graph diff, under QAbstractItemModelTester, with IR as the
// engine records it; and the loader that reads a run's detail off the GUI
// thread, on a real history.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTemporaryDir>
#include <QtTest>

#include "history_fixture.h"
#include "loaders/run_detail_loader.h"
#include "models/graph_diff_model.h"
#include "models/recompilation_model.h"

using namespace lazyscope;
using lazyscope::gui::GraphDiffModel;
using lazyscope::gui::RecompilationModel;
using lazyscope::gui::RunDetail;
using lazyscope::gui::RunDetailLoader;

namespace {

pb::IrGraph graph(int64_t batch, bool extraNode = false) {
  pb::IrGraph g;
  auto add = [&g](const char* op, std::vector<int64_t> shape, std::vector<int32_t> operands) {
    pb::IrNode* node = g.add_nodes();
    node->set_id(g.nodes_size() - 1);
    node->set_op(op);
    node->set_dtype("f32");
    node->set_parameter_index(operands.empty() ? g.nodes_size() - 1 : -1);
    for (int64_t dim : shape) node->add_shape(dim);
    for (int32_t operand : operands) node->add_operands(operand);
  };
  add("device_data", {batch, 3}, {});
  add("device_data", {3, 1}, {});
  add("matmul", {batch, 1}, {0, 1});
  if (extraNode) add("relu", {batch, 1}, {2});
  return g;
}

pb::CompileEvent compile(int64_t step, double ms, pb::CompileReasonKind kind, int64_t batch) {
  pb::CompileEvent event;
  event.set_step(step);
  event.set_graph_hash(0x0123456789abcdefULL + static_cast<uint64_t>(step));
  event.set_duration_ns(static_cast<int64_t>(ms * 1e6));
  event.set_reason_kind(kind);
  event.set_reason(kind == pb::COMPILE_REASON_SHAPE ? "input 0 shape changed" : "first time");
  event.mutable_source()->set_file("/work/proj/train.py");
  event.mutable_source()->set_line(static_cast<int32_t>(10 + step));
  *event.mutable_graph() = graph(batch);
  return event;
}

}  // namespace

class TestDetailModels : public QObject {
  Q_OBJECT

 private slots:
  void recompilationRowsShowEachCompile() {
    RecompilationModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    model.setCompiles(
        {compile(0, 40, pb::COMPILE_REASON_FIRST_SIGHT, 8), compile(3, 12.5, pb::COMPILE_REASON_SHAPE, 4)});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), int(RecompilationModel::NUM_COLUMNS));
    auto cell = [&](int row, int column, int role = Qt::DisplayRole) { return model.index(row, column).data(role); };
    QCOMPARE(cell(1, RecompilationModel::Step).toLongLong(), 3);
    QCOMPARE(cell(1, RecompilationModel::Graph).toString(), QStringLiteral("0123456789ab"));
    QCOMPARE(cell(1, RecompilationModel::Nodes).toInt(), 3);
    QCOMPARE(cell(1, RecompilationModel::Duration).toString(), QStringLiteral("12.5 ms"));
    QCOMPARE(cell(1, RecompilationModel::Duration, RecompilationModel::SortRole).toDouble(), 12.5);
    QCOMPARE(cell(1, RecompilationModel::ReasonKind).toString(), QStringLiteral("shape"));
    QCOMPARE(cell(0, RecompilationModel::ReasonKind).toString(), QStringLiteral("first sight"));
    QCOMPARE(cell(1, RecompilationModel::Reason).toString(), QStringLiteral("input 0 shape changed"));
    QCOMPARE(cell(1, RecompilationModel::Source).toString(), QStringLiteral("train.py:13"));
    QCOMPARE(cell(1, RecompilationModel::Step, RecompilationModel::CompileIndexRole).toInt(), 1);

    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    proxy.setSortRole(RecompilationModel::SortRole);
    proxy.sort(RecompilationModel::Duration, Qt::AscendingOrder);
    QCOMPARE(proxy.index(0, RecompilationModel::Step).data().toLongLong(), 3);

    model.setCompiles({});
    QCOMPARE(model.rowCount(), 0);
  }

  void graphDiffMatchesNodesByPosition() {
    GraphDiffModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setGraphs(graph(8), graph(4, true));
    QCOMPARE(model.rowCount(), 4);
    auto cell = [&](int row, int column, int role = Qt::DisplayRole) { return model.index(row, column).data(role); };
    QCOMPARE(cell(0, GraphDiffModel::BeforeShape).toString(), QStringLiteral("f32[8, 3]"));
    QCOMPARE(cell(0, GraphDiffModel::AfterShape).toString(), QStringLiteral("f32[4, 3]"));
    QCOMPARE(cell(2, GraphDiffModel::AfterOp).toString(), QStringLiteral("matmul(%0, %1)"));
    QCOMPARE(cell(0, GraphDiffModel::BeforeOp).toString(), QStringLiteral("device_data  [input 0]"));
    // x's shape, the matmul's shape and the extra relu differ; w does not.
    QVERIFY(cell(0, GraphDiffModel::Position, GraphDiffModel::DiffersRole).toBool());
    QVERIFY(!cell(1, GraphDiffModel::Position, GraphDiffModel::DiffersRole).toBool());
    QVERIFY(!cell(1, GraphDiffModel::BeforeOp, Qt::BackgroundRole).isValid());
    QVERIFY(cell(0, GraphDiffModel::BeforeOp, Qt::BackgroundRole).isValid());
    QVERIFY(cell(3, GraphDiffModel::Position, GraphDiffModel::DiffersRole).toBool());
    QCOMPARE(cell(3, GraphDiffModel::BeforeOp).toString(), QString());
    QCOMPARE(model.differingCount(), 3);

    model.setGraphs(graph(8), graph(8));
    QCOMPARE(model.differingCount(), 0);
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void loaderReadsRunDetailAndDropsStaleResults() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("h.sqlite"));
    const int64_t plain = gui::testing::recordFinishedRun(path, QStringLiteral("plain"), 3);
    const int64_t reshaped = gui::testing::recordRecompilingRun(path);

    RunDetailLoader loader;
    QSignalSpy loaded(&loader, &RunDetailLoader::loaded);
    loader.load(path, plain);
    loader.load(path, reshaped);  // supersedes the first
    QTRY_COMPARE(loaded.size(), 1);
    QCoreApplication::processEvents();
    QCOMPARE(loaded.size(), 1);
    const auto detail = loaded.at(0).at(0).value<RunDetail>();
    QCOMPARE(detail.runId, reshaped);
    QCOMPARE(detail.summary.steps(), 5);
    QCOMPARE(detail.compiles.size(), size_t(2));
    QVERIFY(!detail.findings.empty());
    QCOMPARE(detail.findings.front().rule(), std::string("recompilation"));
    const pb::IrGraph* before = detail.graph(detail.compiles[1].compared_with());
    QVERIFY(before);
    QCOMPARE(before->nodes(0).shape(0), 8);

    QSignalSpy failed(&loader, &RunDetailLoader::failed);
    loader.load(path, 999);
    QTRY_COMPARE(failed.size(), 1);
  }
};

QTEST_MAIN(TestDetailModels)
#include "tst_detail_models.moc"
