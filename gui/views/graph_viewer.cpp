#include "views/graph_viewer.h"

#include "util/image_export.h"

#include <QCache>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "loaders/background_job.h"
#include "views/graph_canvas.h"
#include "views/graph_layout.h"
#include "views/graph_scene.h"

namespace lazyscope::gui {

struct LaidOutGraph {
  std::shared_ptr<const GraphOutline> outline;
  LayoutResult layout;
  bool tooLarge = false;  // the whole graph had too many boxes: this is around its outputs
};

namespace {

constexpr int kOutputHops = 3;

// Layouts by outline key, across graphs and runs: going back to a graph (or
// collapsing what was just expanded) is instant. The cost is the box count.
QCache<QString, std::shared_ptr<const LaidOutGraph>>& layoutCache() {
  static QCache<QString, std::shared_ptr<const LaidOutGraph>> cache(200'000);
  return cache;
}

// Runs on a pool thread: touches nothing but its arguments.
// With `control` stopped (Cancel, or a newer layout) it gives up early; the
// result is then dropped unseen.
std::shared_ptr<const LaidOutGraph> layOut(std::shared_ptr<const pb::IrGraph> graph, OutlineState state,
                                           JobControl* control) {
  auto laid = std::make_shared<LaidOutGraph>();
  auto outline = std::make_shared<GraphOutline>(buildOutline(*graph, state));
  if (static_cast<int>(outline->items.size()) > GraphViewer::kDrawLimit && state.focus.empty()) {
    state.focus.assign(graph->outputs().begin(), graph->outputs().end());
    if (state.focus.empty()) state.focus.push_back(graph->nodes_size() - 1);
    state.hops = kOutputHops;
    outline = std::make_shared<GraphOutline>(buildOutline(*graph, state));
    laid->tooLarge = true;
  }
  if (control->stopped()) return laid;
  laid->layout = layoutLayered(layoutInputFor(*outline), control);
  laid->outline = std::move(outline);
  return laid;
}

bool nodeMatches(const pb::IrNode& node, const QString& text) {
  const auto has = [&](const std::string& field) {
    return QString::fromStdString(field).contains(text, Qt::CaseInsensitive);
  };
  if (has(node.op()) || has(node.scope())) return true;
  if (node.source().file().empty()) return false;
  const QString source =
      QStringLiteral("%1:%2").arg(QString::fromStdString(node.source().file())).arg(node.source().line());
  return source.contains(text, Qt::CaseInsensitive);
}

}  // namespace

GraphViewer::GraphViewer(QWidget* parent)
    : QWidget(parent),
      layoutJob_(new BackgroundJob(this)),
      scene_(new GraphScene(this)),
      canvas_(new GraphCanvas(this)) {
  connect(layoutJob_, &BackgroundJob::cancelled, this, &GraphViewer::onLayoutCancelled);
  canvas_->setScene(scene_);
  message_ = new QLabel(this);
  message_->setObjectName(QStringLiteral("graphMessage"));
  message_->setWordWrap(true);
  message_->setTextFormat(Qt::PlainText);
  message_->hide();

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(4);
  layout->addWidget(createToolbar());
  layout->addWidget(message_);
  reload_ = new QPushButton(tr("Reload"), this);
  reload_->setObjectName(QStringLiteral("graphReload"));
  reload_->setToolTip(tr("Lay out this graph again"));
  reload_->hide();
  connect(reload_, &QPushButton::clicked, this, [this] { relayout(); });
  layout->addWidget(reload_, 0, Qt::AlignLeft);
  layout->addWidget(canvas_, 1);
  layout->addWidget(createLegend());

  connect(scene_, &QGraphicsScene::selectionChanged, this, &GraphViewer::onSelectionChanged);
  connect(canvas_, &GraphCanvas::itemActivated, this, [this](int index) {
    const GraphOutline* outline = scene_->outline();
    if (outline == nullptr) return;
    const OutlineItem& item = outline->items[index];
    if (item.node < 0) expandScope(item.scope);
  });
  connect(canvas_, &GraphCanvas::itemMenuRequested, this, &GraphViewer::showItemMenu);
}

GraphViewer::~GraphViewer() { scene_->blockSignals(true); }

QWidget* GraphViewer::createToolbar() {
  auto* bar = new QWidget(this);
  search_ = new QLineEdit(bar);
  search_->setObjectName(QStringLiteral("graphSearch"));
  search_->setPlaceholderText(tr("Find op, scope or file:line (Enter: next)"));
  search_->setClearButtonEnabled(true);
  search_->setMinimumWidth(120);
  connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) { search(text); });
  connect(search_, &QLineEdit::returnPressed, this, &GraphViewer::nextMatch);
  matchLabel_ = new QLabel(bar);
  matchLabel_->setObjectName(QStringLiteral("graphMatchLabel"));

