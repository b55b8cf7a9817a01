// lazyscope-gui [--run ID|NAME|last] [--tab NAME] [HISTORY]: the desktop workbench.
// Opens HISTORY, or the user's default history when none is given.
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QTabWidget>
#include <cstdio>
#include <exception>

#include "db/history_file.h"

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
  parser.setApplicationDescription(QStringLiteral("Browse the runs recorded in a LazyScope history."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("history"),
                               QStringLiteral("History file to open (default: $LAZYSCOPE_HISTORY, else "
                                              "$XDG_DATA_HOME/lazyscope/history.sqlite)."),
                               QStringLiteral("[HISTORY]"));
  const QCommandLineOption runOption(
      QStringLiteral("run"),
      QStringLiteral("Select this run once loaded: a run id, a run name (the newest run of that name) or "
                     "\"last\" (the default: the newest run)."),
      QStringLiteral("run"));
  const QCommandLineOption tabOption(
      QStringLiteral("tab"),
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

  // Checked before the window shows: a mistyped --run or --tab is said on
  // stderr with what there is, and nothing opens (as the CLI does).
  lazyscope::gui::MainWindow window;
  if (parser.isSet(tabOption) && !window.runDetail()->showTab(parser.value(tabOption))) {
    std::fprintf(stderr, "lazyscope-gui: no tab named \"%s\"; the tabs are: %s\n", qPrintable(parser.value(tabOption)),
                 qPrintable(window.runDetail()->tabNames().join(QStringLiteral(", "))));
    return 2;
  }
  if (parser.isSet(runOption)) {
    const QString ref = parser.value(runOption).trimmed();
    if (ref.isEmpty()) {
      std::fputs("lazyscope-gui: --run needs a run id, a run name or \"last\"\n", stderr);
      return 2;
    }
    QString history = args.isEmpty() ? QString() : args.first();
    if (history.isEmpty()) {
      try {
        history = QString::fromStdString(lazyscope::storage::default_history_path());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "lazyscope-gui: --run %s: no default history: %s\n", qPrintable(ref), e.what());
        return 2;
      }
    }
    QString problem;
    const int64_t runId = lazyscope::gui::MainWindow::resolveRun(history, ref, &problem);
    if (runId == 0) {
      std::fprintf(stderr, "lazyscope-gui: %s\n", qPrintable(problem));
      return 2;
    }
    // The id, not the text: the window selects the run the CLI would.
    window.selectRunWhenLoaded(static_cast<qint64>(runId));
  }
  window.show();
  if (args.isEmpty()) {
    window.openDefaultHistory();
  } else {
    window.openHistory(args.first());
  }
  return QApplication::exec();
}
