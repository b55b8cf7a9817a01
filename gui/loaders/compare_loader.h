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

struct Comparison {
  pb::RunComparison runs; // deltas are B - A
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
  bool isLoading() const { return loading_; }

  struct Result;

signals:
  void loaded(const lazyscope::gui::Comparison &comparison);
  void failed(const QString &message);

private:
  void deliver(quint64 generation, const Result &result);

  quint64 generation_ = 0;
  bool loading_ = false;
};

} // namespace lazyscope::gui
