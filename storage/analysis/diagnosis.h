// Why a run is slow, as a table of rules. Each rule reads the run's data and
// returns findings: what happens, where, the evidence, and the change to make.
// A new rule is one more row in diagnosis.cpp.
#pragma once

#include <span>
#include <vector>

#include "analysis/run_data.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

struct DiagnosisRule {
  const char* id;         // Finding.rule
  const char* looks_for;  // one line, for documentation and --help
  std::vector<pb::Finding> (*find)(const RunData& run);
};

std::span<const DiagnosisRule> diagnosis_rules();

// Every rule's findings, most severe first, then most time lost.
std::vector<pb::Finding> diagnose(const RunData& run);

// Thresholds, with their reason.
// A recompile group or a fallback group costing this share of the total step
// time is critical: it alone makes the run a tenth slower.
inline constexpr double kCriticalShareOfStepTime = 0.10;
// Host-to-device transfers above this share of step time are worth
// overlapping with compute; below it the parallel loader would gain little.
inline constexpr double kTransferShareThreshold = 0.10;
// ...and add up to at least this much: a run of a few microsecond-steps (one
// that failed early) would otherwise report a few bytes' upload as "367% of
// step time", when overlapping it could save nothing measurable.
inline constexpr double kMinTransferMs = 1.0;
// Replicas (threads or worker processes): a rank whose steps compute this
// much longer than the median of the others (outside collectives) and lose at
// least kMinStragglerMs in all is a straggler; collectives taking this share
// of the replicas' step time (and kMinCollectiveMs) dominate the step.
inline constexpr double kStragglerRatio = 1.2;
inline constexpr double kMinStragglerMs = 5.0;
inline constexpr double kCollectiveShareThreshold = 0.30;
inline constexpr double kMinCollectiveMs = 10.0;
// A graph whose node count rises over this many successive compiles at one
// site is growing, not just changing.
inline constexpr int kGrowingCompiles = 3;

}  // namespace lazyscope::storage
