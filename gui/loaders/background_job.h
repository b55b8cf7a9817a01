// One stream of background work of a loader or view: runs a function on the
// Qt pool and hands its result back on this object's thread, always from the
// event loop (never inside run()), and only if no newer run() or cancel()
// came in between. This is the generation-counter pattern every loader used
// to spell out for itself.
//
// Each run gets a JobControl; a function that takes `JobControl&` may poll
// its stop flag and report progress. A superseded or cancelled run has its
// flag set, so such a function can give up early.
//
// Runs report to the TaskProgress serving an ancestor object (the main
// window's status bar): it shows them when they take long and offers Cancel,
// which calls cancelByUser() and so emits cancelled().
#pragma once

#include <QFuture>
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QtConcurrent/QtConcurrentRun>
#include <memory>
#include <type_traits>
#include <utility>

#include "util/job_control.h"

namespace lazyscope::gui {

// Calls done(future) from `owner`'s event loop once `future` has finished,
// unless `owner` was destroyed first. Through a QFutureWatcher owned by
// `owner` rather than QFuture::then(owner, ...): Qt 6.4's then() reads the
// owner's QPointer on the pool thread and posts to the raw pointer, racing
// with the owner's destruction on its own thread (a window closed while a
// read runs); a watcher's destructor detaches it under the future's own
// lock, and the watcher posts its finished() even for a future that has
// already finished, so `done` never runs inside this call.
template <class T, class Done> void whenFinished(QObject* owner, QFuture<T> future, Done done) {
  auto* watcher = new QFutureWatcher<T>(owner);
  QObject::connect(watcher, &QFutureWatcherBase::finished, owner, [watcher, done = std::move(done)]() mutable {
    watcher->deleteLater();
    done(watcher->future());
  });
  watcher->setFuture(std::move(future));
}

class BackgroundJob : public QObject {
  Q_OBJECT

 public:
  explicit BackgroundJob(QObject* parent);
  ~BackgroundJob() override;

  // Runs `work` (callable as work() or work(JobControl&)) on a pool thread
  // and calls deliver(result) here unless superseded or cancelled. `work`
  // must touch nothing but what it captured; its result must be copyable.
  template <class Work, class Deliver> void run(const QString& label, Work work, Deliver deliver);

  // Drops the result of the run under way, if any (no cancelled() signal:
  // the caller itself no longer wants it).
  void cancel();
  // Cancel pressed by the user: as cancel(), then cancelled() so that the
  // view can say what was stopped and how to get it back.
  void cancelByUser();

  bool isRunning() const { return running_; }
  QString label() const { return label_; }
  // The run under way's control (for its progress), or nullptr.
  const JobControl* control() const { return running_ ? control_.get() : nullptr; }

 signals:
  void started(const QString& label);
  // The run ended: delivered, cancelled, or superseded by one that is not
  // running any more.
  void finished();
  void cancelled();

 private:
  std::shared_ptr<JobControl> begin(const QString& label);
  // True when `generation` is still the newest run (then it ends here).
  bool end(quint64 generation);

  quint64 generation_ = 0;
  bool running_ = false;
  QString label_;
  std::shared_ptr<JobControl> control_;
};

template <class Work, class Deliver> void BackgroundJob::run(const QString& label, Work work, Deliver deliver) {
  std::shared_ptr<JobControl> control = begin(label);
  const quint64 generation = generation_;
  auto task = [work = std::move(work), control]() mutable {
    if constexpr (std::is_invocable_v<Work&, JobControl&>) {
      return work(*control);
    } else {
      return work();
    }
  };
  using Result = std::invoke_result_t<decltype(task)&>;
  whenFinished(this, QtConcurrent::run(std::move(task)),
               [this, generation, deliver = std::move(deliver)](QFuture<Result> future) mutable {
                 if (end(generation)) deliver(future.takeResult());
               });
}

}  // namespace lazyscope::gui
