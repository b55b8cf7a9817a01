// Reads the run list of a history file off the GUI thread.
//
// load() may be called again before the previous load finished (the user
// opened another file, pressed F5 twice): every load takes a new generation
// number and a result whose generation is no longer the newest is dropped, so
// only the last request ever reaches the window.
#pragma once

#include <QObject>
#include <QString>
#include <string>
#include <vector>

#include "lazyscope/history.pb.h"

namespace lazyscope::gui {

class BackgroundJob;

class HistoryLoader : public QObject {
  Q_OBJECT

 public:
  explicit HistoryLoader(QObject* parent = nullptr);
  ~HistoryLoader() override;

  // Starts reading `path` in the background; supersedes any load under way.
  void load(const QString& path);
  // Drops the result of the load under way, if any.
  void cancel();
  bool isLoading() const;

 signals:
  void started(const QString& path);
  void loaded(const QString& path, const std::vector<lazyscope::pb::RunSummary>& runs);
  // `message` is the storage library's own (it names the file and the fault).
  void failed(const QString& path, const QString& message);
  // The user pressed Cancel in the status bar: nothing is delivered.
  void cancelled(const QString& path);

 private:
  struct LoadResult;  // what a background read hands back

  // Runs on a pool thread: touches nothing but its argument.
  static LoadResult read(const std::string& path);
  void deliver(const QString& path, const LoadResult& result);

  BackgroundJob* job_;
  QString path_;  // of the load under way or last made
};

}  // namespace lazyscope::gui
