#include "widgets/timeline_geometry.h"

#include <algorithm>

namespace lazyscope::gui {

void TimelineGeometry::setCount(int64_t count) {
  count_ = std::max<int64_t>(count, 0);
  fit();
}

void TimelineGeometry::setWidth(double pixels) { width_ = std::max(pixels, 1.0); }

double TimelineGeometry::stepsPerPixel() const { return span_ / width_; }

double TimelineGeometry::toX(double position) const { return (position - first_) / span_ * width_; }

double TimelineGeometry::toPosition(double x) const { return first_ + x / width_ * span_; }

double TimelineGeometry::minSpan() const {
  // A run shorter than kMinSpan is shown whole and cannot zoom further.
  return std::min(kMinSpan, std::max(static_cast<double>(count_), 1.0));
}

void TimelineGeometry::zoom(double factor, double anchorX) {
  if (factor <= 0.0) return;
  const double anchor = toPosition(anchorX);
  span_ = span_ / factor;
  first_ = anchor - anchorX / width_ * span_;
  clamp();
}

void TimelineGeometry::pan(double pixels) {
  first_ += pixels / width_ * span_;
  clamp();
}

void TimelineGeometry::fit() {
  first_ = 0.0;
  span_ = std::max(static_cast<double>(count_), 1.0);
}

void TimelineGeometry::toStart() {
  first_ = 0.0;
  clamp();
}

void TimelineGeometry::toEnd() {
  first_ = static_cast<double>(count_) - span_;
  clamp();
}

void TimelineGeometry::ensureVisible(double position) {
  if (position < first_) {
    first_ = position;
  } else if (position + 1.0 > last()) {
    first_ = position + 1.0 - span_;
  }
  clamp();
}

bool TimelineGeometry::isFit() const { return first_ <= 0.0 && span_ >= std::max(static_cast<double>(count_), 1.0); }

void TimelineGeometry::clamp() {
  const double total = std::max(static_cast<double>(count_), 1.0);
  span_ = std::clamp(span_, minSpan(), total);
  first_ = std::clamp(first_, 0.0, total - span_);
}

}  // namespace lazyscope::gui
