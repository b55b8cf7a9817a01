#include "windows/shortcut_sheet.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QKeySequence>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace lazyscope::gui {

namespace {

QString native(const QKeySequence& keys) { return keys.toString(QKeySequence::NativeText); }

}  // namespace

std::vector<ShortcutSheet::Entry> ShortcutSheet::entries() {
  const QString general = tr("General");
  const QString runs = tr("Run list");
  const QString timeline = tr("Timeline");
  const QString charts = tr("Charts");
  return {
      {general, native(QKeySequence::Open), tr("Open a history file (or drop one on the window)")},
      {general, native(QKeySequence(Qt::Key_F5)), tr("Reload the history")},
      {general, tr("F1, %1, ?").arg(native(QKeySequence(Qt::CTRL | Qt::Key_Slash))), tr("This sheet")},
      {general, native(QKeySequence(Qt::CTRL | Qt::Key_Q)), tr("Quit")},
      {general, tr("Alt+underlined letter"), tr("Switch to a tab of the run (Overview, Timeline, Charts…)")},
      {runs, native(QKeySequence(Qt::CTRL | Qt::Key_F)), tr("Filter the runs")},
      {runs, tr("Up, Down"), tr("Select the previous or next run")},
      {timeline, tr("+, W, wheel up"), tr("Zoom in (around the mouse pointer with the wheel)")},
      {timeline, tr("−, S, wheel down"), tr("Zoom out")},
      {timeline, tr("Left, Right, A, D, drag"), tr("Pan")},
      {timeline, tr("Home, End"), tr("Go to the first or last steps")},
      {timeline, tr("F, 0"), tr("Fit every step")},
      {timeline, tr("Click"), tr("Select a step (its compile is selected in Recompilations)")},
      {timeline, tr("Esc"), tr("Clear the selection")},
      {charts, tr("Drag"), tr("Zoom into a rectangle")},
      {charts, tr("Right click"), tr("Zoom out one level")},
  };
}

ShortcutSheet::ShortcutSheet(QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("shortcutSheet"));
  setWindowTitle(tr("Keyboard Shortcuts"));
  auto* tree = new QTreeWidget(this);
  tree->setObjectName(QStringLiteral("shortcutTree"));
  tree->setColumnCount(2);
  tree->setHeaderLabels({tr("Keys"), tr("Action")});
  tree->setRootIsDecorated(false);
  tree->setSelectionMode(QAbstractItemView::NoSelection);
  tree->setFocusPolicy(Qt::NoFocus);
  QTreeWidgetItem* group = nullptr;
  for (const Entry& entry : entries()) {
    if (group == nullptr || group->text(0) != entry.group) {
      group = new QTreeWidgetItem(tree, {entry.group});
      group->setFirstColumnSpanned(true);
      QFont bold = group->font(0);
      bold.setBold(true);
      group->setFont(0, bold);
      group->setExpanded(true);
    }
    new QTreeWidgetItem(group, {entry.keys, entry.action});
  }
  tree->expandAll();
  tree->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  tree->header()->setStretchLastSection(true);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(tree, 1);
  layout->addWidget(buttons);
  resize(620, 520);
}

ShortcutSheet::~ShortcutSheet() = default;

}  // namespace lazyscope::gui
