// One run as a self-contained file (a serialized RunBundle), to move a run
// from one history to another: `lazyscope export RUN --bundle FILE`, then
// `lazyscope import FILE` (storage/recorder/run_import.h).
#pragma once

#include <string>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

inline constexpr const char* kRunBundleMagic = "lazyscope-run-bundle";
// 2: with payload_checksum. Format 1 bundles (no checksum) still import.
inline constexpr int kRunBundleFormatVersion = 2;

// Sets the magic, version and end marker and writes `bundle` to `path`
// (through a temporary file renamed into place, so a failed write leaves no
// half file). Throws HistoryError naming the file.
void write_run_bundle_file(pb::RunBundle bundle, const std::string& path);

// Reads and checks a bundle: a missing file, a folder, one that is not a
// bundle, a truncated one, one whose checksum does not match its bytes, one
// whose executions or compiles name a graph it does not hold, and one from a
// newer LazyScope are each refused with a HistoryError naming the file and
// what is wrong.
pb::RunBundle read_run_bundle_file(const std::string& path);

}  // namespace lazyscope::storage
