// The Graphs tab: the layered layout and the scope outline as pure functions
// (on a synthetic 5,000-node graph), the graph list model under
// QAbstractItemModelTester, the viewer widget (opens a large graph collapsed,
// expands a scope, searches, shows k hops, says so when a graph is too large
// to draw) and the tab on a real history (graphs listed, IR and node details).
#include <QAbstractItemModelTester>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QSettings>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <set>

#include "history_fixture.h"
#include "models/graph_list_model.h"
#include "views/graph_layout.h"
#include "views/graph_outline.h"
#include "views/graph_scene.h"
#include "views/graph_tab.h"
#include "views/graph_viewer.h"
#include "views/op_kind.h"
#include "views/synthetic_graph.h"
#include "windows/main_window.h"
#include "windows/run_detail_view.h"
#include "windows/run_list_page.h"

using namespace lazyscope;
using namespace lazyscope::gui;

// The most edges drawn at one box (in or out).
int maxIncidentEdges(const GraphOutline& outline) {
  std::vector<int> degree(outline.items.size(), 0);
  for (auto [from, to] : outline.edges) {
    ++degree[static_cast<size_t>(from)];
    ++degree[static_cast<size_t>(to)];
  }
  return degree.empty() ? 0 : *std::max_element(degree.begin(), degree.end());
}

