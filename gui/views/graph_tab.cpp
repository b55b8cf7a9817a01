#include "views/graph_tab.h"

#include <QFontDatabase>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "loaders/graph_loader.h"
#include "models/graph_diff_model.h"
#include "models/graph_list_model.h"
#include "util/ir_text.h"
#include "views/graph_viewer.h"

namespace lazyscope::gui {
namespace {

QString row(const QString& name, const QString& value) {
  return QStringLiteral("<tr><td style='padding-right:12px'><b>%1</b></td><td>%2</td></tr>")
      .arg(name.toHtmlEscaped(), value.toHtmlEscaped());
}

QPlainTextEdit* textPane(QWidget* parent, const QString& name) {
  auto* pane = new QPlainTextEdit(parent);
  pane->setObjectName(name);
  pane->setReadOnly(true);
  pane->setLineWrapMode(QPlainTextEdit::NoWrap);
  pane->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  return pane;
}

}  // namespace

GraphTab::GraphTab(QWidget* parent)
    : QWidget(parent),
      loader_(new GraphLoader(this)),
      model_(new GraphListModel(this)),
      proxy_(new QSortFilterProxyModel(this)) {
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(GraphListModel::SortRole);

  table_ = new QTableView(this);
  table_->setObjectName(QStringLiteral("graphTable"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(GraphListModel::FirstStep, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setHighlightSections(false);

  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("graphTabStatus"));
  status_->setWordWrap(true);
  status_->setTextFormat(Qt::PlainText);
  status_->hide();

  viewer_ = new GraphViewer(this);
  ir_ = textPane(this, QStringLiteral("graphIrText"));
  program_ = textPane(this, QStringLiteral("graphProgramText"));
  views_ = new QTabWidget(this);
  views_->setObjectName(QStringLiteral("graphViews"));
  views_->setDocumentMode(true);
  views_->addTab(viewer_, tr("Graph"));
  views_->addTab(ir_, tr("IR text"));
  views_->addTab(program_, tr("Program"));

  details_ = new QTextBrowser(this);
  details_->setObjectName(QStringLiteral("nodeDetails"));
  details_->setMinimumWidth(160);
  details_->setPlaceholderText(tr("Select a node to see its op, shape, attributes and source line."));

  auto* lower = new QSplitter(Qt::Horizontal, this);
  lower->setChildrenCollapsible(false);
  lower->addWidget(views_);
  lower->addWidget(details_);
  lower->setStretchFactor(0, 4);
  lower->setStretchFactor(1, 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->setChildrenCollapsible(false);
  split->addWidget(table_);
  split->addWidget(lower);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 4);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 4, 0, 0);
  layout->addWidget(status_);
  layout->addWidget(split, 1);

  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &GraphTab::onCurrentRowChanged);
  connect(viewer_, &GraphViewer::nodeSelected, this, &GraphTab::showNode);
  connect(viewer_, &GraphViewer::scopeSelected, this, &GraphTab::showScope);
  connect(loader_, &GraphLoader::listLoaded, this, [this](qint64 runId, const std::vector<GraphRow>& rows) {
    if (runId != runId_) return;
    model_->setGraphs(rows);
    table_->resizeColumnsToContents();
    emit graphCountChanged(static_cast<int>(rows.size()));
    if (rows.empty()) {
      setStatus(tr("This run compiled no graphs."));
      return;
    }
    setStatus({});
    if (pendingHash_ == 0 || !selectGraph(pendingHash_)) table_->selectRow(0);
    pendingHash_ = 0;
  });
  connect(loader_, &GraphLoader::graphLoaded, this,
          [this](quint64 hash, std::shared_ptr<const pb::IrGraph> graph, const QString& program) {
            graph_ = std::move(graph);
            shownHash_ = hash;
            setStatus({});
            viewer_->setGraph(graph_);
            // The text of a 5,000-node graph is some 500 KB: cheap to set once.
            ir_->setPlainText(gui::irText(*graph_));
            program_->setPlainText(program.isEmpty() ? tr("(no program text stored)") : program);
            details_->clear();
          });
  connect(loader_, &GraphLoader::cancelled, this, [this](quint64 hash) {
    if (hash == 0) {
      setStatus(tr("Reading the graphs of run %1 was cancelled — press F5 to reload.").arg(runId_));
    } else {
      setStatus(tr("Reading graph %1 was cancelled — select it again or press F5 to reload.")
                    .arg(hash, 16, 16, QLatin1Char('0')));
    }
  });
  connect(loader_, &GraphLoader::failed, this, [this](quint64 hash, const QString& message) {
    if (hash == 0) {
      setStatus(tr("Could not read the graphs of run %1. %2").arg(runId_).arg(message));
    } else {
      viewer_->clear();
      ir_->clear();
      program_->clear();
      setStatus(tr("Could not show graph %1. %2").arg(hash, 16, 16, QLatin1Char('0')).arg(message));
    }
  });
}

GraphTab::~GraphTab() = default;

void GraphTab::setRun(const QString& path, int64_t runId) {
  if (path == path_ && runId == runId_ && model_->rowCount() > 0) {
    pendingHash_ = shownHash_;  // a reload of the same run keeps its graph
  } else {
    pendingHash_ = 0;
  }
  path_ = path;
  runId_ = runId;
  loader_->loadList(path, runId);
}

void GraphTab::clear() {
  loader_->cancel();
  runId_ = 0;
  shownHash_ = 0;
  graph_.reset();
  model_->setGraphs({});
  viewer_->clear();
  ir_->clear();
  program_->clear();
  details_->clear();
  setStatus({});
}

bool GraphTab::selectGraph(uint64_t hash) {
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const QModelIndex index = proxy_->index(r, 0);
    if (index.data(GraphListModel::HashRole).toULongLong() != hash) continue;
    table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    return true;
  }
  return false;
}

