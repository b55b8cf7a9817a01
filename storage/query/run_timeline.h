// Every event of a run, of every replica, as the engine published it: the
// input of timeline views and of trace export (storage/export).
#pragma once

#include <cstdint>
#include <optional>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class HistoryFile;

// nullopt when there is no such run. Compiles come without their IR and
// program text; a NaN scalar reads back as NaN. The metric snapshots come
// last, in arrival order: memory over time for timelines and traces.
std::optional<pb::RunTimeline> read_run_timeline(const HistoryFile& file, int64_t run_id);

}  // namespace lazyscope::storage
