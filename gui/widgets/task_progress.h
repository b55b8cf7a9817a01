// The status bar's report of long background work: what is running (label),
// how far (a fraction when the job can tell, else a busy bar) and a Cancel
// button. One per main window; every BackgroundJob under an object it
// serve()s reports here on its own.
//
// It appears only once some job has been running for kShowDelayMs, so quick
// reads (nearly all of them) do not make the status bar flicker, and hides
// when the last job ends. Cancel cancels every job shown: a run selection
// starts several reads at once, and the user wants all of them stopped.
#pragma once

#include <QSet>
#include <QTimer>
#include <QWidget>
#include <vector>

class QLabel;
class QProgressBar;
class QToolButton;

namespace lazyscope::gui {

class BackgroundJob;

class TaskProgress : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kShowDelayMs = 300;

  explicit TaskProgress(QWidget* parent = nullptr);
  ~TaskProgress() override;

  // Jobs whose object tree leads up to `root` report here.
  void serve(QObject* root);
  // The TaskProgress serving `object` or an ancestor of it, or nullptr.
  static TaskProgress* serving(const QObject* object);
  // Makes `job` report here (idempotent).
  void track(BackgroundJob* job);

  void cancelAll();
  int runningCount() const { return static_cast<int>(running_.size()); }
  QString text() const;
  QProgressBar* bar() const { return bar_; }
  QToolButton* cancelButton() const { return cancel_; }

 private:
  void onStarted(BackgroundJob* job);
  void onEnded(BackgroundJob* job);
  void refresh();

  QSet<BackgroundJob*> tracked_;
  std::vector<BackgroundJob*> running_;  // oldest first; the newest is named
  QTimer showTimer_;
  QTimer pollTimer_;  // reads the jobs' progress while shown
  QLabel* label_;
  QProgressBar* bar_;
  QToolButton* cancel_;
};

}  // namespace lazyscope::gui
