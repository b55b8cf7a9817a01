// The queries a long run makes slow if they scan: the run summary and the
// per-step series search their tables' (run_id, ...) indexes. Checked on the
// query plan, deterministically, instead of timing them (the timing is in
// benchmarks/history_bench.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "query/hot_queries.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::ScratchFolder;

// The detail column of each EXPLAIN QUERY PLAN row (e.g. "SEARCH steps USING
// INDEX steps_by_run (run_id=? AND replica=?)").
std::vector<std::string> plan_of(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* explain = nullptr;
  const std::string text = "EXPLAIN QUERY PLAN " + sql;
  EXPECT_EQ(sqlite3_prepare_v2(db, text.c_str(), -1, &explain, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::vector<std::string> details;
  while (sqlite3_step(explain) == SQLITE_ROW) {
    details.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(explain, 3)));
  }
  sqlite3_finalize(explain);
  sqlite3_close(db);
  return details;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

TEST(QueryPlan, SummaryAndSeriesSearchIndexesAndNeverScanAnEventTable) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  {
    Recorder recorder(path, test_support::sample_run_info("plans"));
    for (int step = 0; step < 50; ++step) {
      recorder.record(test_support::step_event(step, step * 10, step * 10 + 5, 0));
      recorder.record(test_support::scalar_event(step, "loss", 1.0));
    }
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  const std::vector<std::pair<const char*, std::string>> queries = {
      {"one run's summary", kSelectOneSummary},
      {"the step durations for the median", kSelectStepDurations},
      {"the step series", kSelectStepSeries},
      {"a scalar series", kSelectScalarSeries},
  };
  for (const auto& [what, sql] : queries) {
    const std::vector<std::string> plan = plan_of(path, sql);
    ASSERT_FALSE(plan.empty()) << what;
    for (const std::string& step : plan) {
      // "SCAN t" reads every row of t (also as "SCAN t USING COVERING INDEX").
      for (const char* table : {"steps", "compilations", "executions", "fallbacks", "scalars"}) {
        EXPECT_FALSE(step.starts_with(std::string("SCAN ") + table)) << what << " scans " << table << ":\n"
                                                                     << joined(plan);
      }
    }
  }
  // The summary's step count and the series read the steps index.
  EXPECT_THAT(joined(plan_of(path, kSelectOneSummary)),
              ::testing::HasSubstr("SEARCH s USING COVERING INDEX steps_by_run"));
  EXPECT_THAT(joined(plan_of(path, kSelectStepSeries)), ::testing::HasSubstr("INDEX steps_by_run"));
  EXPECT_THAT(joined(plan_of(path, kSelectScalarSeries)), ::testing::HasSubstr("INDEX scalars_by_run"));
}

}  // namespace
}  // namespace lazyscope::storage
