#include "loaders/background_job.h"

#include "widgets/task_progress.h"

namespace lazyscope::gui {

BackgroundJob::BackgroundJob(QObject* parent) : QObject(parent) {}

BackgroundJob::~BackgroundJob() {
  // The pool thread may still be at it: let it stop early, nobody will read it.
  if (control_) control_->stop = true;
}

std::shared_ptr<JobControl> BackgroundJob::begin(const QString& label) {
  if (control_) control_->stop = true;  // the older run is superseded
  ++generation_;
  control_ = std::make_shared<JobControl>();
  running_ = true;
  label_ = label;
  // Looked up per run rather than once: a loader may be created before its
  // view is placed in the main window.
  if (TaskProgress* progress = TaskProgress::serving(this)) progress->track(this);
  emit started(label);
  return control_;
}

bool BackgroundJob::end(quint64 generation) {
  if (generation != generation_) return false;  // superseded or cancelled
  running_ = false;
  emit finished();
  return true;
}

void BackgroundJob::cancel() {
  if (control_) control_->stop = true;
  ++generation_;
  if (!running_) return;
  running_ = false;
  emit finished();
}

void BackgroundJob::cancelByUser() {
  if (!running_) return;
  cancel();
  emit cancelled();
}

}  // namespace lazyscope::gui
