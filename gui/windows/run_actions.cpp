#include "windows/run_actions.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QFuture>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTableView>
#include <QToolButton>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <exception>

#include "dialogs/run_script_dialog.h"
#include "edit/history_editor.h"
#include "loaders/background_job.h"
#include "loaders/script_run.h"
#include "models/run_list_model.h"
#include "util/run_status.h"
#include "views/compare_view.h"
#include "widgets/message_banner.h"
#include "windows/main_window.h"
#include "windows/run_list_page.h"

namespace lazyscope::gui {
namespace {

const pb::RunSummary *findRun(const RunListModel *model, qint64 runId) {
  for (const pb::RunSummary &run : model->runs()) {
    if (run.run().id() == runId) return &run;
  }
  return nullptr;
}

}  // namespace

RunActions::RunActions(MainWindow *window) : QObject(window), window_(window) {
  const auto make = [this](const QString &text, const QKeySequence &key, const QString &tip, auto slot) {
    auto *action = new QAction(text, this);
    action->setShortcut(key);
    action->setStatusTip(tip);
    connect(action, &QAction::triggered, this, slot);
    return action;
  };
  rename_ = make(tr("Re&name…"), QKeySequence(Qt::Key_F2), tr("Rename the selected run"), &RunActions::askRename);
  tags_ = make(tr("Edit &Tags…"), QKeySequence(Qt::CTRL | Qt::Key_T), tr("Edit the selected run's tags"),
               &RunActions::askTags);
  delete_ = make(tr("&Delete…"), QKeySequence::Delete, tr("Delete the selected runs from the history"),
                 &RunActions::askDelete);
  compare_ = make(tr("&Compare"), QKeySequence(Qt::CTRL | Qt::Key_D), tr("Compare the two selected runs"),
                  &RunActions::compareSelected);
  exportBundle_ = make(tr("Export Run &Bundle…"), QKeySequence(),
                       tr("Save the selected run as a bundle that `lazyscope import` reads"),
                       [this] { askExport(RunExportFormat::Bundle); });
  exportTrace_ = make(tr("Export &Chrome Trace…"), QKeySequence(),
                      tr("Save the selected run as a trace for Perfetto or chrome://tracing"),
                      [this] { askExport(RunExportFormat::ChromeTrace); });
  runScript_ = make(tr("Run &Script…"), QKeySequence(Qt::CTRL | Qt::Key_R),
                    tr("Run a Python script with lazyscope and record it into this history"),
                    &RunActions::showRunDialog);
  runScript_->setIcon(QIcon::fromTheme(QStringLiteral("media-playback-start")));
  stop_ = make(tr("S&top Script"), QKeySequence(Qt::CTRL | Qt::Key_Period),
               tr("Interrupt the running script (as Ctrl-C would)"), &RunActions::stopScript);
  stop_->setEnabled(false);

  // The table's shortcuts work while it has focus; its context menu lists them.
  QTableView *table = window_->runListPage()->table();
  for (QAction *action : {rename_, tags_, delete_, compare_, exportBundle_, exportTrace_}) {
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    table->addAction(action);
  }
  table->setContextMenuPolicy(Qt::ActionsContextMenu);
  connect(table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunActions::updateEnabled);
  connect(table->model(), &QAbstractItemModel::modelReset, this, &RunActions::updateEnabled);

  progress_ = new QLabel(window_);
  progress_->setObjectName(QStringLiteral("scriptProgress"));
  progress_->hide();
  stopButton_ = new QToolButton(window_);
  stopButton_->setDefaultAction(stop_);
  stopButton_->hide();
  window_->statusBar()->addPermanentWidget(progress_);
  window_->statusBar()->addPermanentWidget(stopButton_);

  connect(this, &RunActions::edited, window_, &MainWindow::reload);
  connect(this, &RunActions::failed, this,
          [this](const QString &message) { window_->banner()->showMessage(MessageBanner::Kind::Error, message); });
  updateEnabled();
}

RunActions::~RunActions() = default;

QList<QAction *> RunActions::runActions() const {
  return {rename_, tags_, delete_, compare_, exportBundle_, exportTrace_, runScript_, stop_};
}

void RunActions::updateEnabled() {
  const int selected = static_cast<int>(window_->runListPage()->selectedRunIds().size());
  rename_->setEnabled(selected == 1);
  tags_->setEnabled(selected == 1);
  delete_->setEnabled(selected >= 1);
  compare_->setEnabled(selected == 2);
  exportBundle_->setEnabled(selected == 1);
  exportTrace_->setEnabled(selected == 1);
}

void RunActions::edit(const QString &what, std::function<void(const std::string &path)> change) {
  const QString path = window_->historyPath();
  if (path.isEmpty()) return;
  ++editing_;
  whenFinished(this, QtConcurrent::run([path = path.toStdString(), change]() -> QString {
                 try {
                   change(path);
                   return {};
                 } catch (const std::exception &e) {
                   return QString::fromUtf8(e.what());
                 }
               }),
               [this, what](const QFuture<QString> &done) {
                 const QString error = done.result();
                 --editing_;
                 if (error.isEmpty()) {
                   emit edited(what);
                 } else {
                   emit failed(tr("Could not %1. %2").arg(what, error));
                 }
               });
}

void RunActions::renameRun(qint64 runId, const QString &name) {
  edit(tr("rename run %1").arg(runId), [runId, name = name.toStdString()](const std::string &path) {
    storage::HistoryEditor(path).rename_run(runId, name);
  });
}

void RunActions::setTags(qint64 runId, const QStringList &tags) {
  std::vector<std::string> list;
  for (const QString &tag : tags) list.push_back(tag.toStdString());
  edit(tr("change the tags of run %1").arg(runId),
       [runId, list](const std::string &path) { storage::HistoryEditor(path).set_tags(runId, list); });
}

void RunActions::deleteRuns(const std::vector<int64_t> &runIds) {
  const QString what = runIds.size() == 1 ? tr("delete run %1").arg(runIds.front())
                                          : tr("delete %1 runs").arg(runIds.size());
  edit(what, [runIds](const std::string &path) {
    storage::HistoryEditor editor(path);
    for (qint64 id : runIds) editor.delete_run(id);
  });
}

void RunActions::askRename() {
  const std::vector<int64_t> ids = window_->runListPage()->selectedRunIds();
  if (ids.size() != 1) return;
  const pb::RunSummary *run = findRun(window_->runModel(), ids.front());
  bool ok = false;
  const QString name = QInputDialog::getText(window_, tr("Rename Run"), tr("New name of run %1:").arg(ids.front()),
                                             QLineEdit::Normal,
                                             run ? QString::fromStdString(run->run().name()) : QString(), &ok);
  if (!ok) return;
  if (name.trimmed().isEmpty()) {
    emit failed(tr("A run needs a name: run %1 was not renamed.").arg(ids.front()));
    return;
  }
  renameRun(ids.front(), name.trimmed());
}

void RunActions::askTags() {
  const std::vector<int64_t> ids = window_->runListPage()->selectedRunIds();
  if (ids.size() != 1) return;
  const pb::RunSummary *run = findRun(window_->runModel(), ids.front());
  QStringList current;
  if (run != nullptr) {
    for (const std::string &tag : run->run().tags()) current << QString::fromStdString(tag);
  }
  bool ok = false;
  const QString text = QInputDialog::getText(window_, tr("Edit Tags"),
                                             tr("Tags of run %1, separated by commas:").arg(ids.front()),
                                             QLineEdit::Normal, current.join(QStringLiteral(", ")), &ok);
  if (ok) setTags(ids.front(), splitList(text));
}

void RunActions::askDelete() {
  const std::vector<int64_t> ids = window_->runListPage()->selectedRunIds();
  if (ids.empty()) return;
  QStringList names;
  for (qint64 id : ids) {
    const pb::RunSummary *run = findRun(window_->runModel(), id);
    names << QStringLiteral("#%1 %2").arg(id).arg(run ? QString::fromStdString(run->run().name()) : QString());
  }
  const QString question = ids.size() == 1 ? tr("Delete run %1 and everything recorded for it?").arg(names.front())
                                           : tr("Delete these %1 runs and everything recorded for them?\n%2")
                                                 .arg(ids.size())
                                                 .arg(names.join(QLatin1Char('\n')));
  const auto answer = QMessageBox::question(window_, tr("Delete Runs"), question + tr("\n\nThis cannot be undone."),
                                            QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
  if (answer == QMessageBox::Yes) deleteRuns(ids);
}

CompareView *RunActions::compareRuns(qint64 a, qint64 b) {
  if (a > b) std::swap(a, b);  // the older run is the baseline
  auto *view = new CompareView(window_);
  view->setAttribute(Qt::WA_DeleteOnClose);
  view->compare(window_->historyPath(), a, b);
  view->show();
  return view;
}

void RunActions::compareSelected() {
  const std::vector<int64_t> ids = window_->runListPage()->selectedRunIds();
  if (ids.size() != 2) {
    window_->statusBar()->showMessage(tr("Select two runs to compare (Ctrl+click)."), 5000);
    return;
  }
  compareRuns(ids[0], ids[1]);
}

void RunActions::showRunDialog() {
  if (script_ != nullptr && script_->isRunning()) {
    emit failed(
        tr("A script is still running; stop it (Ctrl+.) before "
           "starting another."));
    return;
  }
  RunScriptDialog dialog(window_->historyPath(), window_);
  if (dialog.exec() != QDialog::Accepted) return;
  startScript(dialog.options());
}

bool RunActions::startScript(const ScriptRunOptions &options) {
  if (window_->historyPath().isEmpty()) {
    emit failed(tr("Open a history first: a run is recorded into it."));
    return false;
  }
  if (script_ != nullptr && script_->isRunning()) {
    emit failed(tr("A script is still running; stop it before starting another."));
    return false;
  }
  delete script_;
  script_ = new ScriptRun(this);
  connect(script_, &ScriptRun::poll, this, &RunActions::onScriptPoll);
  connect(script_, &ScriptRun::finished, this, [this](int exitCode, bool) { onScriptFinished(exitCode); });
  scriptName_ = options.name.isEmpty() ? QFileInfo(options.script).fileName() : options.name;
  if (!script_->start(runnerPath(), runCommandLine(options, window_->historyPath()))) {
    emit failed(script_->error());
    return false;
  }
  progress_->setText(tr("Running %1…").arg(scriptName_));
  progress_->show();
  stopButton_->show();
  stop_->setEnabled(true);
  return true;
}

void RunActions::askExport(RunExportFormat format) {
  const std::vector<int64_t> ids = window_->runListPage()->selectedRunIds();
  if (ids.size() != 1) return;
  const bool bundle = format == RunExportFormat::Bundle;
  const QString suggested = QStringLiteral("run-%1%2")
                                .arg(ids.front())
                                .arg(bundle ? QStringLiteral(".lsrun") : QStringLiteral(".trace.json"));
  const QString path = QFileDialog::getSaveFileName(
      window_, bundle ? tr("Export Run Bundle") : tr("Export Chrome Trace"), suggested,
      bundle ? tr("Run bundles (*.lsrun);;All files (*)") : tr("Chrome trace (*.json);;All files (*)"));
  if (!path.isEmpty()) exportRun(ids.front(), path, format);
}

void RunActions::exportRun(qint64 runId, const QString &path, RunExportFormat format) {
  // A big run's bundle takes a while to read and write: off the GUI thread,
  // reporting to the status bar meanwhile. A job per export: a second
  // export must not supersede (and so drop) the first.
  auto *job = new BackgroundJob(this);
  connect(job, &BackgroundJob::finished, job, &QObject::deleteLater);
  connect(job, &BackgroundJob::cancelled, this,
          [this, runId] { window_->statusBar()->showMessage(tr("Export of run %1 cancelled.").arg(runId), 8000); });
  job->run(
      tr("Exporting run %1…").arg(runId),
      [history = window_->historyPath(), runId, path, format](JobControl &control) {
        return exportRunToFile(history, runId, path, format, &control);
      },
      [this, path, runId](const QString &error) {
        if (!error.isEmpty()) {
          emit failed(error);
          return;
        }
        window_->statusBar()->showMessage(tr("Run %1 exported to %2").arg(runId).arg(path), 8000);
        emit exported(path);
      });
}

void RunActions::stopScript() {
  if (script_ == nullptr || !script_->isRunning()) return;
  progress_->setText(tr("Stopping %1…").arg(scriptName_));
  script_->stop();
}

void RunActions::onScriptPoll() {
  // Read the history again: the live run shows up (and counts its steps).
  if (!window_->isLoading()) window_->reload();
  if (script_ == nullptr || !script_->isRunning()) return;
  const qint64 pid = script_->pid();
  for (const pb::RunSummary &run : window_->runModel()->runs()) {
    if (run.run().pid() != pid) continue;
    progress_->setText(tr("Running %1 (run %2): step %3, %4 compiles")
                           .arg(scriptName_)
                           .arg(run.run().id())
                           .arg(run.steps())
                           .arg(run.compiles()));
    break;
  }
}

void RunActions::onScriptFinished(int exitCode) {
  stop_->setEnabled(false);
  stopButton_->hide();
  progress_->hide();
  window_->statusBar()->showMessage(
      tr("%1 finished with exit code %2; its run is in the list.").arg(scriptName_).arg(exitCode), 8000);
}

}  // namespace lazyscope::gui
