// Adds a run from a RunBundle (storage/export/run_bundle.h) to a history.
#pragma once

#include <cstdint>
#include <string>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

struct ImportedRun {
  int64_t run_id;
  std::string name;     // the name it got: the bundle's, or with a suffix on a clash
  bool renamed;         // a run of the bundle's name was there already
};

// Stores the bundle as a new run (a new id; status, times, host and pid as
// recorded) in one transaction: all of it or nothing. A name already used in
// the history gets " (imported)", then " (imported 2)", ... so that the
// newest-by-name lookup keeps meaning the run that was there. Throws
// HistoryError.
ImportedRun import_run_bundle(const std::string& history_path, const pb::RunBundle& bundle);

}  // namespace lazyscope::storage
