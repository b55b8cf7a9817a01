#include "views/fallbacks_view.h"

#include <QEvent>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTextBlock>
#include <QVBoxLayout>

#include "loaders/run_profile_loader.h"
#include "models/fallback_model.h"
#include "widgets/finding_card.h"

namespace lazyscope::gui {

FallbacksView::FallbacksView(QWidget* parent)
    : QWidget(parent),
      model_(new FallbackModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      table_(new QTableView(this)),
      caption_(new QLabel(this)),
      source_(new QPlainTextEdit(this)),
      empty_(new QLabel(this)) {
  setObjectName(QStringLiteral("fallbacksView"));
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(FallbackModel::SortRole);
  table_->setObjectName(QStringLiteral("fallbackTable"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);  // the query's order: most expensive first
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  // Compact rows, as in the run list: a report reads better dense.
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 8);

  caption_->setObjectName(QStringLiteral("fallbackSourceCaption"));
  caption_->setTextFormat(Qt::PlainText);
  caption_->setWordWrap(true);
  source_->setObjectName(QStringLiteral("fallbackSource"));
  source_->setReadOnly(true);
  source_->setLineWrapMode(QPlainTextEdit::NoWrap);
  source_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  empty_->setObjectName(QStringLiteral("fallbacksEmpty"));
  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);
  empty_->setForegroundRole(QPalette::PlaceholderText);

  auto* lower = new QWidget(this);
  auto* lowerLayout = new QVBoxLayout(lower);
  lowerLayout->setContentsMargins(0, 0, 0, 0);
  lowerLayout->setSpacing(4);
  lowerLayout->addWidget(caption_);
  lowerLayout->addWidget(source_, 1);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->setChildrenCollapsible(false);
  splitter->addWidget(table_);
  splitter->addWidget(lower);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 2);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(empty_);
  layout->addWidget(splitter, 1);

  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    showGroup(current.isValid() ? current.data(FallbackModel::GroupIndexRole).toInt() : -1);
  });
  clear();
}

FallbacksView::~FallbacksView() = default;

void FallbacksView::setProfile(const RunProfile& profile) {
  scriptPath_ = profile.run.script_path();
  source_->setPlainText(QString::fromStdString(profile.run.script_text()));
  model_->setGroups(profile.fallbackGroups);
  const bool none = profile.fallbackGroups.empty();
  empty_->setVisible(none);
  empty_->setText(tr("No op of this run fell back to the CPU: every op ran in the compiled graph."));
  table_->parentWidget()->setVisible(!none);
  if (!none) selectGroup(0);
}

void FallbacksView::clear() {
  scriptPath_.clear();
  model_->setGroups({});
  source_->clear();
  caption_->clear();
  highlightedLine_ = 0;
  empty_->setText(tr("No run selected."));
  empty_->show();
  table_->parentWidget()->hide();
}

bool FallbacksView::selectGroup(int row) {
  if (row < 0 || row >= model_->rowCount()) return false;
  const QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
  table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(index);
  return true;
}

bool FallbacksView::selectLine(int line) {
  for (int row = 0; row < model_->rowCount(); ++row) {
    if (model_->groups()[static_cast<size_t>(row)].source().line() == line) return selectGroup(row);
  }
  return false;
}

QString FallbacksView::sourceCaption() const { return caption_->text(); }

void FallbacksView::showGroup(int row) {
  if (row < 0 || row >= model_->rowCount()) {
    caption_->clear();
    highlight(0);
    return;
  }
  const pb::FallbackGroup& group = model_->groups()[static_cast<size_t>(row)];
  const QString op = QString::fromStdString(group.op());
  const QString file = QString::fromStdString(group.source().file());
  const int line = static_cast<int>(group.source().line());
  if (file.isEmpty() || line <= 0) {
    caption_->setText(tr("%1: the engine recorded no source line for these fallbacks.").arg(op));
    highlight(0);
  } else if (QFileInfo(file).fileName() != QFileInfo(QString::fromStdString(scriptPath_)).fileName()) {
    // The history keeps the text of the script only, not of modules it imports.
    caption_->setText(tr("%1 at %2:%3, outside the script (its text is not recorded).").arg(op, file).arg(line));
    highlight(0);
  } else if (line > source_->blockCount()) {
    caption_->setText(tr("%1 at line %2, past the end of the recorded script (%3 lines).")
                          .arg(op)
                          .arg(line)
                          .arg(source_->blockCount()));
    highlight(0);
  } else {
    caption_->setText(tr("%1 falls back at line %2 of %3:").arg(op).arg(line).arg(QFileInfo(file).fileName()));
    highlight(line);
  }
}

void FallbacksView::highlight(int line) {
  highlightedLine_ = line;
  QList<QTextEdit::ExtraSelection> selections;
  if (line > 0) {
    QTextEdit::ExtraSelection selection;
    QColor color = severityColor(pb::SEVERITY_WARNING, palette());
    color.setAlphaF(0.3f);
    selection.format.setBackground(color);
    selection.format.setProperty(QTextFormat::FullWidthSelection, true);
    selection.cursor = QTextCursor(source_->document()->findBlockByNumber(line - 1));
    selections << selection;
    source_->setTextCursor(selection.cursor);
    source_->centerCursor();
  }
  source_->setExtraSelections(selections);
}

void FallbacksView::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) highlight(highlightedLine_);
}

}  // namespace lazyscope::gui
