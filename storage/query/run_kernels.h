// The per-kernel profile of a run: every (replica, graph, kernel) of its
// latest cumulative profile, joined with the stored IR (op names, source
// lines) and rated against the machine's measured peaks (a roofline).
#pragma once

#include <cstdint>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class HistoryFile;

// Empty kernels (and no peaks) when the run recorded no profile.
pb::KernelReport read_kernel_report(const HistoryFile& file, int64_t run_id);

// Attainable GFLOP/s at `intensity` flops per byte on a machine with these
// peaks: min(peak GFLOP/s, intensity x peak GB/s).
double roofline_gflops(const pb::MachinePeakEvent& peaks, double intensity);

}  // namespace lazyscope::storage