bool GraphTab::isLoading() const { return loader_->isLoading() || viewer_->isLayingOut(); }

QString GraphTab::detailsText() const { return details_->toPlainText(); }
QString GraphTab::irText() const { return ir_->toPlainText(); }
QString GraphTab::programText() const { return program_->toPlainText(); }
QString GraphTab::statusText() const { return status_->isVisible() ? status_->text() : QString(); }

void GraphTab::setStatus(const QString& text) {
  status_->setText(text);
  status_->setVisible(!text.isEmpty());
}

void GraphTab::onCurrentRowChanged() {
  const QModelIndex current = table_->currentIndex();
  if (!current.isValid()) return;
  const uint64_t hash = current.data(GraphListModel::HashRole).toULongLong();
  if (hash == shownHash_ && graph_) return;
  if (!current.data(GraphListModel::HasIrRole).toBool()) {
    viewer_->clear();
    ir_->clear();
    program_->clear();
    graph_.reset();
    shownHash_ = 0;
    setStatus(tr("Graph %1 was executed but its IR was not stored (it was compiled in an "
                 "earlier process), so it cannot be drawn.")
                  .arg(hash, 16, 16, QLatin1Char('0')));
    return;
  }
  setStatus(tr("Reading graph %1…").arg(hash, 16, 16, QLatin1Char('0')));
  loader_->loadGraph(path_, runId_, hash);
}

void GraphTab::showNode(int node) {
  if (!graph_ || node < 0 || node >= graph_->nodes_size()) {
    details_->clear();
    return;
  }
  const pb::IrNode& n = graph_->nodes(node);
  QString html = QStringLiteral("<table>");
  html += row(tr("Node"), QStringLiteral("%%1").arg(n.id()));
  html += row(tr("Op"), QString::fromStdString(n.op()));
  html += row(tr("Shape"), nodeShapeText(n));
  html += row(tr("Dtype"), QString::fromStdString(n.dtype()));
  QStringList operands;
  for (int id : n.operands()) operands << QStringLiteral("%%1").arg(id);
  html += row(tr("Operands"), operands.isEmpty() ? tr("none") : operands.join(QStringLiteral(", ")));
  if (n.parameter_index() >= 0) html += row(tr("Parameter"), QString::number(n.parameter_index()));
  for (const auto& [name, value] : n.attrs()) {
    html += row(QString::fromStdString(name), QString::fromStdString(value));
  }
  html += row(tr("Scope"), n.scope().empty() ? tr("(none)") : QString::fromStdString(n.scope()));
  const QString source = n.source().file().empty()
                             ? tr("(unknown)")
                             : QStringLiteral("%1:%2%3")
                                   .arg(QString::fromStdString(n.source().file()))
                                   .arg(n.source().line())
                                   .arg(n.source().function().empty()
                                            ? QString()
                                            : QStringLiteral(" in ") + QString::fromStdString(n.source().function()));
  html += row(tr("Source"), source);
  html += row(tr("Hash"), QStringLiteral("%1").arg(n.hash(), 16, 16, QLatin1Char('0')));
  details_->setHtml(html + QStringLiteral("</table>"));
}

void GraphTab::showScope(const QString& scope, int nodeCount) {
  details_->setHtml(QStringLiteral("<table>") + row(tr("Scope"), scope) + row(tr("Nodes"), QString::number(nodeCount)) +
                    QStringLiteral("</table><p>") + tr("Double-click the box to expand it.").toHtmlEscaped() +
                    QStringLiteral("</p>"));
}

}  // namespace lazyscope::gui
