// Two recorded runs side by side: summary deltas, graphs matched by their
// structural hash, and how the reasons for recompiling changed. Deltas are
// B - A, so a negative compile_ms delta means B compiled for less time.
// Each summary delta carries its verdict (better, worse, or neither: steps and
// executions are work, not cost) and the noise below which a change of a time
// is no verdict: the median absolute deviation of the runs' own step,
// compile or execution times (times sqrt(n) for a sum of n of them); with
// fewer than three of them, the largest one stands for the spread.
#pragma once

#include "analysis/run_data.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

pb::RunComparison compare_runs(const RunData& a, const RunData& b);

}  // namespace lazyscope::storage
