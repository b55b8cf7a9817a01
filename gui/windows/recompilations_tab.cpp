#include "windows/recompilations_tab.h"

#include "lazyscope/event_text.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "loaders/run_detail_loader.h"
#include "models/graph_diff_model.h"
#include "models/recompilation_model.h"

namespace lazyscope::gui {

namespace {

QTableView* makeTable(QAbstractItemModel* model, const QString& name, QWidget* parent) {
  auto* table = new QTableView(parent);
  table->setObjectName(name);
  table->setModel(model);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->setWordWrap(false);
  table->setShowGrid(false);
  table->verticalHeader()->hide();
  table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  table->horizontalHeader()->setHighlightSections(false);
  table->horizontalHeader()->setStretchLastSection(true);
  table->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  return table;
}

// Fits every column to its contents, with room to breathe between them.
void fitColumns(QTableView* table) {
  table->resizeColumnsToContents();
  QHeaderView* header = table->horizontalHeader();
  for (int column = 0; column + 1 < header->count(); ++column) {  // the last one stretches
    header->resizeSection(column, header->sectionSize(column) + 16);
  }
}

}  // namespace

RecompilationsTab::RecompilationsTab(QWidget* parent)
    : QWidget(parent),
      model_(new RecompilationModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      diff_(new GraphDiffModel(this)) {
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(RecompilationModel::SortRole);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  table_ = makeTable(proxy_, QStringLiteral("recompilationTable"), splitter);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);  // the order of the run
  table_->setAlternatingRowColors(true);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    showCompile(current.isValid() ? current.data(RecompilationModel::CompileIndexRole).toInt() : -1);
  });

  auto* lower = new QWidget(splitter);
  reason_ = new QLabel(lower);
  reason_->setObjectName(QStringLiteral("recompilationReason"));
  reason_->setTextFormat(Qt::PlainText);
  reason_->setWordWrap(true);
  reason_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  diffTable_ = makeTable(diff_, QStringLiteral("graphDiffTable"), lower);
  auto* lowerLayout = new QVBoxLayout(lower);
  lowerLayout->setContentsMargins(0, 6, 0, 0);
  lowerLayout->setSpacing(6);
  lowerLayout->addWidget(reason_);
  lowerLayout->addWidget(diffTable_, 1);

  splitter->addWidget(table_);
  splitter->addWidget(lower);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 2);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(splitter);
  clear();
}

RecompilationsTab::~RecompilationsTab() = default;

void RecompilationsTab::setRun(const RunDetail* detail) {
  detail_ = detail;
  model_->setCompiles(detail ? detail->compiles : std::vector<pb::CompileEvent>{});
  fitColumns(table_);
  int first = model_->rowCount() > 0 ? 0 : -1;
  for (int row = 0; row < model_->rowCount(); ++row) {
    if (model_->compiles()[static_cast<size_t>(row)].compared_with() != 0) {
      first = row;
      break;
    }
  }
  if (first >= 0) {
    selectCompile(first);
  } else {
    showCompile(-1);
  }
}

void RecompilationsTab::clear() { setRun(nullptr); }

void RecompilationsTab::selectCompile(int row) {
  const QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
  table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

QString RecompilationsTab::reasonText() const { return reason_->text(); }

void RecompilationsTab::showCompile(int row) {
  if (detail_ == nullptr || row < 0 || row >= model_->rowCount()) {
    diff_->clear();
    reason_->setText(model_->rowCount() == 0 ? tr("This run compiled no graphs.")
                                             : tr("Select a compile to see why it happened."));
    return;
  }
  const pb::CompileEvent& compile = model_->compiles()[static_cast<size_t>(row)];
  const pb::IrGraph* before = compile.compared_with() ? detail_->graph(compile.compared_with()) : nullptr;
  const pb::IrGraph* after = compile.has_graph() ? &compile.graph() : nullptr;
  diff_->setGraphs(before ? *before : pb::IrGraph{}, after ? *after : pb::IrGraph{});

  QString text = tr("Step %1, graph %2 (%3): %4")
                     .arg(compile.step())
                     .arg(shortHash(compile.graph_hash()), reasonKindText(compile.reason_kind()),
                          QString::fromStdString(compile.reason()));
  const QString comparedWith = shortHash(compile.compared_with());
  const int differing = diff_->differingCount();
  if (compile.compared_with() != 0 && before == nullptr) {
    text += QLatin1Char('\n') + tr("Compared with graph %1, whose IR is not stored.").arg(comparedWith);
  } else if (compile.compared_with() != 0) {
    text += QLatin1Char('\n') + (differing == 1
                                     ? tr("Compared with graph %1: 1 node differs.").arg(comparedWith)
                                     : tr("Compared with graph %1: %2 nodes differ.").arg(comparedWith).arg(differing));
  } else if (!event_text::is_recompile(compile.reason_kind())) {
    text += QLatin1Char('\n') + tr("No earlier graph to compare with: the first compile of this graph, not a "
                                   "recompilation. Its graph is shown alone.");
  } else {
    text += QLatin1Char('\n') + tr("No earlier graph to compare with.");
  }
  if (!after) text += QLatin1Char('\n') + tr("The IR of this graph is not stored.");
  reason_->setText(text);
  fitColumns(diffTable_);
}

}  // namespace lazyscope::gui
