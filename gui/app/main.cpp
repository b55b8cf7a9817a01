// lazyscope-gui [--run ID|NAME|last] [--tab NAME] [HISTORY]: the desktop workbench.
// Opens HISTORY, or the user's default history when none is given.
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QTabWidget>
#include <cstdio>

#include "util/color_scheme.h"
#include "windows/main_window.h"
#include "windows/run_detail_view.h"

int main(int argc, char* argv[]) {
  QApplication app(argc, argv);
  // Organization and application names locate the QSettings file
  // (~/.config/LazyScope/lazyscope-gui.conf).
  QApplication::setOrganizationName(QStringLiteral("LazyScope"));
  QApplication::setApplicationName(QStringLiteral("lazyscope-gui"));
  QApplication::setApplicationDisplayName(QStringLiteral("LazyScope"));
  QApplication::setApplicationVersion(QStringLiteral(LAZYSCOPE_VERSION));
  QGuiApplication::setDesktopFileName(QStringLiteral("lazyscope-gui"));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/lazyscope/icons/lazyscope.svg")));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Browse the runs recorded in a LazyScope history."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(
      QStringLiteral("history"),
      QStringLiteral("History file to open (default: $LAZYSCOPE_HISTORY, else "
                     "$XDG_DATA_HOME/lazyscope/history.sqlite)."),
      QStringLiteral("[HISTORY]"));
  const QCommandLineOption runOption(
      QStringLiteral("run"),
      QStringLiteral("Select this run once loaded: a run id, a run name (the newest run of that name) or "
                     "\"last\" (the default: the newest run)."),
      QStringLiteral("run"));
  const QCommandLineOption tabOption(QStringLiteral("tab"),
                                     QStringLiteral("Show this tab of the run: overview, recompilations, graphs, timeline, "
                                                    "charts, fallbacks, metrics, output, kernels."),
                                     QStringLiteral("name"));
  const QCommandLineOption schemeOption(
      QStringLiteral("color-scheme"),
      QStringLiteral("Colours: system (the default: follow the desktop), light or dark. "
                     "Remembered from View > Color Scheme when not given."),
      QStringLiteral("scheme"));
  parser.addOption(schemeOption);
  parser.addOption(runOption);
  parser.addOption(tabOption);
  parser.process(app);
  const QStringList args = parser.positionalArguments();
  if (args.size() > 1) {
    std::fputs("lazyscope-gui: expected at most one HISTORY file\n", stderr);
    return 2;
  }

  lazyscope::gui::ColorScheme scheme = lazyscope::gui::savedColorScheme();
  if (parser.isSet(schemeOption) && !lazyscope::gui::parseColorScheme(parser.value(schemeOption), &scheme)) {
    std::fprintf(stderr, "lazyscope-gui: --color-scheme takes system, light or dark, not \"%s\"\n",
                 qPrintable(parser.value(schemeOption)));
    return 2;
  }
  if (scheme != lazyscope::gui::ColorScheme::System) lazyscope::gui::applyColorScheme(scheme);

  lazyscope::gui::MainWindow window;
  window.show();
  if (parser.isSet(runOption)) {
    if (parser.value(runOption).trimmed().isEmpty()) {
      std::fputs("lazyscope-gui: --run needs a run id, a run name or \"last\"\n", stderr);
      return 2;
    }
    window.selectRunWhenLoaded(parser.value(runOption));
  }
  if (parser.isSet(tabOption) && !window.runDetail()->showTab(parser.value(tabOption))) {
    std::fprintf(stderr, "lazyscope-gui: no tab named \"%s\"; the tabs are: %s\n", qPrintable(parser.value(tabOption)),
                 qPrintable(window.runDetail()->tabNames().join(QStringLiteral(", "))));
    return 2;
  }
  if (args.isEmpty()) {
    window.openDefaultHistory();
  } else {
    window.openHistory(args.first());
  }
  return QApplication::exec();
}
