#include "loaders/graph_loader.h"

#include <QFuture>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>
#include <unordered_map>

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

GraphLoader::GraphLoader(QObject* parent) : QObject(parent) {}

void GraphLoader::loadList(const QString& path, int64_t runId) {
  const quint64 generation = ++listGeneration_;
  ++graphGeneration_;  // a graph of the previous run is no longer wanted
  listLoading_ = true;
  graphLoading_ = false;
  QtConcurrent::run(&readList, path.toStdString(), runId)
      .then(this, [this, generation, runId](const ListResult& result) {
        // then() runs this at once when the read already finished: queue it
        // (as RunDetailLoader does) so that results always come later.
        QMetaObject::invokeMethod(this, [this, generation, runId, result] { deliverList(generation, runId, result); }, Qt::QueuedConnection);
      });
}

void GraphLoader::deliverList(quint64 generation, int64_t runId, const ListResult& result) {
        if (generation != listGeneration_) return;
        listLoading_ = false;
        if (result.error.isEmpty()) {
          emit listLoaded(runId, result.rows);
        } else {
          emit failed(0, result.error);
        }
}

void GraphLoader::loadGraph(const QString& path, int64_t runId, uint64_t hash) {
  const quint64 generation = ++graphGeneration_;
  graphLoading_ = true;
  QtConcurrent::run(&readGraph, path.toStdString(), runId, hash)
      .then(this, [this, generation, hash](const GraphResult& result) {
        QMetaObject::invokeMethod(this, [this, generation, hash, result] { deliverGraph(generation, hash, result); }, Qt::QueuedConnection);
      });
}

void GraphLoader::deliverGraph(quint64 generation, uint64_t hash, const GraphResult& result) {
        if (generation != graphGeneration_) return;
        graphLoading_ = false;
        if (result.graph) {
          emit graphLoaded(hash, result.graph, result.program);
        } else {
          emit failed(hash, result.error);
        }
}

void GraphLoader::cancel() {
  ++listGeneration_;
  ++graphGeneration_;
  listLoading_ = graphLoading_ = false;
}

}  // namespace lazyscope::gui
