#include "loaders/compare_loader.h"

#include <exception>
#include <memory>

#include "analysis/compare.h"
#include "analysis/run_data.h"
#include "loaders/background_job.h"
#include "query/history_reader.h"

namespace lazyscope::gui {

struct CompareLoader::Result {
  std::shared_ptr<Comparison> comparison;  // shared: a QFuture result must be copyable
  QString error;
};

namespace {

CompareLoader::Result read(const std::string &path, int64_t runA, int64_t runB) {
  CompareLoader::Result result;
  try {
    const storage::HistoryReader reader(path);
    std::optional<storage::RunData> a = storage::load_run_data(reader, runA);
    std::optional<storage::RunData> b = storage::load_run_data(reader, runB);
    if (!a || !b) {
      result.error = CompareLoader::tr("Run %1 is no longer in the history.").arg(!a ? runA : runB);
      return result;
    }
    auto comparison = std::make_shared<Comparison>();
    comparison->runs = storage::compare_runs(*a, *b);
    comparison->fallbacksA = reader.fallback_groups(runA);
    comparison->fallbacksB = reader.fallback_groups(runB);
    comparison->stepsA = reader.step_series(runA);
    comparison->stepsB = reader.step_series(runB);
    result.comparison = std::move(comparison);
  } catch (const std::exception &e) {
    result.error = QString::fromUtf8(e.what());
  }
  return result;
}

}  // namespace

CompareLoader::CompareLoader(QObject *parent) : QObject(parent), job_(new BackgroundJob(this)) {
  connect(job_, &BackgroundJob::cancelled, this, &CompareLoader::cancelled);
}

bool CompareLoader::isLoading() const { return job_->isRunning(); }

void CompareLoader::cancel() { job_->cancel(); }

void CompareLoader::load(const QString &path, int64_t runA, int64_t runB) {
  job_->run(
      tr("Comparing runs %1 and %2…").arg(runA).arg(runB),
      [path = path.toStdString(), runA, runB] { return read(path, runA, runB); },
      [this](const Result &result) { deliver(result); });
}

void CompareLoader::deliver(const Result &result) {
  if (result.comparison) {
    emit loaded(*result.comparison);
  } else {
    emit failed(result.error);
  }
}

}  // namespace lazyscope::gui
