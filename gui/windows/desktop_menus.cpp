#include "windows/desktop_menus.h"

#include <QAction>
#include <QActionGroup>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>

#include "util/color_scheme.h"
#include "windows/shortcut_sheet.h"

namespace lazyscope::gui {

void addViewAndHelpMenus(QMainWindow* window) {
  QMenu* view = window->menuBar()->addMenu(QMainWindow::tr("&View"));
  QMenu* schemes = view->addMenu(QMainWindow::tr("&Color Scheme"));
  schemes->setObjectName(QStringLiteral("colorSchemeMenu"));
  auto* group = new QActionGroup(schemes);
  const std::pair<ColorScheme, QString> choices[] = {
      {ColorScheme::System, QMainWindow::tr("Follow the &System")},
      {ColorScheme::Light, QMainWindow::tr("&Light")},
      {ColorScheme::Dark, QMainWindow::tr("&Dark")},
  };
  for (const auto& [scheme, text] : choices) {
    QAction* action = schemes->addAction(text);
    action->setCheckable(true);
    action->setChecked(scheme == currentColorScheme());
    action->setData(colorSchemeName(scheme));
    group->addAction(action);
    QObject::connect(action, &QAction::triggered, window, [scheme = scheme] {
      applyColorScheme(scheme);
      saveColorScheme(scheme);
    });
  }
  // Another window (or --color-scheme) may have changed it meanwhile.
  QObject::connect(schemes, &QMenu::aboutToShow, schemes, [group] {
    for (QAction* action : group->actions()) {
      action->setChecked(action->data().toString() == colorSchemeName(currentColorScheme()));
    }
  });

  QMenu* help = window->menuBar()->addMenu(QMainWindow::tr("&Help"));
  QAction* shortcuts = help->addAction(QMainWindow::tr("&Keyboard Shortcuts"));
  shortcuts->setObjectName(QStringLiteral("shortcutSheetAction"));
  shortcuts->setShortcuts(
      {QKeySequence(Qt::Key_F1), QKeySequence(Qt::CTRL | Qt::Key_Slash), QKeySequence(Qt::Key_Question)});
  shortcuts->setIcon(QIcon::fromTheme(QStringLiteral("help-keyboard-shortcuts")));
  QObject::connect(shortcuts, &QAction::triggered, window, [window] {
    // One sheet per window, raised if already open; not modal, so it can
    // stay beside the timeline while one tries the keys.
    auto* sheet = window->findChild<ShortcutSheet*>();
    if (sheet == nullptr) {
      sheet = new ShortcutSheet(window);
      sheet->setAttribute(Qt::WA_DeleteOnClose);
    }
    sheet->show();
    sheet->raise();
    sheet->activateWindow();
  });
}

}  // namespace lazyscope::gui
