#include "query/step_median.h"

#include <algorithm>

namespace lazyscope::storage {

double median_ms(std::vector<int64_t> durations_ns) {
  if (durations_ns.empty()) return 0.0;
  constexpr double kNsPerMs = 1e6;
  const auto middle = durations_ns.begin() + static_cast<std::ptrdiff_t>(durations_ns.size() / 2);
  std::nth_element(durations_ns.begin(), middle, durations_ns.end());
  const double upper = static_cast<double>(*middle);
  if (durations_ns.size() % 2 == 1) return upper / kNsPerMs;
  // nth_element leaves everything below the middle before it: the lower middle
  // value is the largest of those.
  const double lower = static_cast<double>(*std::max_element(durations_ns.begin(), middle));
  return (lower + upper) / 2.0 / kNsPerMs;
}

}  // namespace lazyscope::storage
