#include "loaders/run_detail_loader.h"

#include <exception>
#include <memory>

#include "analysis/diagnosis.h"
#include "analysis/run_data.h"
#include "db/history_file.h"
#include "loaders/background_job.h"
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

RunDetailLoader::RunDetailLoader(QObject* parent) : QObject(parent), job_(new BackgroundJob(this)) {
  connect(job_, &BackgroundJob::cancelled, this, [this] { emit cancelled(runId_); });
}

RunDetailLoader::~RunDetailLoader() = default;

bool RunDetailLoader::isLoading() const { return job_->isRunning(); }

void RunDetailLoader::load(const QString& path, int64_t runId) {
  runId_ = runId;
  emit started(runId);
  job_->run(
      tr("Reading run %1…").arg(runId), [path = path.toStdString(), runId] { return read(path, runId); },
      [this](const LoadResult& result) { deliver(result); });
}

void RunDetailLoader::deliver(const LoadResult& result) {
  if (result.detail) {
    emit loaded(*result.detail);
  } else {
    emit failed(result.runId, result.error);
  }
}

void RunDetailLoader::cancel() { job_->cancel(); }

}  // namespace lazyscope::gui
