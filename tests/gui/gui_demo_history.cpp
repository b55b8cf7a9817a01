// gui_demo_history PATH: appends runs with every kind of event the run views
// show to the history at PATH (for screenshots and trying the GUI by hand).
#include <QCoreApplication>
#include <cstdio>
#include <exception>

#include "history_fixture.h"

int main(int argc, char* argv[]) {
  QCoreApplication app(argc, argv);
  if (argc != 2) {
    std::fputs("usage: gui_demo_history PATH\n", stderr);
    return 2;
  }
  try {
    const QString path = QString::fromLocal8Bit(argv[1]);
    lazyscope::gui::testing::recordProfiledRun(path, 400, QStringLiteral("profiled"), 1.0);
    lazyscope::gui::testing::recordProfiledRun(path, 300, QStringLiteral("profiled-wide"), 1.6);
    lazyscope::gui::testing::recordProfiledRun(path, 20000, QStringLiteral("profiled-long"), 0.8);
    lazyscope::gui::testing::recordProfiledRun(path, 60, QStringLiteral("profiled-short"), 1.2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gui_demo_history: %s\n", e.what());
    return 1;
  }
  return 0;
}
