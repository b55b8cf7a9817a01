// The Timeline tab: the step timeline with its legend, buttons for the
// keyboard's zoom and fit, the range in view, the selected step's breakdown,
// and export as PNG or SVG. Selecting a step is re-emitted for other views
// (the run detail view selects that step's compile in Recompilations).
// A run of several replicas (threads or process ranks, each its own steps)
// shows a lane per replica, side by side on one step axis.
#pragma once

#include <QWidget>
#include "loaders/run_profile_loader.h"

class QLabel;

namespace lazyscope::gui {

class TimelineWidget;
struct RunProfile;

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);
  ~TimelineView() override;

  void setProfile(const RunProfile& profile);
  void clear();

  TimelineWidget* timeline() const { return timeline_; }
  // Saves the timeline as .png or .svg; returns an error message or "".
  QString exportImage(const QString& path);

 signals:
  void stepSelected(qint64 step);  // -1: none

 private:
  void showRange(qint64 first, qint64 last);
  void showSelection(qint64 step);

  TimelineWidget* timeline_;
  QLabel* range_;
  QLabel* selection_;
};

}  // namespace lazyscope::gui
