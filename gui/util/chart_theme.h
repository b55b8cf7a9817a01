// The colours a Qt chart takes from the window's palette (light or dark):
// one place for the Charts and Kernels views.
#pragma once

class QChart;
class QPalette;

namespace lazyscope::gui {

// Background, title, legend labels and every axis (labels, title, a faint
// grid, the axis line) from `pal`; the series' colours stay the caller's.
void applyChartPalette(QChart* chart, const QPalette& pal);

}  // namespace lazyscope::gui
