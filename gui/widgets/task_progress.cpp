#include "widgets/task_progress.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QToolButton>
#include <QVariant>
#include <algorithm>

#include "loaders/background_job.h"

namespace lazyscope::gui {

namespace {
// The property an object served by a TaskProgress carries (a QObject*).
constexpr const char* kServedBy = "lazyscopeTaskProgress";
constexpr int kPollMs = 100;
}  // namespace

TaskProgress::TaskProgress(QWidget* parent)
    : QWidget(parent), label_(new QLabel(this)), bar_(new QProgressBar(this)), cancel_(new QToolButton(this)) {
  setObjectName(QStringLiteral("taskProgress"));
  label_->setObjectName(QStringLiteral("taskLabel"));
  label_->setTextFormat(Qt::PlainText);
  bar_->setObjectName(QStringLiteral("taskBar"));
  bar_->setRange(0, 0);
  bar_->setMaximumWidth(120);
  bar_->setMaximumHeight(14);
  bar_->setTextVisible(false);
  cancel_->setObjectName(QStringLiteral("taskCancel"));
  cancel_->setText(tr("Cancel"));
  cancel_->setToolTip(tr("Stop this work; its result is dropped"));
  cancel_->setAutoRaise(true);
  connect(cancel_, &QToolButton::clicked, this, &TaskProgress::cancelAll);

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(6);
  layout->addWidget(label_);
  layout->addWidget(bar_);
  layout->addWidget(cancel_);

  showTimer_.setSingleShot(true);
  showTimer_.setInterval(kShowDelayMs);
  connect(&showTimer_, &QTimer::timeout, this, [this] {
    if (running_.empty()) return;
    refresh();
    show();
    pollTimer_.start();
  });
  pollTimer_.setInterval(kPollMs);
  connect(&pollTimer_, &QTimer::timeout, this, &TaskProgress::refresh);
  hide();
}

TaskProgress::~TaskProgress() = default;

void TaskProgress::serve(QObject* root) { root->setProperty(kServedBy, QVariant::fromValue<QObject*>(this)); }

TaskProgress* TaskProgress::serving(const QObject* object) {
  for (; object != nullptr; object = object->parent()) {
    const QVariant served = object->property(kServedBy);
    if (served.isValid()) return qobject_cast<TaskProgress*>(served.value<QObject*>());
  }
  return nullptr;
}

void TaskProgress::track(BackgroundJob* job) {
  if (tracked_.contains(job)) return;
  tracked_.insert(job);
  connect(job, &BackgroundJob::started, this, [this, job] { onStarted(job); });
  connect(job, &BackgroundJob::finished, this, [this, job] { onEnded(job); });
  connect(job, &QObject::destroyed, this, [this, job] {
    tracked_.remove(job);
    onEnded(job);
  });
}

void TaskProgress::onStarted(BackgroundJob* job) {
  std::erase(running_, job);
  running_.push_back(job);
  if (isVisible()) {
    refresh();
  } else if (!showTimer_.isActive()) {
    showTimer_.start();  // from the first job: a stream of quick ones still shows
  }
}

void TaskProgress::onEnded(BackgroundJob* job) {
  std::erase(running_, job);
  if (!running_.empty()) {
    refresh();
    return;
  }
  showTimer_.stop();
  pollTimer_.stop();
  hide();
}

void TaskProgress::cancelAll() {
  // cancelByUser() ends the job, which takes it out of running_: iterate a copy.
  const std::vector<BackgroundJob*> jobs = running_;
  for (BackgroundJob* job : jobs) job->cancelByUser();
}

QString TaskProgress::text() const { return label_->text(); }

void TaskProgress::refresh() {
  if (running_.empty()) return;
  const BackgroundJob* newest = running_.back();
  const int others = static_cast<int>(running_.size()) - 1;
  label_->setText(others == 0 ? newest->label() : tr("%1 (+%2 more)").arg(newest->label()).arg(others));
  const JobControl* control = newest->control();
  const int total = control != nullptr ? control->total.load() : 0;
  if (total > 0) {
    bar_->setRange(0, total);
    bar_->setValue(std::min(control->done.load(), total));
  } else {
    bar_->setRange(0, 0);  // busy: the job cannot tell how far it is
  }
}

}  // namespace lazyscope::gui