class TestGraphView : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("lazyscope-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_graph_view"));
    QSettings().clear();
  }

  void layoutPutsEveryOperandAboveItsUser() {
    const pb::IrGraph graph = syntheticGraph(2000);
    OutlineState state;
    state.expanded = allScopes(graph);
    const GraphOutline outline = buildOutline(graph, state);
    QCOMPARE(static_cast<int>(outline.items.size()), graph.nodes_size());
    const LayoutInput input = layoutInputFor(outline);
    const LayoutResult layout = layoutLayered(input);
    for (auto [from, to] : input.edges) QVERIFY(layout.y[from] < layout.y[to]);
    // No two boxes of a layer overlap.
    std::map<int, std::vector<std::pair<double, double>>> rows;
    for (size_t i = 0; i < input.widths.size(); ++i) {
      rows[layout.layer[i]].emplace_back(layout.x[i], layout.x[i] + input.widths[i]);
    }
    for (auto& [layer, spans] : rows) {
      std::sort(spans.begin(), spans.end());
      for (size_t i = 1; i < spans.size(); ++i) QVERIFY(spans[i].first >= spans[i - 1].second);
    }
    // Crossing reduction does better than index order.
    QVERIFY(countCrossings(input, layout) <= countCrossings(input, layoutTopological(input)));
  }

  void layoutCrossingReductionUntanglesAKnownCase() {
    // Two sources feeding two sinks the other way round: in index order the
    // edges a->d and b->c cross; a sweep swaps the sinks.
    LayoutInput input;
    input.widths = {100, 100, 100, 100};
    input.edges = {{0, 3}, {1, 2}};
    const LayoutResult reference = layoutTopological(input);
    QCOMPARE(countCrossings(input, reference), 1LL);
    QCOMPARE(countCrossings(input, layoutLayered(input)), 0LL);
  }

  void layoutToleratesCyclesBetweenScopes() {
    LayoutInput input;
    input.widths = {100, 100, 100};
    input.edges = {{0, 1}, {1, 0}, {1, 2}, {2, 2}};
    const LayoutResult layout = layoutLayered(input);
    QCOMPARE(layout.layerCount, 3);
    QVERIFY(layout.y[0] < layout.y[1]);
  }

  void opKindsFollowTheCategoryTheEngineRecorded() {
    const auto node = [](pb::OpCategory category) {
      pb::IrNode n;
      n.set_op("whatever");  // the name plays no part: the engine's category decides
      n.set_category(category);
      return n;
    };
    QCOMPARE(opKind(node(pb::OP_CATEGORY_ELEMENTWISE)), OpKind::Elementwise);
    QCOMPARE(opKind(node(pb::OP_CATEGORY_MATMUL_CONV)), OpKind::MatmulConv);
    QCOMPARE(opKind(node(pb::OP_CATEGORY_REDUCTION)), OpKind::Reduction);
    QCOMPARE(opKind(node(pb::OP_CATEGORY_LAYOUT)), OpKind::Layout);
    QCOMPARE(opKind(node(pb::OP_CATEGORY_DATA)), OpKind::Data);
    QCOMPARE(opKind(node(pb::OP_CATEGORY_INDEXING)), OpKind::Indexing);
    QCOMPARE(opKind(node(pb::OP_CATEGORY_COLLECTIVE)), OpKind::Collective);
    QCOMPARE(opKind(node(pb::OP_CATEGORY_UNSPECIFIED)), OpKind::Other);  // recorded before categories
    std::set<QRgb> colours;
    for (int k = 0; k < static_cast<int>(OpKind::NUM_KINDS); ++k) {
      colours.insert(opKindColor(static_cast<OpKind>(k)).rgb());
    }
    QCOMPARE(static_cast<int>(colours.size()), static_cast<int>(OpKind::NUM_KINDS));
  }

  void outlineFoldsScopesOneLevelAtATime() {
    const pb::IrGraph graph = syntheticGraph(5000);
    OutlineState state = initialOutlineState(graph, GraphViewer::kCollapseLimit);
    // "data", "model", "loss": three top-level scopes; the model's 333
    // layers are more boxes than the budget, so it stays one box; "data"
    // and "loss" (one and two nodes) open.
    QVERIFY(!state.expanded.contains(QStringLiteral("model")));
    GraphOutline outline = buildOutline(graph, state);
    QCOMPARE(static_cast<int>(outline.items.size()), 4);
    int members = 0;
    for (const OutlineItem& item : outline.items) members += static_cast<int>(item.members.size());
    QCOMPARE(members, graph.nodes_size());
    QCOMPARE(outline.edges.size(), size_t{3});  // data -> model -> mul -> sum

    state.expanded.insert(QStringLiteral("model"));
    outline = buildOutline(graph, state);
    QVERIFY(outline.items.size() > 100);  // one box per layer
    for (const OutlineItem& item : outline.items) {
      if (item.node < 0) QVERIFY(item.scope.count(QLatin1Char('.')) <= 1);  // "model.layerN"
    }
  }

  void hopsAroundANodeStayLocal() {
    const pb::IrGraph graph = syntheticGraph(5000);
    OutlineState state;
    state.focus = {graph.nodes_size() / 2};
    state.hops = 2;
    const GraphOutline outline = buildOutline(graph, state);
    QVERIFY(outline.items.size() > 2);
    QVERIFY(outline.items.size() < 60);
    for (const OutlineItem& item : outline.items) QVERIFY(item.node >= 0);
  }

  void graphListModelPassesTheTester() {
    GraphListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    GraphRow row;
    row.info.set_hash(0xabcdef0123456789ULL);
    row.info.set_node_count(12);
    row.info.set_compiles(2);
    row.info.set_compile_ms(3.5);
    row.info.set_executions(9);
    row.info.set_has_ir(true);
    row.source.set_file("/work/proj/train.py");
    row.source.set_line(14);
    model.setGraphs({row, row});
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.index(0, GraphListModel::Hash).data().toString(), QStringLiteral("abcdef012345"));
    QCOMPARE(model.index(0, GraphListModel::Source).data().toString(), QStringLiteral("train.py:14"));
    QCOMPARE(model.index(0, GraphListModel::Nodes).data(GraphListModel::SortRole).toInt(), 12);
    QCOMPARE(model.index(1, 0).data(GraphListModel::HashRole).toULongLong(), 0xabcdef0123456789ULL);
    model.setGraphs({});
    QCOMPARE(model.rowCount(), 0);
  }

  void viewerOpensALargeGraphCollapsedAndExpands() {
    GraphViewer viewer;
    viewer.resize(900, 600);
    viewer.show();
    auto graph = std::make_shared<const pb::IrGraph>(syntheticGraph(5000));
    viewer.setGraph(graph);
    QVERIFY(viewer.isLayingOut());
    QTRY_VERIFY(!viewer.isLayingOut());
    QCOMPARE(static_cast<int>(viewer.scene()->outline()->items.size()), 4);
    QVERIFY(viewer.message().isEmpty());

    QSignalSpy laidOut(&viewer, &GraphViewer::layoutFinished);
    viewer.expandScope(QStringLiteral("model"));
    QTRY_COMPARE(laidOut.count(), 1);
    QVERIFY(viewer.scene()->outline()->items.size() > 100);

    // Searching finds nodes inside collapsed boxes and marks those boxes.
    QVERIFY(viewer.search(QStringLiteral("softmax")) > 100);
    QCOMPARE(viewer.search(QStringLiteral("no-such-op")), 0);
    QVERIFY(viewer.search(QStringLiteral("train_big.py:25")) > 100);

    // Expand a layer fully, select a node, and show 1 hop around it.
    viewer.expandScope(QStringLiteral("model.layer3.attn"));
    QTRY_COMPARE(laidOut.count(), 2);
    int softmaxNode = -1;
    for (int v = 0; v < graph->nodes_size(); ++v) {
      if (graph->nodes(v).op() == "softmax" && graph->nodes(v).scope() == "model.layer3.attn") softmaxNode = v;
    }
    QVERIFY(softmaxNode > 0);
    QSignalSpy selected(&viewer, &GraphViewer::nodeSelected);
    viewer.selectNode(softmaxNode);
    QVERIFY(!selected.isEmpty());
    QCOMPARE(selected.last().first().toInt(), softmaxNode);
    viewer.showAroundSelection();
    QTRY_COMPARE(laidOut.count(), 3);
    QCOMPARE(viewer.state().focus, std::vector<int>{softmaxNode});
    QVERIFY(viewer.scene()->outline()->items.size() <= 12);
    QCOMPARE(viewer.scene()->selectedIndex(), viewer.scene()->outline()->itemOfNode[softmaxNode]);

    // Two changes in a row: only the last one's layout is shown.
    viewer.collapseScope(QStringLiteral("model"));
    viewer.showWholeGraph();
    QVERIFY(viewer.isLayingOut());
    QTRY_VERIFY(!viewer.isLayingOut());
    QCOMPARE(laidOut.count(), 4);
    QCOMPARE(static_cast<int>(viewer.scene()->outline()->items.size()), 4);
  }

  // A training step as the engine records it: only the forward pass has
  // module scopes. It opened as one box for the model and every backward,
  // optimizer and parameter node drawn by itself around it (1,400 boxes, the
  // model's box with hundreds of edges).
  void viewerOpensATrainingStepOneBoxPerLayer() {
    const pb::IrGraph graph = syntheticTrainingStep(1500);
    QVERIFY(graph.nodes_size() >= 1400 && graph.nodes_size() <= 1800);
    GraphViewer viewer;
    viewer.resize(1200, 800);
    viewer.show();
    viewer.setGraph(std::make_shared<const pb::IrGraph>(graph));
    QTRY_VERIFY(!viewer.isLayingOut());
    const GraphOutline& outline = *viewer.scene()->outline();
    const int visible = static_cast<int>(outline.items.size());
    QVERIFY2(visible >= 20 && visible <= 200, qPrintable(QString::number(visible)));
    QVERIFY2(maxIncidentEdges(outline) <= 45, qPrintable(QString::number(maxIncidentEdges(outline))));
    // One box per layer of the forward pass, and one per layer of the backward pass.
    std::set<std::string> layerScopes;
    for (const pb::IrNode& node : graph.nodes()) {
      if (node.scope().ends_with(".mlp")) layerScopes.insert(node.scope());
    }
    const int layers = static_cast<int>(layerScopes.size());
    QVERIFY(layers >= 8);
    int backwardBoxes = 0;
    for (int layer = 0; layer < layers; ++layer) {
      const QString forward = QStringLiteral("Model.layers.%1").arg(layer);
      const QString backward = QStringLiteral("train_big:41.Model.layers.%1").arg(layer);
      const auto boxOf = [&](const QString& scope) {
        return std::count_if(outline.items.begin(), outline.items.end(), [&](const OutlineItem& item) {
          return item.node < 0 && (item.scope == scope || item.scope.startsWith(scope + QLatin1Char('.')));
        });
      };
      QVERIFY2(boxOf(forward) >= 1, qPrintable(forward));
      for (const OutlineItem& item : outline.items) {
        // A backward box reads as its module and the line: "Model.layers.2.attn", "12 nodes · line 41".
        if (item.node < 0 && item.scope == backward + QStringLiteral(".attn")) {
          ++backwardBoxes;
          QCOMPARE(item.title, forward + QStringLiteral(".attn"));
          QVERIFY2(item.subtitle.endsWith(QStringLiteral("nodes · line 41")), qPrintable(item.subtitle));
          QVERIFY2(item.tooltip.contains(QStringLiteral("traced at train_big:41")), qPrintable(item.tooltip));
        }
      }
      QVERIFY2(boxOf(backward) >= 1, qPrintable(backward));
    }
    // Edges out of the forward pass run down the drawing: every group comes
    // after what it reads, the loss (whose scale is an early graph input,
    // its first node) included. (Groups of the backward pass may form
    // cycles; the layout turns those edges round.)
    for (auto [from, to] : outline.edges) {
      if (!outline.items[from].scope.startsWith(QStringLiteral("Model."))) continue;
      QVERIFY2(from < to, qPrintable(outline.items[from].scope + QStringLiteral(" -> ") + outline.items[to].scope));
    }
    QVERIFY(backwardBoxes >= layers - 1);
    // Every parameter sits in a box with its layer, none drawn alone.
    for (const OutlineItem& item : outline.items) {
      if (item.node >= 0) QVERIFY(graph.nodes(item.node).op() != "device_data");
    }

    // A layer expanded: its internals connect to their neighbours, not all
    // to one box.
    QSignalSpy laidOut(&viewer, &GraphViewer::layoutFinished);
    viewer.expandScope(QStringLiteral("Model.layers.2.attn"));
    QTRY_COMPARE(laidOut.count(), 1);
    const GraphOutline& expanded = *viewer.scene()->outline();
    QVERIFY(expanded.items.size() > outline.items.size());
    QVERIFY2(maxIncidentEdges(expanded) <= 45, qPrintable(QString::number(maxIncidentEdges(expanded))));
  }

  void groupPathsPlaceUnscopedOpsByLineAndModule() {
    const pb::IrGraph graph = syntheticTrainingStep(1500);
    const std::vector<QString> paths = groupPaths(graph);
    QCOMPARE(static_cast<int>(paths.size()), graph.nodes_size());
    for (int v = 0; v < graph.nodes_size(); ++v) {
      const pb::IrNode& node = graph.nodes(v);
      if (!node.scope().empty()) {
        QCOMPARE(paths[v], QString::fromStdString(node.scope()));
      } else if (node.operands_size() > 0) {
        // The line that traced it, then the module it belongs to: the
        // backward and the update of a layer, even an Adam moment of graph
        // inputs alone whose update is an output no op reads.
        QVERIFY2(paths[v].startsWith(QStringLiteral("train_big:%1.Model.layers.").arg(node.source().line())) ||
                     node.source().line() == 40,  // the loss: no layer's
                 qPrintable(QStringLiteral("%%1 %2: %3").arg(v).arg(QString::fromStdString(node.op()), paths[v])));
      } else {
        QVERIFY(!paths[v].isEmpty());
      }
    }
  }

  void viewerExportsTheWholeGraph() {
    GraphViewer viewer;
    viewer.resize(400, 300);  // far smaller than the graph: export must not crop to the view
    viewer.show();
    QTemporaryDir dir;
    // Nothing drawn yet: a message, not an empty file.
    QVERIFY(!viewer.exportImage(dir.filePath(QStringLiteral("none.png"))).isEmpty());
    QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("none.png"))));
    viewer.setGraph(std::make_shared<const pb::IrGraph>(syntheticGraph(300)));
    QTRY_VERIFY(!viewer.isLayingOut());
    viewer.expandAll();
    QTRY_VERIFY(!viewer.isLayingOut());
    const QRectF bounds = viewer.scene()->itemsBoundingRect();
    QVERIFY(bounds.width() > 400 || bounds.height() > 300);

    const QString png = dir.filePath(QStringLiteral("graph.png"));
    QCOMPARE(viewer.exportImage(png), QString());
    const QImage image(png);
    QVERIFY(image.width() >= qMin(16384.0, bounds.width()) - 1);
    QVERIFY(image.height() >= qMin(16384.0, bounds.height()) - 1);

    const QString svg = dir.filePath(QStringLiteral("graph.svg"));
    QCOMPARE(viewer.exportImage(svg), QString());
    QFile file(svg);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray text = file.readAll();
    QVERIFY(text.contains("<svg"));
    QVERIFY(text.contains("softmax"));  // node labels are text in the SVG, not pixels

    const QString error = viewer.exportImage(dir.filePath(QStringLiteral("graph.jpg")));
    QVERIFY2(error.contains(QStringLiteral(".png or .svg")), qPrintable(error));
    QVERIFY(viewer.findChild<QWidget*>(QStringLiteral("graphExport")) != nullptr);
  }

  void viewerSaysWhenAGraphIsTooLargeToDraw() {
    GraphViewer viewer;
    viewer.show();
    // 8,000 nodes and no scope to fold them into.
    viewer.setGraph(std::make_shared<const pb::IrGraph>(syntheticGraph(8000, false)));
    QTRY_VERIFY(!viewer.isLayingOut());
    // It opens folded by source line; everything expanded is too much.
    QVERIFY(viewer.message().isEmpty());
    QVERIFY(viewer.scene()->outline()->items.size() < 100);
    viewer.expandAll();
    QTRY_VERIFY(!viewer.isLayingOut());
    QVERIFY2(viewer.message().contains(QStringLiteral("8")), qPrintable(viewer.message()));
    QVERIFY(!viewer.message().isEmpty());
    QVERIFY(viewer.scene()->outline()->items.size() < 100);
  }

  void graphsTabShowsTheRunsGraphs() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("history.sqlite"));
    const int64_t runId = testing::recordRecompilingRun(path);
    MainWindow window;
    window.show();
    window.openHistory(path);
    QTRY_COMPARE(window.runListPage()->totalCount(), 1);
    QVERIFY(window.runListPage()->selectRun(runId));
    GraphTab* tab = window.runDetail()->graphs();
    window.runDetail()->tabs()->setCurrentWidget(tab);
    QTRY_COMPARE(tab->model()->rowCount(), 2);
    QTRY_VERIFY(tab->irText().contains(QStringLiteral("matmul(%0, %1)")));
    QTRY_VERIFY(!tab->isLoading());
    QVERIFY(tab->irText().contains(QStringLiteral("at train_shapes.py:6")));
    QCOMPARE(tab->model()->index(0, GraphListModel::Source).data().toString(), QStringLiteral("train_shapes.py:7"));

    tab->viewer()->selectNode(2);
    QVERIFY2(tab->detailsText().contains(QStringLiteral("/work/proj/train_shapes.py:6")),
             qPrintable(tab->detailsText()));
    QVERIFY(tab->detailsText().contains(QStringLiteral("matmul")));

    QVERIFY(tab->selectGraph(testing::kGraphB));
    QTRY_VERIFY(tab->irText().contains(QStringLiteral("f32[4, 3]")));
  }
};

QTEST_MAIN(TestGraphView)
#include "tst_graph_view.moc"
