#include "loaders/script_run.h"

#include <sys/types.h>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QTimer>
#include <csignal>
#include <cstring>

namespace lazyscope::gui {
namespace {
// Often enough that a run appears and its steps count up live; each poll is
// one small read of the history in the background.
constexpr int kPollMs = 1000;
}  // namespace

const char *runFlag(const char *option) {
  for (const RunFlag &row : kRunFlags) {
    if (std::strcmp(row.option, option) == 0) return row.flag;
  }
  return "";
}

QStringList runCommandLine(const ScriptRunOptions &options, const QString &history, const QStringList &supported,
                           QStringList *skipped) {
  QStringList args{QStringLiteral("run"), QStringLiteral("--history"), history};
  const auto add = [&](const char *option, const QString &value, bool isSwitch = false) {
    const QString flag = QString::fromLatin1(runFlag(option));
    if (flag.isEmpty() || (!supported.isEmpty() && !supported.contains(flag))) {
      if (skipped != nullptr) skipped->append(flag.isEmpty() ? QString::fromLatin1(option) : flag);
      return;
    }
    args << flag;
    if (!isSwitch) args << value;
  };
  add("quiet", {}, true);
  if (!options.name.trimmed().isEmpty()) add("name", options.name.trimmed());
  for (const QString &tag : options.tags) add("tag", tag);
  if (options.deviceCount != 1) add("devices", QString::number(options.deviceCount));
  if (!options.deviceKind.isEmpty()) add("device", options.deviceKind);
  if (options.bf16) add("bf16", {}, true);
  // One flag with the ops separated by commas, as the runner documents it.
  if (!options.fallbackOps.isEmpty()) add("fallback", options.fallbackOps.join(QLatin1Char(',')));
  args << options.script;
  if (!options.args.isEmpty()) args << QStringLiteral("--") << options.args;
  return args;
}

QString runnerPath() {
  // Tests (and developers running from a build tree) point at another one.
  const QString overridden = qEnvironmentVariable("LAZYSCOPE_RUNNER");
  if (!overridden.isEmpty()) return overridden;
  return QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("lazyscope"));
}

ScriptRun::ScriptRun(QObject *parent) : QObject(parent), process_(new QProcess(this)), timer_(new QTimer(this)) {
  process_->setProcessChannelMode(QProcess::MergedChannels);
  timer_->setInterval(kPollMs);
  connect(timer_, &QTimer::timeout, this, &ScriptRun::poll);
  connect(process_, &QProcess::readyRead, this, [this] {
    const QString text = QString::fromUtf8(process_->readAll());
    output_ += text;
    emit outputReceived(text);
  });
  connect(process_, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
    timer_->stop();
    emit poll();  // one last read: the run's final status
    emit finished(exitCode, status == QProcess::CrashExit);
  });
}

ScriptRun::~ScriptRun() {
  // Closing the window must not leave an unrecorded orphan: interrupt the
  // run so that it is recorded as interrupted, and give it time to say so.
  if (isRunning()) {
    stop();
    if (!process_->waitForFinished(5000)) process_->kill();
  }
}

bool ScriptRun::start(const QString &program, const QStringList &arguments) {
  error_.clear();
  output_.clear();
  if (!QFileInfo(program).isExecutable()) {
    error_ = tr("The runner %1 was not found next to lazyscope-gui.").arg(program);
    return false;
  }
  process_->start(program, arguments);
  if (!process_->waitForStarted(5000)) {
    error_ = tr("Could not start %1: %2").arg(program, process_->errorString());
    return false;
  }
  timer_->start();
  emit poll();
  return true;
}

void ScriptRun::stop() {
  const qint64 id = pid();
  // QProcess::terminate() sends SIGTERM; SIGINT is Ctrl-C, which the runner
  // records as an interrupted run with the exit code a shell would show.
  if (id > 0) ::kill(static_cast<pid_t>(id), SIGINT);
}

bool ScriptRun::isRunning() const { return process_->state() != QProcess::NotRunning; }

qint64 ScriptRun::pid() const { return isRunning() ? process_->processId() : 0; }

}  // namespace lazyscope::gui
