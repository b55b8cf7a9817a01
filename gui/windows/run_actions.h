// What a person does to runs from the run list, and to new ones: rename
// (F2), edit tags (Ctrl+T), delete (Delete, after a confirmation), compare
// two selected runs (Ctrl+D), and run a script (Ctrl+R) watched live.
// Edits go through storage's HistoryEditor on a pool thread, then the
// history is read again; a refusal (locked or read-only file, a run still
// being recorded) is shown in the window's banner.
#pragma once

#include <QList>
#include <QObject>
#include <QPointer>
#include <QStringList>
#include <functional>

#include "loaders/run_export.h"

class QAction;
class QLabel;
class QMenu;
class QToolButton;

namespace lazyscope::gui {

class BackgroundJob;

class CompareView;
class MainWindow;
class ScriptRun;
struct ScriptRunOptions;

class RunActions : public QObject {
  Q_OBJECT

 public:
  explicit RunActions(MainWindow *window);
  ~RunActions() override;

  // The actions, for menus: rename, tags, delete, compare, then run script.
  QList<QAction *> runActions() const;
  QAction *runScriptAction() const { return runScript_; }

  // The edits themselves (the menu items ask first). Each runs in the
  // background and emits edited() or failed().
  void renameRun(qint64 runId, const QString &name);
  void setTags(qint64 runId, const QStringList &tags);
  void deleteRuns(const std::vector<int64_t> &runIds);
  // Writes run `runId` to `path` in the background; emits exported(path)
  // or failed(message) when done.
  void exportRun(qint64 runId, const QString &path, RunExportFormat format);
  // Opens a Compare window for the two runs (older as A).
  CompareView *compareRuns(qint64 a, qint64 b);
  // Starts `lazyscope run` into the open history; false when it could not
  // start (the banner says why).
  bool startScript(const ScriptRunOptions &options);
  void stopScript();
  ScriptRun *scriptRun() const { return script_; }
  bool isEditing() const { return editing_ > 0; }

 signals:
  void edited(const QString &what);
  void failed(const QString &message);
  void exported(const QString &path);

 private:
  void askRename();
  void askTags();
  void askDelete();
  void compareSelected();
  void askExport(RunExportFormat format);
  void showRunDialog();
  void updateEnabled();
  void edit(const QString &what, std::function<void(const std::string &path)> change);
  void onScriptPoll();
  void onScriptFinished(int exitCode);

  MainWindow *window_;
  QAction *rename_;
  QAction *tags_;
  QAction *delete_;
  QAction *compare_;
  QAction *exportBundle_;
  QAction *exportTrace_;
  QAction *runScript_;
  QAction *stop_;
  int editing_ = 0;
  ScriptRun *script_ = nullptr;
  QString scriptName_;
  QLabel *progress_ = nullptr;
  QToolButton *stopButton_ = nullptr;
};

}  // namespace lazyscope::gui