  const auto button = [bar](const QString& text, const QString& tip) {
    auto* b = new QToolButton(bar);
    b->setText(text);
    b->setToolTip(tip);
    b->setAutoRaise(true);
    return b;
  };
  QToolButton* expand = button(tr("Expand all"), tr("Show every node of every scope"));
  QToolButton* collapse = button(tr("Collapse all"), tr("Fold each top-level scope into one box"));
  connect(expand, &QToolButton::clicked, this, &GraphViewer::expandAll);
  connect(collapse, &QToolButton::clicked, this, &GraphViewer::collapseAll);
  hops_ = new QSpinBox(bar);
  hops_->setRange(1, 20);
  hops_->setValue(2);
  hops_->setSuffix(tr(" hops"));
  hops_->setToolTip(tr("How far from the selection to show"));
  around_ = button(tr("Around selection"), tr("Show only the nodes within this many edges of the selection"));
  around_->setObjectName(QStringLiteral("graphAroundSelection"));
  whole_ = button(tr("Whole graph"), tr("Show the whole graph again"));
  connect(around_, &QToolButton::clicked, this, &GraphViewer::showAroundSelection);
  connect(whole_, &QToolButton::clicked, this, &GraphViewer::showWholeGraph);
  QToolButton* fit = button(tr("Fit"), tr("Fit the graph in the view (F); wheel or +/− to zoom, drag to pan"));
  connect(fit, &QToolButton::clicked, canvas_, &GraphCanvas::fitReadable);
  QToolButton* exportButton = button(tr("Export…"), tr("Save the whole graph as drawn (PNG or SVG)"));
  exportButton->setObjectName(QStringLiteral("graphExport"));
  connect(exportButton, &QToolButton::clicked, this, [this] {
    const QString path = askImagePath(this, QStringLiteral("graph"));
    if (path.isEmpty()) return;
    const QString error = exportImage(path);
    if (!error.isEmpty()) QMessageBox::warning(this, tr("Export"), error);
  });
  status_ = new QLabel(bar);
  status_->setObjectName(QStringLiteral("graphStatus"));
  status_->setForegroundRole(QPalette::PlaceholderText);

  // Narrow windows clip the toolbar and legend rather than forcing the
  // whole main window wider than the screen.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  bar->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* row = new QHBoxLayout(bar);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(search_, 2);
  row->addWidget(matchLabel_);
  row->addWidget(expand);
  row->addWidget(collapse);
  row->addWidget(hops_);
  row->addWidget(around_);
  row->addWidget(whole_);
  row->addWidget(fit);
  row->addWidget(exportButton);
  row->addWidget(status_, 1);
  return bar;
}

QWidget* GraphViewer::createLegend() {
  auto* legend = new QWidget(this);
  legend->setObjectName(QStringLiteral("graphLegend"));
  auto* row = new QHBoxLayout(legend);
  row->setContentsMargins(0, 0, 0, 0);
  row->setSpacing(10);
  for (int k = 0; k < static_cast<int>(OpKind::NUM_KINDS); ++k) {
    const auto kind = static_cast<OpKind>(k);
    auto* swatch = new QLabel(legend);
    swatch->setFixedSize(14, 14);
    swatch->setStyleSheet(QStringLiteral("background:%1; border:1px solid #505050;").arg(opKindColor(kind).name()));
    row->addWidget(swatch);
    row->addWidget(new QLabel(opKindName(kind), legend));
  }
  // Short enough to fit beside the legend when the details pane is open
  // (the long form was cut off at 1280 px); the how-to is in the tooltip.
  auto* hint = new QLabel(tr("dashed: collapsed scope"), legend);
  hint->setToolTip(
      tr("A dashed box is a collapsed module scope: double-click it to expand it; right-click a "
         "node to collapse its scope."));
  hint->setForegroundRole(QPalette::PlaceholderText);
  row->addSpacing(12);
  row->addWidget(hint, 1);
  hint->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  legend->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  return legend;
}

void GraphViewer::setGraph(std::shared_ptr<const pb::IrGraph> graph) {
  graph_ = std::move(graph);
  matches_.clear();
  matchCursor_ = -1;
  if (!graph_) {
    clear();
    return;
  }
  state_ = initialOutlineState(*graph_, kCollapseLimit, kOpenBudget);
  relayout();
}

void GraphViewer::clear() {
  layoutJob_->cancel();
  graph_.reset();
  scene_->clearGraph();
  status_->clear();
  message_->hide();
  reload_->hide();
  matchLabel_->clear();
}

