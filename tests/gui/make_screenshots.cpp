// Makes the README's screenshots of the Graphs tab, the Compare view and the
// Run Script dialog, in a light and a dark (Fusion) palette, by grabbing the
// widgets offscreen: not a test, a reproducible way to refresh the images.
//
//   QT_QPA_PLATFORM=offscreen build/release/tests/gui/make_screenshots
//       HISTORY GRAPH_RUN COMPARE_A COMPARE_B OUTDIR
#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>
#include <QTabWidget>
#include <QTest>
#include <cstdio>

#include "dialogs/run_script_dialog.h"
#include "models/graph_list_model.h"
#include "views/compare_view.h"
#include "views/graph_tab.h"
#include "views/graph_viewer.h"
#include "windows/main_window.h"
#include "windows/run_actions.h"
#include "windows/run_detail_view.h"
#include "windows/run_list_page.h"

using namespace lazyscope;
using namespace lazyscope::gui;

namespace {

QPalette darkPalette() {
  QPalette p;
  p.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2e));
  p.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Base, QColor(0x1f, 0x1f, 0x22));
  p.setColor(QPalette::AlternateBase, QColor(0x27, 0x27, 0x2b));
  p.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Button, QColor(0x33, 0x33, 0x37));
  p.setColor(QPalette::ButtonText, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Highlight, QColor(0x3d, 0x7e, 0xd6));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::ToolTipBase, QColor(0x33, 0x33, 0x37));
  p.setColor(QPalette::ToolTipText, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9a, 0xa0));
  p.setColor(QPalette::Mid, QColor(0x55, 0x55, 0x5a));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
  return p;
}

template <typename Done>
bool waitFor(Done done) {
  for (int i = 0; i < 300 && !done(); ++i) QTest::qWait(50);
  QTest::qWait(200);
  return done();
}

void save(QWidget* widget, const QString& path) {
  if (!widget->grab().save(path)) std::fprintf(stderr, "could not write %s\n", qPrintable(path));
}

}  // namespace

int main(int argc, char* argv[]) {
  QApplication app(argc, argv);
  const QStringList args = QApplication::arguments();
  if (args.size() != 6) {
    std::fputs("usage: make_screenshots HISTORY GRAPH_RUN COMPARE_A COMPARE_B OUTDIR\n", stderr);
    return 2;
  }
  const QString history = args[1];
  const qint64 graphRun = args[2].toLongLong();
  const QString out = args[5];
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  const QPalette light = QApplication::style()->standardPalette();
  for (const bool dark : {false, true}) {
    QApplication::setPalette(dark ? darkPalette() : light);
    const QString suffix = dark ? QStringLiteral("-dark.png") : QStringLiteral(".png");

    MainWindow window;
    window.resize(1280, 860);
    window.show();
    window.selectRunWhenLoaded(graphRun);
    window.openHistory(history);
    GraphTab* graphs = window.runDetail()->graphs();
    window.runDetail()->tabs()->setCurrentWidget(graphs);
    waitFor([&] { return window.runDetail()->runId() == graphRun && graphs->model()->rowCount() > 0 && !graphs->isLoading(); });
    const pb::IrGraph* graph = graphs->viewer()->graph();
    for (int v = 0; graph != nullptr && v < graph->nodes_size(); ++v) {
      if (graph->nodes(v).op() == "matmul") {
        graphs->viewer()->selectNode(v);
        break;
      }
    }
    QTest::qWait(200);
    save(&window, out + QStringLiteral("/graphs") + suffix);

    CompareView* compare = window.runActions()->compareRuns(args[3].toLongLong(), args[4].toLongLong());
    compare->resize(1100, 720);
    waitFor([&] { return !compare->isLoading(); });
    save(compare, out + QStringLiteral("/compare") + suffix);
    compare->close();

    RunScriptDialog dialog(history, &window);
    ScriptRunOptions options;
    options.script = QStringLiteral("scripts/examples/linear_regression.py");
    options.args = {QStringLiteral("--steps"), QStringLiteral("200")};
    options.name = QStringLiteral("linreg lr=0.05");
    options.tags = {QStringLiteral("sweep"), QStringLiteral("lr")};
    options.deviceCount = 2;
    dialog.setOptions(options);
    dialog.show();
    QTest::qWait(600);  // the runner's --help answers
    save(&dialog, out + QStringLiteral("/run-script") + suffix);
  }
  return 0;
}
