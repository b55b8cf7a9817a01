// Reads runs with their per-run aggregates (counts, totals, median step) into
// RunSummary messages, judging whether a RUNNING run's writer still lives.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "db/statement.h"
#include "lazyscope/history.pb.h"
#include "query/run_filter.h"

namespace lazyscope::storage {

class HistoryFile;

class RunSummaryQuery {
 public:
  // The caller holds a read transaction around the calls, for one snapshot.
  explicit RunSummaryQuery(const HistoryFile& file);

  // Newest (latest started) first.
  std::vector<pb::RunSummary> all(const RunFilter& filter = {});
  std::optional<pb::RunSummary> one(int64_t run_id);

 private:
  pb::RunSummary summary_from_row(const Statement& row, int64_t now_unix_ms);
  double median_step_ms(int64_t run_id);
  template <typename AddValue> void read_json_values(const std::string& json, AddValue add_value);

  const HistoryFile& file_;
  Statement json_entries_;
  Statement step_durations_;
};

}  // namespace lazyscope::storage