bool GraphViewer::isLayingOut() const { return layoutJob_->isRunning(); }

QString GraphViewer::message() const { return message_->isVisible() ? message_->text() : QString(); }

void GraphViewer::relayout(int focusNode) {
  if (!graph_) return;
  reload_->hide();
  if (message_->property("cancelled").toBool()) message_->hide();
  const QString key = outlineKey(*graph_, state_);
  const QString label = tr("Laying out %1 nodes…").arg(graph_->nodes_size());
  if (const auto* cached = layoutCache().object(key)) {
    // Through the job too, so that a cached layout is delivered from the
    // event loop and supersedes a layout under way, as a computed one does.
    layoutJob_->run(
        label, [laid = *cached] { return laid; },
        [this, focusNode](const std::shared_ptr<const LaidOutGraph>& laid) { onLaidOut(laid, focusNode); });
    return;
  }
  status_->setText(label);
  layoutJob_->run(
      label, [graph = graph_, state = state_](JobControl& control) { return layOut(graph, state, &control); },
      [this, key, focusNode](const std::shared_ptr<const LaidOutGraph>& laid) {
        // Only a finished layout reaches here (a stopped one is dropped).
        layoutCache().insert(key, new std::shared_ptr<const LaidOutGraph>(laid),
                             static_cast<qsizetype>(laid->outline->items.size()) + 1);
        onLaidOut(laid, focusNode);
      });
}

void GraphViewer::onLayoutCancelled() {
  // The previous drawing is of another graph or state: showing it would pass
  // for the result. Say what happened and how to get the drawing instead.
  scene_->clearGraph();
  status_->setText(tr("Layout cancelled"));
  message_->setText(tr("Laying out this graph (%1 nodes) was cancelled — press Reload to lay it out again.")
                        .arg(graph_ ? graph_->nodes_size() : 0));
  message_->setProperty("cancelled", true);
  message_->show();
  reload_->show();
}

void GraphViewer::onLaidOut(const std::shared_ptr<const LaidOutGraph>& laid, int focusNode) {
  const GraphOutline& outline = *laid->outline;
  message_->setProperty("cancelled", false);
  scene_->build(laid->outline, laid->layout);
  int scopes = 0;
  for (const OutlineItem& item : outline.items) scopes += item.node < 0 ? 1 : 0;
  QString status = tr("%1 nodes, %2 boxes").arg(graph_->nodes_size()).arg(outline.items.size());
  if (scopes > 0) status += tr(", %1 collapsed scopes").arg(scopes);
  if (!state_.focus.empty()) status += tr(", %1 hops around the selection").arg(state_.hops);
  status_->setText(status);
  if (laid->tooLarge) {
    message_->setText(tr("This graph has %1 nodes with too few module scopes to fold into: "
                         "drawing all of it would be unreadable. Shown: the nodes within %2 hops "
                         "of its outputs. Select a node and use “Around selection”, or search.")
                          .arg(graph_->nodes_size())
                          .arg(kOutputHops));
    message_->show();
  } else {
    message_->hide();
  }
  whole_->setEnabled(!state_.focus.empty() || laid->tooLarge);
  search(search_->text());
  canvas_->fitReadable();
  if (focusNode >= 0) selectNode(focusNode);
  emit layoutFinished();
}

void GraphViewer::expandScope(const QString& scope) {
  if (!graph_ || scope.isEmpty()) return;
  // Expanding "a.b" means its parents are expanded too.
  for (qsizetype end = scope.indexOf(QLatin1Char('.')); end >= 0; end = scope.indexOf(QLatin1Char('.'), end + 1)) {
    state_.expanded.insert(scope.left(end));
  }
  state_.expanded.insert(scope);
  int first = -1;
  if (const GraphOutline* outline = scene_->outline()) {
    for (const OutlineItem& item : outline->items) {
      if (item.node < 0 && item.scope == scope) first = item.members.front();
    }
  }
  relayout(first);
}

void GraphViewer::collapseScope(const QString& scope) {
  if (!graph_ || scope.isEmpty()) return;
  const QString inside = scope + QLatin1Char('.');
  for (auto it = state_.expanded.begin(); it != state_.expanded.end();) {
    it = (*it == scope || it->startsWith(inside)) ? state_.expanded.erase(it) : std::next(it);
  }
  int first = -1;
  const std::vector<QString> paths = groupPaths(*graph_);
  for (int v = 0; v < graph_->nodes_size(); ++v) {
    const QString& nodeScope = paths[v];
    if (nodeScope == scope || nodeScope.startsWith(inside)) {
      first = v;
      break;
    }
  }
  relayout(first);
}

