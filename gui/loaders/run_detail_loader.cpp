#include "loaders/run_detail_loader.h"

#include <QFuture>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>
#include <memory>

#include "analysis/diagnosis.h"
#include "analysis/run_data.h"
#include "db/history_file.h"
#include "query/history_reader.h"

namespace lazyscope::gui {

const pb::IrGraph* RunDetail::graph(uint64_t hash) const {
  for (const pb::CompileEvent& compile : compiles) {
    if (compile.graph_hash() == hash && compile.has_graph()) return &compile.graph();
  }
  const auto found = otherGraphs.find(hash);
  return found == otherGraphs.end() ? nullptr : &found->second;
}

struct RunDetailLoader::LoadResult {
  std::shared_ptr<RunDetail> detail;  // shared: a QFuture result must be copyable
  int64_t runId = 0;
  QString error;  // empty on success
};

RunDetailLoader::LoadResult RunDetailLoader::read(const std::string& path, int64_t runId) {
  LoadResult result;
  result.runId = runId;
  try {
    const storage::HistoryReader reader(path);
    std::optional<storage::RunData> data = storage::load_run_data(reader, runId);
    if (!data) {
      result.error = tr("Run %1 is no longer in the history.").arg(runId);
      return result;
    }
    auto detail = std::make_shared<RunDetail>();
    detail->runId = runId;
    detail->findings = storage::diagnose(*data);
    detail->summary = std::move(data->summary);
    detail->compiles = std::move(data->compiles);
    for (const pb::CompileEvent& compile : detail->compiles) {
      const uint64_t hash = compile.compared_with();
      if (hash == 0 || detail->graph(hash) != nullptr) continue;
      if (auto ir = reader.graph_ir(runId, hash)) detail->otherGraphs.emplace(hash, std::move(*ir));
    }
    result.detail = std::move(detail);
  } catch (const storage::HistoryError& e) {
    result.error = QString::fromUtf8(e.what());
  } catch (const std::exception& e) {
    result.error = tr("Could not read run %1: %2").arg(runId).arg(QString::fromUtf8(e.what()));
  }
  return result;
}

RunDetailLoader::RunDetailLoader(QObject* parent) : QObject(parent) {}

RunDetailLoader::~RunDetailLoader() = default;

void RunDetailLoader::load(const QString& path, int64_t runId) {
  const quint64 generation = ++generation_;
  loading_ = true;
  emit started(runId);
  // As in HistoryLoader: the continuation only queues the delivery, so that
  // it always comes from the event loop, after load() returned.
  QtConcurrent::run(&RunDetailLoader::read, path.toStdString(), runId)
      .then(this, [this, generation](QFuture<LoadResult> future) {
        QMetaObject::invokeMethod(
            this, [this, generation, result = future.takeResult()] { deliver(generation, result); },
            Qt::QueuedConnection);
      });
}

void RunDetailLoader::deliver(quint64 generation, const LoadResult& result) {
  if (generation != generation_) return;  // superseded by a newer load, or cancelled
  loading_ = false;
  if (result.detail) {
    emit loaded(*result.detail);
  } else {
    emit failed(result.runId, result.error);
  }
}

void RunDetailLoader::cancel() {
  ++generation_;
  loading_ = false;
}

}  // namespace lazyscope::gui
