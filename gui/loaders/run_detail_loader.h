// Reads what the detail area shows about one run (summary, diagnosis,
// uncached compiles with their IR) off the GUI thread.
//
// Selecting another run before the previous read finished supersedes it:
// every load takes a new generation number and a result whose generation is
// no longer the newest is dropped, so only the run selected last is shown.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::gui {

class BackgroundJob;

struct RunDetail {
  int64_t runId = 0;
  pb::RunSummary summary;
  std::vector<pb::Finding> findings;       // most severe first
  std::vector<pb::CompileEvent> compiles;  // uncached, in order, with their IR
  // Graphs compiles were compared with that the run did not compile itself
  // (looked up by hash); graphs of `compiles` are not repeated here.
  std::unordered_map<uint64_t, pb::IrGraph> otherGraphs;

  // The IR of graph `hash`, or nullptr when not stored.
  const pb::IrGraph* graph(uint64_t hash) const;
};

class RunDetailLoader : public QObject {
  Q_OBJECT

 public:
  explicit RunDetailLoader(QObject* parent = nullptr);
  ~RunDetailLoader() override;

  // Starts reading run `runId` of `path`; supersedes any load under way.
  void load(const QString& path, int64_t runId);
  // Drops the result of the load under way, if any.
  void cancel();
  bool isLoading() const;

 signals:
  void started(qint64 runId);
  void loaded(const lazyscope::gui::RunDetail& detail);
  void failed(qint64 runId, const QString& message);
  // The user pressed Cancel in the status bar: nothing is delivered.
  void cancelled(qint64 runId);

 private:
  struct LoadResult;

  // Runs on a pool thread: touches nothing but its arguments.
  static LoadResult read(const std::string& path, int64_t runId);
  void deliver(const LoadResult& result);

  BackgroundJob* job_;
  int64_t runId_ = 0;  // of the load under way or last made
};

}  // namespace lazyscope::gui
