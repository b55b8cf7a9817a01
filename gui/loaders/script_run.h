// One `lazyscope run` started from the GUI: builds its command line, starts
// it as a QProcess, and while it lives polls the history for its run (the
// runner records it from its first event) so that the run list can show it
// at once. stop() sends SIGINT, as Ctrl-C would: the runner turns it into a
// KeyboardInterrupt and records the run as interrupted.
#pragma once

#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>

class QTimer;

namespace lazyscope::gui {

struct ScriptRunOptions {
  QString script;
  QStringList args;  // the script's own arguments
  QString name;      // empty: the runner's default (the file name)
  QStringList tags;
  QString deviceKind;  // empty: the runner's default
  int deviceCount = 1;
  bool bf16 = false;
  QStringList fallbackOps;  // ops forced to fall back to the host
};

// The runner's flag for each option, in one table so that a renamed or new
// flag is one line to change; it mirrors `lazyscope run --help` (--history
// is always passed, --progress-every is moot under --quiet). `flag` empty:
// the option is not passed.
struct RunFlag {
  const char *option;  // "name", "tag", "device", "devices", "bf16",
                       // "fallback", "quiet"
  const char *flag;
};
inline constexpr RunFlag kRunFlags[] = {
    {"name", "--name"},
    {"tag", "--tag"},
    {"device", "--device"},
    {"devices", "--devices"},
    {"bf16", "--bf16"},
    {"fallback", "--force-fallback"},
    // The GUI shows progress itself (it polls the history); the runner's
    // progress line would only fill the output pane with redraws.
    {"quiet", "--quiet"},
};
const char *runFlag(const char *option);

// `lazyscope` arguments for a run recorded into `history`: `run --history H
// --quiet [flags] SCRIPT -- ARGS`. Options whose flag is not in `supported` (the
// flags `lazyscope --help` lists; empty: assume all) are left out and named in
// `skipped`.
QStringList runCommandLine(const ScriptRunOptions &options, const QString &history, const QStringList &supported = {},
                           QStringList *skipped = nullptr);

// The `lazyscope` binary installed next to this program ($LAZYSCOPE_RUNNER
// if set).
QString runnerPath();

class ScriptRun : public QObject {
  Q_OBJECT

 public:
  explicit ScriptRun(QObject *parent = nullptr);
  ~ScriptRun() override;

  // Starts `program` with `arguments`; false (and error()) when it cannot.
  bool start(const QString &program, const QStringList &arguments);
  // Sends SIGINT; the run ends as interrupted.
  void stop();
  bool isRunning() const;
  qint64 pid() const;
  QString error() const { return error_; }
  // Everything the process printed so far (stdout and stderr).
  QString output() const { return output_; }

 signals:
  // Every poll interval while the process lives: time to re-read the history.
  void poll();
  void outputReceived(const QString &text);
  void finished(int exitCode, bool crashed);

 private:
  QProcess *process_;
  QTimer *timer_;
  QString error_;
  QString output_;
};

}  // namespace lazyscope::gui
