#include "windows/run_list_page.h"
#include "widgets/sort_arrow_style.h"

#include <QAction>
#include <QEvent>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "models/run_list_model.h"
#include "widgets/sort_arrow_style.h"

namespace lazyscope::gui {

RunListPage::RunListPage(QWidget* parent)
    : QWidget(parent), model_(new RunListModel(this)), proxy_(new QSortFilterProxyModel(this)) {
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(RunListModel::SortRole);
  proxy_->setSortCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterKeyColumn(-1);  // match any column

  createFilter();
  createTable();

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(6);
  layout->addWidget(filter_);
  layout->addWidget(table_, 1);
  setFocusProxy(table_);  // arrow keys browse runs at once; Ctrl+F reaches the filter
  updatePlaceholder();
}

RunListPage::~RunListPage() = default;

void RunListPage::createFilter() {
  filter_ = new QLineEdit(this);
  filter_->setObjectName(QStringLiteral("runFilter"));
  filter_->setPlaceholderText(tr("Filter runs by name, script, status… (Ctrl+F)"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
    proxy_->setFilterFixedString(text);
    updatePlaceholder();
    emit shownCountChanged();
  });

  auto* focusFilter = new QAction(this);
  focusFilter->setShortcut(QKeySequence::Find);
  connect(focusFilter, &QAction::triggered, this, [this] {
    filter_->setFocus(Qt::ShortcutFocusReason);
    filter_->selectAll();
  });
  addAction(focusFilter);

  auto* clearFilter = new QAction(filter_);
  clearFilter->setShortcut(QKeySequence(Qt::Key_Escape));
  clearFilter->setShortcutContext(Qt::WidgetShortcut);
  connect(clearFilter, &QAction::triggered, filter_, &QLineEdit::clear);
  filter_->addAction(clearFilter);
}

void RunListPage::createTable() {
  table_ = new QTableView(this);
  table_->setObjectName(QStringLiteral("runTable"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunListModel::Started, Qt::DescendingOrder);
  table_->horizontalHeader()->setStyle(new SortArrowStyle(table_->horizontalHeader()));
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  // Several rows: two to compare, or many to delete at once.
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);
  table_->setShowGrid(false);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  QHeaderView* header = table_->horizontalHeader();
  header->setHighlightSections(false);
  header->setSectionResizeMode(QHeaderView::Interactive);
  header->setSectionResizeMode(RunListModel::Name, QHeaderView::Stretch);
  applyDefaultColumnWidths();
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this] { emit currentRunChanged(currentRunId()); });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunListPage::selectedRunsChanged);

  placeholder_ = new QLabel(table_->viewport());
  placeholder_->setObjectName(QStringLiteral("runTablePlaceholder"));
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setWordWrap(true);
  placeholder_->setTextFormat(Qt::PlainText);
  placeholder_->setAttribute(Qt::WA_TransparentForMouseEvents);
  placeholder_->setForegroundRole(QPalette::PlaceholderText);
  table_->viewport()->installEventFilter(this);  // keeps the placeholder centred
}

void RunListPage::setRuns(const std::vector<pb::RunSummary>& runs) {
  model_->setRuns(runs);
  if (!columnsFitted_ && !runs.empty()) {
    if (!userColumnWidths_) fitColumnsToContents();
    columnsFitted_ = true;
  }
  updatePlaceholder();
  emit shownCountChanged();
}

void RunListPage::setEmptyReason(EmptyReason reason) {
  emptyReason_ = reason;
  updatePlaceholder();
}

int RunListPage::totalCount() const { return model_->rowCount(); }

int RunListPage::shownCount() const { return proxy_->rowCount(); }

qint64 RunListPage::currentRunId() const {
  const QModelIndex current = table_->currentIndex();
  return current.isValid() ? current.data(RunListModel::RunIdRole).toLongLong() : 0;
}

