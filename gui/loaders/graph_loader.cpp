#include "loaders/graph_loader.h"

#include <exception>
#include <unordered_map>

#include "loaders/background_job.h"
#include "query/history_reader.h"

namespace lazyscope::gui {

struct GraphLoader::ListResult {
  std::vector<GraphRow> rows;
  QString error;
};

struct GraphLoader::GraphResult {
  std::shared_ptr<const pb::IrGraph> graph;
  QString program;
  QString error;
};

namespace {

using ListResult = GraphLoader::ListResult;
using GraphResult = GraphLoader::GraphResult;

ListResult readList(const std::string& path, int64_t runId) {
  ListResult result;
  try {
    const storage::HistoryReader reader(path);
    std::unordered_map<uint64_t, pb::SourceLocation> sources;
    for (const pb::CompileEvent& compile : reader.compilations(runId)) {
      sources.try_emplace(compile.graph_hash(), compile.source());
    }
    const std::vector<pb::GraphInfo> graphs = reader.graphs(runId);
    bool missing = false;
    for (const pb::GraphInfo& info : graphs) missing = missing || !sources.contains(info.hash());
    // Graphs executed but compiled in no step of this run are rare; only then
    // are the (possibly many) executions read for their source.
    if (missing) {
      for (const pb::ExecuteEvent& execution : reader.executions(runId)) {
        sources.try_emplace(execution.graph_hash(), execution.source());
      }
    }
    for (const pb::GraphInfo& info : graphs) result.rows.push_back({info, sources[info.hash()]});
  } catch (const std::exception& e) {
    result.error = QString::fromUtf8(e.what());
  }
  return result;
}

GraphResult readGraph(const std::string& path, int64_t runId, uint64_t hash) {
  GraphResult result;
  try {
    const storage::HistoryReader reader(path);
    std::optional<pb::IrGraph> graph = reader.graph_ir(runId, hash);
    if (!graph) {
      result.error = GraphLoader::tr("The run did not store this graph's IR.");
      return result;
    }
    result.graph = std::make_shared<const pb::IrGraph>(std::move(*graph));
    result.program = QString::fromStdString(reader.program_text(runId, hash).value_or(""));
  } catch (const std::exception& e) {
    result.error = QString::fromUtf8(e.what());
  }
  return result;
}

}  // namespace

GraphLoader::GraphLoader(QObject* parent)
    : QObject(parent), listJob_(new BackgroundJob(this)), graphJob_(new BackgroundJob(this)) {
  connect(listJob_, &BackgroundJob::cancelled, this, [this] { emit cancelled(0); });
  connect(graphJob_, &BackgroundJob::cancelled, this, [this] { emit cancelled(hash_); });
}

bool GraphLoader::isLoading() const { return listJob_->isRunning() || graphJob_->isRunning(); }

void GraphLoader::loadList(const QString& path, int64_t runId) {
  graphJob_->cancel();  // a graph of the previous run is no longer wanted
  listJob_->run(
      tr("Reading the graphs of run %1…").arg(runId),
      [path = path.toStdString(), runId] { return readList(path, runId); },
      [this, runId](const ListResult& result) { deliverList(runId, result); });
}

void GraphLoader::deliverList(int64_t runId, const ListResult& result) {
  if (result.error.isEmpty()) {
    emit listLoaded(runId, result.rows);
  } else {
    emit failed(0, result.error);
  }
}

void GraphLoader::loadGraph(const QString& path, int64_t runId, uint64_t hash) {
  hash_ = hash;
  graphJob_->run(
      tr("Reading graph %1…").arg(hash, 16, 16, QLatin1Char('0')),
      [path = path.toStdString(), runId, hash] { return readGraph(path, runId, hash); },
      [this, hash](const GraphResult& result) { deliverGraph(hash, result); });
}

void GraphLoader::deliverGraph(uint64_t hash, const GraphResult& result) {
  if (result.graph) {
    emit graphLoaded(hash, result.graph, result.program);
  } else {
    emit failed(hash, result.error);
  }
}

void GraphLoader::cancel() {
  listJob_->cancel();
  graphJob_->cancel();
}

}  // namespace lazyscope::gui
