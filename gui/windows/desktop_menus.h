// The View and Help menus of the main window: View ▸ Color Scheme (system,
// light, dark; remembered) and Help ▸ Keyboard Shortcuts (F1, Ctrl+/, ?).
// Kept out of main_window.cpp so that the window's own menus stay short.
#pragma once

class QMainWindow;

namespace lazyscope::gui {

void addViewAndHelpMenus(QMainWindow* window);

}  // namespace lazyscope::gui
