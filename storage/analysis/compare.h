// Two recorded runs side by side: summary deltas, graphs matched by their
// structural hash, and how the reasons for recompiling changed. Deltas are
// B - A, so a negative compile_ms delta means B compiled for less time.
#pragma once

#include "analysis/run_data.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

pb::RunComparison compare_runs(const RunData& a, const RunData& b);

}  // namespace lazyscope::storage
