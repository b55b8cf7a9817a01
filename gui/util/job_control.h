// What a background job and the GUI share while the job runs: a stop flag the
// GUI sets (Cancel, or a newer job superseding this one) and the job polls at
// points where stopping is cheap, and how far the job got, which the status
// bar polls to draw a fraction. Qt-free and lock-free so that pure code (the
// graph layout) can take it without knowing about Qt.
#pragma once

#include <atomic>

namespace lazyscope::gui {

struct JobControl {
  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  std::atomic<int> total{0};  // 0: the job cannot tell how far it is (busy bar)

  bool stopped() const { return stop.load(std::memory_order_relaxed); }
  void setProgress(int doneNow, int totalNow) {
    total.store(totalNow, std::memory_order_relaxed);
    done.store(doneNow, std::memory_order_relaxed);
  }
};

}  // namespace lazyscope::gui
