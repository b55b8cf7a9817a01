#include "loaders/history_loader.h"

#include <QFileInfo>
#include <exception>

#include "db/history_file.h"
#include "loaders/background_job.h"
#include "query/history_reader.h"

namespace lazyscope::gui {

struct HistoryLoader::LoadResult {
  std::vector<pb::RunSummary> runs;
  QString error;  // empty on success
};

HistoryLoader::LoadResult HistoryLoader::read(const std::string& path) {
  LoadResult result;
  try {
    const storage::HistoryReader reader(path);
    result.runs = reader.list_runs();
  } catch (const storage::HistoryError& e) {
    result.error = QString::fromUtf8(e.what());
  } catch (const std::exception& e) {
    result.error = tr("Could not read %1: %2").arg(QString::fromStdString(path), QString::fromUtf8(e.what()));
  }
  return result;
}

HistoryLoader::HistoryLoader(QObject* parent) : QObject(parent), job_(new BackgroundJob(this)) {
  connect(job_, &BackgroundJob::cancelled, this, [this] { emit cancelled(path_); });
}

HistoryLoader::~HistoryLoader() = default;

bool HistoryLoader::isLoading() const { return job_->isRunning(); }

void HistoryLoader::load(const QString& path) {
  path_ = path;
  emit started(path);
  job_->run(
      tr("Reading runs of %1…").arg(QFileInfo(path).fileName()), [path = path.toStdString()] { return read(path); },
      [this, path](const LoadResult& result) { deliver(path, result); });
}

void HistoryLoader::deliver(const QString& path, const LoadResult& result) {
  if (result.error.isEmpty()) {
    emit loaded(path, result.runs);
  } else {
    emit failed(path, result.error);
  }
}

void HistoryLoader::cancel() { job_->cancel(); }

}  // namespace lazyscope::gui