bool RunListPage::selectRun(qint64 runId) {
  for (int row = 0; row < proxy_->rowCount(); ++row) {
    const QModelIndex index = proxy_->index(row, 0);
    if (index.data(RunListModel::RunIdRole).toLongLong() != runId) continue;
    table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    table_->scrollTo(index);
    return true;
  }
  return false;
}

std::vector<int64_t> RunListPage::selectedRunIds() const {
  std::vector<int64_t> ids;
  for (int row = 0; row < proxy_->rowCount(); ++row) {
    const QModelIndex index = proxy_->index(row, 0);
    if (table_->selectionModel()->isRowSelected(row, {}))
      ids.push_back(index.data(RunListModel::RunIdRole).toLongLong());
  }
  return ids;
}

QByteArray RunListPage::saveHeaderState() const { return table_->horizontalHeader()->saveState(); }

void RunListPage::restoreHeaderState(const QByteArray& state) {
  userColumnWidths_ = !state.isEmpty() && table_->horizontalHeader()->restoreState(state);
}

void RunListPage::updatePlaceholder() {
  QString text;
  if (proxy_->rowCount() == 0) {
    switch (emptyReason_) {
      case EmptyReason::NoHistory:
        text = tr(
            "No runs recorded yet.\nRun a script with `lazyscope run train.py` and it "
            "will appear here.");
        break;
      case EmptyReason::Loading: text = tr("Loading runs…"); break;
      case EmptyReason::Failed: text = tr("No runs to show.\nOpen another history with File ▸ Open… (Ctrl+O)."); break;
      case EmptyReason::Loaded:
        text = model_->rowCount() == 0 ? tr("This history has no runs yet.")
                                       : tr("No runs match “%1”.").arg(filter_->text());
        break;
    }
  }
  placeholder_->setText(text);
  placeholder_->setGeometry(table_->viewport()->rect().adjusted(24, 24, -24, -24));
  placeholder_->setVisible(!text.isEmpty());
}

void RunListPage::applyDefaultColumnWidths() {
  // Wide enough for typical values, so that even an empty table looks laid out.
  const QFontMetrics metrics(table_->font());
  const QString samples[RunListModel::NUM_COLUMNS] = {QStringLiteral("0000"),
                                                      QStringLiteral("mnist-mlp baseline"),
                                                      QStringLiteral("train_mlp.py"),
                                                      QStringLiteral("interrupted"),
                                                      QStringLiteral("2024-12-31 23:59:59"),
                                                      QStringLiteral("44 min 00 s"),
                                                      QStringLiteral("000000"),
                                                      QStringLiteral("0000"),
                                                      QStringLiteral("000000"),
                                                      QStringLiteral("000.0 ms")};
  QHeaderView* header = table_->horizontalHeader();
  for (int column = 0; column < RunListModel::NUM_COLUMNS; ++column) {
    const QString title = model_->headerData(column, Qt::Horizontal).toString();
    const int width = std::max(metrics.horizontalAdvance(samples[column]),
                               metrics.horizontalAdvance(title) + 16);  // + sort arrow
    header->resizeSection(column, width + 24);
  }
}

void RunListPage::fitColumnsToContents() {
  // Only ever widen: a column keeps its default width for short values.
  QHeaderView* header = table_->horizontalHeader();
  const QAbstractItemView* view = table_;  // sizeHintForColumn() is public there
  for (int column = 0; column < RunListModel::NUM_COLUMNS; ++column) {
    if (header->sectionResizeMode(column) != QHeaderView::Interactive) continue;
    const int wanted = view->sizeHintForColumn(column) + 12;  // breathing room
    header->resizeSection(column, std::max(header->sectionSize(column), wanted));
  }
}

bool RunListPage::eventFilter(QObject* watched, QEvent* event) {
  if (watched == table_->viewport() && event->type() == QEvent::Resize) updatePlaceholder();
  return QWidget::eventFilter(watched, event);
}

}  // namespace lazyscope::gui
