// Which runs a run list shows. Every field left at its default matches all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

struct RunFilter {
  // The status as observed: a RUNNING run whose writer is gone is CRASHED.
  std::optional<pb::RunStatus> status;
  // A substring (case-sensitive) of the run's name or its script path.
  std::string text;
  // Runs carrying this tag (exact match).
  std::string tag;
  // Runs started at or after this time; 0 for any.
  int64_t since_unix_ms = 0;
};

}  // namespace lazyscope::storage
