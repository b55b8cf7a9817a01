#include "loaders/history_loader.h"

#include <QFuture>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>

#include "db/history_file.h"
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
    result.error = tr("Could not read %1: %2")
                       .arg(QString::fromStdString(path), QString::fromUtf8(e.what()));
  }
  return result;
}

HistoryLoader::HistoryLoader(QObject* parent) : QObject(parent) {}

HistoryLoader::~HistoryLoader() = default;

void HistoryLoader::load(const QString& path) {
  const quint64 generation = ++generation_;
  loading_ = true;
  emit started(path);
  // The continuation runs on this object's thread and is dropped if this
  // object is destroyed first. When the read has already finished by the time
  // it is attached (a tiny or unreadable file), Qt runs it at once, inside
  // this call; so it only queues the delivery, which then always comes from
  // the event loop, after load() has returned and after any newer load().
  QtConcurrent::run(&HistoryLoader::read, path.toStdString())
      .then(this, [this, generation, path](QFuture<LoadResult> future) {
        QMetaObject::invokeMethod(
            this,
            [this, generation, path, result = future.takeResult()] {
              deliver(generation, path, result);
            },
            Qt::QueuedConnection);
      });
}

void HistoryLoader::deliver(quint64 generation, const QString& path, const LoadResult& result) {
  if (generation != generation_) return;  // superseded by a newer load, or cancelled
  loading_ = false;
  if (result.error.isEmpty()) {
    emit loaded(path, result.runs);
  } else {
    emit failed(path, result.error);
  }
}

void HistoryLoader::cancel() {
  ++generation_;
  loading_ = false;
}

}  // namespace lazyscope::gui