void GraphViewer::expandAll() {
  if (!graph_) return;
  state_.expanded = allScopes(*graph_);
  relayout(scene_->selectedIndex() >= 0 ? scene_->outline()->items[scene_->selectedIndex()].members.front() : -1);
}

void GraphViewer::collapseAll() {
  if (!graph_) return;
  state_.expanded.clear();
  relayout();
}

void GraphViewer::showAroundSelection() {
  const int index = scene_->selectedIndex();
  if (!graph_ || index < 0) {
    status_->setText(tr("Select a node first, then show the nodes around it."));
    return;
  }
  state_.focus = scene_->outline()->items[index].members;
  state_.hops = hops_->value();
  relayout(state_.focus.front());
}

void GraphViewer::showWholeGraph() {
  if (!graph_) return;
  const int index = scene_->selectedIndex();
  const int node = index >= 0 ? scene_->outline()->items[index].members.front() : -1;
  state_.focus.clear();
  relayout(node);
}

int GraphViewer::search(const QString& text) {
  matches_.clear();
  matchCursor_ = -1;
  int nodes = 0;
  const GraphOutline* outline = scene_->outline();
  if (graph_ && outline != nullptr && !text.trimmed().isEmpty()) {
    const QString needle = text.trimmed();
    std::vector<bool> marked(outline->items.size(), false);
    for (int v = 0; v < graph_->nodes_size(); ++v) {
      if (!nodeMatches(graph_->nodes(v), needle)) continue;
      ++nodes;
      const int item = outline->itemOfNode[v];
      if (item >= 0 && !marked[item]) {
        marked[item] = true;
        matches_.push_back(item);
      }
    }
    std::sort(matches_.begin(), matches_.end());
  }
  scene_->setMatches(matches_);
  if (text.trimmed().isEmpty()) {
    matchLabel_->clear();
  } else if (nodes == 0) {
    matchLabel_->setText(tr("no match"));
  } else {
    matchLabel_->setText(tr("%n node(s)", nullptr, nodes));
  }
  return nodes;
}

void GraphViewer::nextMatch() {
  if (matches_.empty()) return;
  matchCursor_ = (matchCursor_ + 1) % static_cast<int>(matches_.size());
  const int index = matches_[matchCursor_];
  scene_->selectItem(index);
  canvas_->centerOn(scene_->box(index));
  matchLabel_->setText(tr("box %1 of %2").arg(matchCursor_ + 1).arg(matches_.size()));
}

void GraphViewer::selectNode(int node) {
  const GraphOutline* outline = scene_->outline();
  if (outline == nullptr || node < 0 || node >= static_cast<int>(outline->itemOfNode.size())) return;
  const int index = outline->itemOfNode[node];
  if (index < 0) return;
  scene_->selectItem(index);
  canvas_->centerOn(scene_->box(index));
}

void GraphViewer::onSelectionChanged() {
  const int index = scene_->selectedIndex();
  const GraphOutline* outline = scene_->outline();
  if (index < 0 || outline == nullptr) {
    emit nodeSelected(-1);
    return;
  }
  const OutlineItem& item = outline->items[index];
  if (item.node >= 0) {
    emit nodeSelected(item.node);
  } else {
    emit scopeSelected(item.scope, static_cast<int>(item.members.size()));
  }
}

void GraphViewer::showItemMenu(int index, const QPoint& globalPos) {
  const GraphOutline* outline = scene_->outline();
  if (outline == nullptr) return;
  const OutlineItem& item = outline->items[index];
  scene_->selectItem(index);
  QMenu menu(this);
  if (item.node < 0) {
    menu.addAction(tr("Expand “%1”").arg(item.scope), this, [this, scope = item.scope] { expandScope(scope); });
  }
  // Collapse the scope itself or any scope around it, innermost first.
  QString scope = item.node < 0 ? item.scope.section(QLatin1Char('.'), 0, -2) : item.scope;
  while (!scope.isEmpty()) {
    menu.addAction(tr("Collapse “%1”").arg(scope), this, [this, scope] { collapseScope(scope); });
    scope = scope.section(QLatin1Char('.'), 0, -2);
  }
  menu.addSeparator();
  menu.addAction(tr("Show %1 hops around this").arg(hops_->value()), this, &GraphViewer::showAroundSelection);
  menu.exec(globalPos);
}

}  // namespace lazyscope::gui

namespace lazyscope::gui {

QString GraphViewer::exportImage(const QString& path) {
  if (graph_ == nullptr || isLayingOut()) return tr("There is no graph drawn to export yet.");
  return exportSceneImage(scene_, path);
}

}  // namespace lazyscope::gui
