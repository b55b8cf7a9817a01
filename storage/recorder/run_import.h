// Adds a run from a RunBundle (storage/export/run_bundle.h) to a history.
#pragma once

#include <cstdint>
#include <string>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

struct ImportedRun {
  int64_t run_id;
  std::string name;  // the name it got: the bundle's, or with a suffix on a clash
  bool renamed;      // a run of the bundle's name was there already
};

// Stores the bundle as a new run (a new id; status, times, host and pid as
// recorded) in one transaction: all of it or nothing. A name already used in
// the history gets " (imported)", then " (imported 2)", ... so that the
// newest-by-name lookup keeps meaning the run that was there. Throws
// HistoryError.
ImportedRun import_run_bundle(const std::string& history_path, const pb::RunBundle& bundle);

// Adds the bundle's events (each keeps its replica: a worker's global rank),
// graphs and output to the existing run `run_id`, in one transaction: the
// nodes of a multi-host job each record their own ranks, and their bundles
// merge into one run. The run keeps its name and start; it takes the
// bundle's status when that one failed (or was interrupted, or crashed) and
// the run did not, and the later end. Throws HistoryError (no such run, a
// bundle whose run had not ended, or one holding replicas the run has
// already: the same node merged twice).
void merge_run_bundle(const std::string& history_path, int64_t run_id, const pb::RunBundle& bundle);

}  // namespace lazyscope::storage
