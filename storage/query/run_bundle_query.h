// Everything recorded for one run, as a RunBundle (the exchange format of
// storage/export/run_bundle.h).
#pragma once

#include <cstdint>
#include <optional>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

class HistoryFile;

// The caller holds a read transaction, for one snapshot. nullopt when there
// is no such run. The status is the observed one (a dead writer's run reads
// as crashed). magic, format_version and end_marker are left to the writer.
std::optional<pb::RunBundle> read_run_bundle(const HistoryFile& file, int64_t run_id);

}  // namespace lazyscope::storage
