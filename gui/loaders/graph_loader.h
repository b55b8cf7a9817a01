// Reads the Graphs tab's data off the GUI thread: the list of a run's graphs
// (with the source line that first compiled or ran each), and one graph's IR
// and program text. As RunDetailLoader, each kind of load takes a generation
// number and a superseded result is dropped.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <memory>
#include <vector>

#include "lazyscope/history.pb.h"
#include "lazyscope/ir.pb.h"

namespace lazyscope::gui {

class BackgroundJob;

struct GraphRow {
  pb::GraphInfo info;
  pb::SourceLocation source;  // the sync that first compiled (else ran) it
};

class GraphLoader : public QObject {
  Q_OBJECT

 public:
  explicit GraphLoader(QObject* parent = nullptr);

  void loadList(const QString& path, int64_t runId);
  void loadGraph(const QString& path, int64_t runId, uint64_t hash);
  void cancel();
  bool isLoading() const;

 signals:
  void listLoaded(qint64 runId, const std::vector<lazyscope::gui::GraphRow>& rows);
  void graphLoaded(quint64 hash, std::shared_ptr<const lazyscope::pb::IrGraph> graph, const QString& programText);
  // `hash` is 0 for a failed list.
  void failed(quint64 hash, const QString& message);
  // The user pressed Cancel in the status bar; `hash` as for failed().
  void cancelled(quint64 hash);

 public:
  struct ListResult;
  struct GraphResult;

 private:
  void deliverList(int64_t runId, const ListResult& result);
  void deliverGraph(uint64_t hash, const GraphResult& result);

  // Two streams: reading a graph does not drop the list read, and back.
  BackgroundJob* listJob_;
  BackgroundJob* graphJob_;
  uint64_t hash_ = 0;  // of the graph read under way or last made
};

}  // namespace lazyscope::gui
