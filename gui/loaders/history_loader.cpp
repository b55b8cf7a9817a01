#include "loaders/history_loader.h"

#include <QFuture>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>

#include "db/history_file.h"
#include "query/history_reader.h"

namespace lazyscope::gui {

namespace {

struct LoadResult {
  std::vector<pb::RunSummary> runs;
  QString error;  // empty on success
};

// Runs on a pool thread: touches nothing but its argument.
LoadResult readRuns(const std::string& path) {
  LoadResult result;
  try {
    const storage::HistoryReader reader(path);
    result.runs = reader.list_runs();
  } catch (const storage::HistoryError& e) {
    result.error = QString::fromUtf8(e.what());
  } catch (const std::exception& e) {
    result.error = HistoryLoader::tr("Could not read %1: %2")
                       .arg(QString::fromStdString(path), QString::fromUtf8(e.what()));
  }
  return result;
}

}  // namespace

HistoryLoader::HistoryLoader(QObject* parent) : QObject(parent) {}

HistoryLoader::~HistoryLoader() = default;

void HistoryLoader::load(const QString& path) {
  const quint64 generation = ++generation_;
  loading_ = true;
  emit started(path);
  // The continuation runs on this object's thread and is dropped if this
  // object is destroyed first.
  QtConcurrent::run(readRuns, path.toStdString())
      .then(this, [this, generation, path](QFuture<LoadResult> future) {
        if (generation != generation_) return;  // superseded by a newer load
        loading_ = false;
        LoadResult result = future.takeResult();
        if (result.error.isEmpty()) {
          emit loaded(path, result.runs);
        } else {
          emit failed(path, result.error);
        }
      });
}

void HistoryLoader::cancel() {
  ++generation_;
  loading_ = false;
}

}  // namespace lazyscope::gui
