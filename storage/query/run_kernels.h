// The per-kernel profile of a run: every (replica, graph, kernel) of its
// latest cumulative profile, joined with the stored IR (op names, source
// lines) and rated against the machine's measured peaks (a roofline).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class HistoryFile;

// Empty kernels (and no peaks) when the run recorded no profile.
pb::KernelReport read_kernel_report(const HistoryFile& file, int64_t run_id);

// The stored profiles and peaks as the events that would store them again
// (one KernelProfileEvent per replica and graph, one MachinePeakEvent per
// replica): what a run bundle carries.
std::vector<pb::Event> read_kernel_events(const HistoryFile& file, int64_t run_id);

// A kernel's name as the command line and the GUI show it: a generated
// kernel says how it ran in its timed calls, "fused_elementwise (compiled)"
// or "(interpreted)" (KernelRow.code); a library kernel's name as it is.
std::string kernel_display_name(const pb::KernelRow& kernel);

}  // namespace lazyscope::storage
