// Renaming, tagging and deleting runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "db/history_file.h"
#include "edit/history_editor.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::ScratchFolder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

int64_t record_small_run(const std::string& path, const std::string& name) {
  Recorder recorder(path, test_support::sample_run_info(name));
  recorder.record(test_support::step_event(0, 0, 10, 5));
  recorder.record(test_support::compile_event(0, 0xabc, 5, 3));
  recorder.record(test_support::execute_event(0, 0xabc, 2, false));
  recorder.record(test_support::fallback_event(0, "nonzero"));
  recorder.record(test_support::transfer_event(0, true, 64));
  recorder.record(test_support::scalar_event(0, "loss", 1.0));
  recorder.record_output("stdout", "hello\n");
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  return recorder.run_id();
}

int64_t rows_of(const std::string& path, const std::string& table, int64_t run_id) {
  std::string sql = "SELECT COUNT(*) FROM ";
  sql += table;
  sql += table == "runs" ? " WHERE id = " : " WHERE run_id = ";
  sql += std::to_string(run_id);
  return test_support::raw_int64(path, sql);
}

TEST(HistoryEditor, RenamesAndRetagsARun) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const int64_t run_id = record_small_run(path, "before");
  const int64_t other = record_small_run(path, "other");
  HistoryEditor editor(path);
  editor.rename_run(run_id, "after ünïcode");
  editor.set_tags(run_id, {"fp32", "baseline", "fp32", "with \"quote\""});

  HistoryReader reader(path);
  const auto summary = reader.run_summary(run_id);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->run().name(), "after ünïcode");
  EXPECT_THAT(summary->run().tags(), ElementsAre("fp32", "baseline", "with \"quote\""));
  EXPECT_EQ(reader.find_run("after ünïcode"), run_id);
  RunFilter quoted;
  quoted.tag = "with \"quote\"";
  EXPECT_EQ(reader.list_runs(quoted).size(), 1u);
  // The other run is untouched.
  EXPECT_EQ(reader.run_summary(other)->run().name(), "other");
  EXPECT_THAT(reader.run_summary(other)->run().tags(), ElementsAre("baseline", "größe"));

  editor.set_tags(run_id, {});
  EXPECT_EQ(reader.run_summary(run_id)->run().tags_size(), 0);
}

TEST(HistoryEditor, EmptyNamesAndTagsAreRefusedAndChangeNothing) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const int64_t run_id = record_small_run(path, "kept");
  HistoryEditor editor(path);
  for (const std::string name : {"", " ", "\t\n"}) {
    EXPECT_THROW(
        try { editor.rename_run(run_id, name); } catch (const HistoryError& e) {
          EXPECT_THAT(e.what(), HasSubstr(path + ": cannot rename run " + std::to_string(run_id)));
          EXPECT_THAT(e.what(), HasSubstr("the new name is empty"));
          throw;
        },
        HistoryError);
  }
  EXPECT_THROW(editor.set_tags(run_id, {"ok", ""}), HistoryError);
  EXPECT_THROW(editor.set_tags(run_id, {"  "}), HistoryError);
  const auto summary = HistoryReader(path).run_summary(run_id);
  EXPECT_EQ(summary->run().name(), "kept");
  EXPECT_THAT(summary->run().tags(), ElementsAre("baseline", "größe"));
}

TEST(HistoryEditor, DeleteCascadesToEveryTableAndKeepsOtherRuns) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const int64_t run_id = record_small_run(path, "doomed");
  const int64_t kept = record_small_run(path, "kept");
  HistoryEditor(path).delete_run(run_id);
  for (std::string_view table :
       {"runs", "steps", "graphs", "compilations", "executions", "fallbacks", "transfers", "scalars", "output"}) {
    EXPECT_EQ(rows_of(path, std::string(table), run_id), 0) << table;
    EXPECT_EQ(rows_of(path, std::string(table), kept), 1) << table;
  }
  EXPECT_EQ(HistoryReader(path).run_summary(run_id), std::nullopt);
}

TEST(HistoryEditor, UnknownRunsAreNamedInTheError) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  record_small_run(path, "a");
  HistoryEditor editor(path);
  for (auto edit :
       {+[](HistoryEditor& e) { e.rename_run(4242, "x"); }, +[](HistoryEditor& e) { e.set_tags(4242, {"x"}); },
        +[](HistoryEditor& e) { e.delete_run(4242); }}) {
    try {
      edit(editor);
      FAIL() << "editing a missing run must throw";
    } catch (const HistoryError& error) {
      EXPECT_THAT(error.what(), HasSubstr("no run 4242"));
      EXPECT_THAT(error.what(), HasSubstr(path));
    }
  }
}

TEST(HistoryEditor, RefusesToDeleteARunThatIsStillRecording) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  Recorder live(path, test_support::sample_run_info("live"));
  try {
    HistoryEditor(path).delete_run(live.run_id());
    FAIL() << "deleting a live run must throw";
  } catch (const HistoryError& error) {
    EXPECT_THAT(error.what(), HasSubstr("still running"));
  }
  EXPECT_EQ(rows_of(path, "runs", live.run_id()), 1);
  live.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  HistoryEditor(path).delete_run(live.run_id());
  EXPECT_EQ(rows_of(path, "runs", live.run_id()), 0);
}

}  // namespace
}  // namespace lazyscope::storage
