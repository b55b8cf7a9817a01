// The "typical step time" of a run: the median step duration after warm-up.
#pragma once

#include <cstdint>
#include <vector>

namespace lazyscope::storage {

// Median of the durations in milliseconds; the mean of the two middle values
// for an even count, 0 for none.
double median_ms(std::vector<int64_t> durations_ns);

}  // namespace lazyscope::storage
