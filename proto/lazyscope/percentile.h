// The one definition of a percentile that every figure uses: the engine's
// metrics report (and the snapshots it publishes), the metrics storage
// derives from events, and so the CLI and the GUI. Linear interpolation
// between the two nearest ranks, NumPy's default (`numpy.percentile`,
// method="linear"): p50 of {24, 33} is 28.5, not one of the two. It lives
// in the protobuf library, as event_text does, because the engine and
// storage both use it and neither may link the other.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace lazyscope::stats {

// Where quantile `q` (0..1) of `n` sorted values lies: between index `lower`
// and `lower + 1`, `fraction` of the way.
struct Rank {
  size_t lower = 0;
  double fraction = 0.0;
};

inline Rank percentile_rank(size_t n, double q) {
  if (n == 0) return {};
  const double position = (q <= 0 ? 0.0 : q >= 1 ? 1.0 : q) * static_cast<double>(n - 1);
  const double lower = std::floor(position);
  return {static_cast<size_t>(lower), position - lower};
}

// Quantile `q` of `sorted` (ascending); 0 when empty.
inline double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const Rank r = percentile_rank(sorted.size(), q);
  if (r.lower + 1 >= sorted.size() || r.fraction == 0.0) return sorted[r.lower];
  return sorted[r.lower] + r.fraction * (sorted[r.lower + 1] - sorted[r.lower]);
}

}  // namespace lazyscope::stats
