// Makes the README's screenshots of every view, in the light and the dark
// colour scheme (the application's own, View ▸ Color Scheme), by grabbing the
// widgets offscreen: not a test, a reproducible way to refresh the images
// from a history that the runner recorded (see README, "The GUI").
//
//   QT_QPA_PLATFORM=offscreen build/release/tests/gui/make_screenshots
//       HISTORY OUTDIR VIEW=RUN...
//
// VIEW is runs, overview, recompilations, timeline, charts, graphs,
// fallbacks, metrics, output, kernels (RUN: the run to show), timeline-ranks
// (the timeline of a multi-process run), compare (RUN: A,B) or
// run-script (RUN: the script the dialog is filled in with). Each writes
// VIEW.png and VIEW-dark.png into OUTDIR; VIEW+NAME shows VIEW and writes
// VIEW-NAME.png (a second image of one view: graphs+transformer=7).
#include <QApplication>
#include <QDir>
#include <QSettings>
#include <QSplitter>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <cstdio>

#include "dialogs/run_script_dialog.h"
#include "models/graph_list_model.h"
#include "models/recompilation_model.h"
#include "util/color_scheme.h"
#include "views/compare_view.h"
#include "views/graph_tab.h"
#include "views/graph_viewer.h"
#include "views/kernels_view.h"
#include "windows/main_window.h"
#include "windows/recompilations_tab.h"
#include "windows/run_actions.h"
#include "windows/run_detail_view.h"
#include "windows/run_list_page.h"

using namespace lazyscope;
using namespace lazyscope::gui;

namespace {

template <typename Done> bool waitFor(Done done) {
  for (int i = 0; i < 600 && !done(); ++i) QTest::qWait(50);
  QTest::qWait(300);  // let charts and layouts settle after the data arrived
  return done();
}

bool save(QWidget* widget, const QString& path) {
  if (widget->grab().save(path)) {
    std::printf("wrote %s\n", qPrintable(path));
    return true;
  }
  std::fprintf(stderr, "could not write %s\n", qPrintable(path));
  return false;
}

// The window with run `runId` of `history` selected and fully loaded.
bool showRun(MainWindow& window, const QString& history, qint64 runId) {
  window.openHistory(history);
  if (!waitFor([&] { return !window.isLoading() && window.runListPage()->totalCount() > 0; })) return false;
  if (runId > 0 && !window.runListPage()->selectRun(runId)) return false;
  RunDetailView* detail = window.runDetail();
  return runId <= 0 ||
         waitFor([&] { return detail->runId() == runId && !detail->isLoading() && !detail->isProfileLoading(); });
}

bool shoot(const QString& history, const QString& view, const QString& run, const QString& file) {
  MainWindow window;
  window.resize(1280, 860);
  window.show();
  if (view == QLatin1String("compare")) {
    const QStringList ids = run.split(QLatin1Char(','));
    if (ids.size() != 2 || !showRun(window, history, 0)) return false;
    CompareView* compare = window.runActions()->compareRuns(ids[0].toLongLong(), ids[1].toLongLong());
    compare->resize(1180, 780);
    waitFor([&] { return !compare->isLoading(); });
    const bool ok = save(compare, file);
    compare->close();
    return ok;
  }
  if (view == QLatin1String("run-script")) {
    if (!showRun(window, history, 0)) return false;
    RunScriptDialog dialog(history, &window);
    ScriptRunOptions options;
    options.script = run;
    options.args = {QStringLiteral("--steps"), QStringLiteral("200")};
    options.name = QStringLiteral("mlp lr=0.05");
    options.tags = {QStringLiteral("sweep"), QStringLiteral("lr")};
    options.deviceKind = QStringLiteral("lazy");
    dialog.setOptions(options);
    dialog.show();
    QTest::qWait(1500);  // the runner's --help answers
    return save(&dialog, file);
  }
  if (!showRun(window, history, run.toLongLong())) return false;
  RunDetailView* detail = window.runDetail();
  if (view == QLatin1String("runs")) {
    // The run list is the subject: give it the room for every run.
    if (auto* splitter = window.findChild<QSplitter*>(QStringLiteral("mainSplitter"))) splitter->setSizes({420, 360});
  } else if (!detail->showTab(view == QLatin1String("timeline-ranks") ? QStringLiteral("timeline") : view)) {
    std::fprintf(stderr, "no tab named %s\n", qPrintable(view));
    return false;
  }
  if (view == QLatin1String("recompilations")) {
    // The first recompilation (row 0 is the first compile, which has no diff).
    RecompilationsTab* tab = detail->recompilations();
    tab->selectCompile(tab->model()->rowCount() > 1 ? 1 : 0);
  } else if (view == QLatin1String("kernels")) {
    waitFor([&] { return !detail->kernels()->isLoading(); });
  } else if (view == QLatin1String("graphs")) {
    GraphTab* graphs = detail->graphs();
    waitFor([&] { return graphs->model()->rowCount() > 0 && !graphs->isLoading(); });
    const pb::IrGraph* graph = graphs->viewer()->graph();
    for (int v = 0; graph != nullptr && v < graph->nodes_size(); ++v) {
      if (graph->nodes(v).op() == "matmul") {
        graphs->viewer()->selectNode(v);
        break;
      }
    }
  }
  QTest::qWait(600);
  return save(&window, file);
}

}  // namespace

int main(int argc, char* argv[]) {
  QApplication app(argc, argv);
  // Fresh settings: a splitter, sort order or colour scheme saved by the
  // person's own lazyscope-gui must not leak into the images.
  QTemporaryDir settingsDir;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settingsDir.path());
  QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir.path());
  const QStringList args = QApplication::arguments();
  if (args.size() < 4) {
    std::fputs("usage: make_screenshots HISTORY OUTDIR VIEW=RUN...\n", stderr);
    return 2;
  }
  const QString history = args[1];
  const QDir out(args[2]);
  int failures = 0;
  for (const ColorScheme scheme : {ColorScheme::Light, ColorScheme::Dark}) {
    applyColorScheme(scheme);
    const QString suffix = scheme == ColorScheme::Dark ? QStringLiteral("-dark.png") : QStringLiteral(".png");
    for (int i = 3; i < args.size(); ++i) {
      const qsizetype eq = args[i].indexOf(QLatin1Char('='));
      if (eq <= 0) {
        std::fprintf(stderr, "expected VIEW=RUN, got %s\n", qPrintable(args[i]));
        return 2;
      }
      const QString name = args[i].left(eq);
      const QString view = name.section(QLatin1Char('+'), 0, 0);
      QString file = name;
      file.replace(QLatin1Char('+'), QLatin1Char('-'));
      if (!shoot(history, view, args[i].mid(eq + 1), out.filePath(file + suffix))) ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
