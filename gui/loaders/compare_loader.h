// Reads what the Compare view shows about two runs off the GUI thread: the
// storage comparison (summary deltas, graphs, recompile reasons), each run's
// fallback groups and step times. A newer load drops an older one's result.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <vector>

#include "lazyscope/history.pb.h"

namespace lazyscope::gui {

class BackgroundJob;

struct Comparison {
  pb::RunComparison runs;  // deltas are B - A
  std::vector<pb::FallbackGroup> fallbacksA;
  std::vector<pb::FallbackGroup> fallbacksB;
  pb::StepSeries stepsA;
  pb::StepSeries stepsB;
};

class CompareLoader : public QObject {
  Q_OBJECT

 public:
  explicit CompareLoader(QObject *parent = nullptr);

  void load(const QString &path, int64_t runA, int64_t runB);
  bool isLoading() const;
  void cancel();

  struct Result;

 signals:
  void loaded(const lazyscope::gui::Comparison &comparison);
  void failed(const QString &message);
  // The user pressed Cancel in the status bar: nothing is delivered.
  void cancelled();

 private:
  void deliver(const Result &result);

  BackgroundJob *job_;
};

}  // namespace lazyscope::gui
