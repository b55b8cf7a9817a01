// The mapping between step positions and x pixels of a timeline, and the
// zoom and pan operations on it, apart from any painting so that it can be
// tested on its own (as Hotspot does with its time axis).
//
// Positions are indexes into the run's step series (0 .. count), as doubles:
// bar i covers [i, i + 1). The visible window [first, first + span) is kept
// inside [0, count] and never narrower than kMinSpan steps.
#pragma once

#include <cstdint>

namespace lazyscope::gui {

class TimelineGeometry {
 public:
  // Narrowest window: a few bars, so that one bar never fills the view.
  static constexpr double kMinSpan = 4.0;

  // Sets the number of steps and shows all of them.
  void setCount(int64_t count);
  void setWidth(double pixels);

  int64_t count() const { return count_; }
  double width() const { return width_; }
  double first() const { return first_; }
  double span() const { return span_; }
  double last() const { return first_ + span_; }
  // Steps per pixel: above 1 the painter draws one aggregated bar per pixel.
  double stepsPerPixel() const;

  double toX(double position) const;
  double toPosition(double x) const;

  // factor > 1 zooms in, keeping the position under `anchorX` in place.
  void zoom(double factor, double anchorX);
  void pan(double pixels);  // positive moves the window right (later steps)
  void fit();
  void toStart();
  void toEnd();
  // Moves the window (keeping its span) so that `position` is in view.
  void ensureVisible(double position);
  bool isFit() const;

 private:
  void clamp();
  double minSpan() const;

  int64_t count_ = 0;
  double width_ = 1.0;
  double first_ = 0.0;
  double span_ = 1.0;
};

}  // namespace lazyscope::gui
