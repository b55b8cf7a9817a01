// Schema version 2: a version-1 file migrates forward keeping its rows; metric
// snapshots and the new fallback fields round-trip through the recorder and
// the query library.
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "db/history_file.h"
#include "db/schema.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using google::protobuf::util::MessageDifferencer;
using test_support::ScratchFolder;
using ::testing::HasSubstr;

// A history as LazyScope wrote it with schema 1: built from the version-1
// migration itself, with one run and a row in each of its event tables.
void write_version_1_file(const std::string& path) {
  test_support::raw_execute(path, std::string(schema_migrations()[0].sql) + "PRAGMA user_version = 1;");
  test_support::raw_execute(path, R"sql(
    INSERT INTO runs (id, name, started_unix_ms, heartbeat_unix_ms, status, ended_unix_ms)
      VALUES (7, 'old run', 1000, 2000, 2, 2000);
    INSERT INTO steps VALUES (7, 0, 0, 0, 5000000, 1, 2, 3, 4, 5);
    INSERT INTO compilations (run_id, replica, step, graph_hash, start_ns, duration_ns, reason_kind)
      VALUES (7, 0, 0, 42, 10, 2000000, 1);
    INSERT INTO executions (run_id, replica, step, graph_hash, start_ns, duration_ns, cause, cache_hit, node_count)
      VALUES (7, 0, 0, 42, 20, 1000000, 1, 0, 3);
    INSERT INTO fallbacks (run_id, replica, step, op, start_ns, duration_ns, bytes, source_file, source_line)
      VALUES (7, 0, 0, 'nonzero', 30, 500000, 64, 'train.py', 12);
    INSERT INTO transfers (run_id, replica, step, to_device, start_ns, duration_ns, bytes)
      VALUES (7, 0, 0, 1, 40, 100, 128);
    INSERT INTO scalars (run_id, replica, step, name, value) VALUES (7, 0, 0, 'loss', 0.5);
    INSERT INTO output VALUES (7, 0, 'stdout', 'hello');
  )sql");
}

pb::Event snapshot(int64_t step, int64_t time_ns, std::vector<pb::MetricValue> metrics) {
  pb::Event event;
  event.mutable_metrics()->set_step(step);
  event.mutable_metrics()->set_time_ns(time_ns);
  for (auto& metric : metrics) *event.mutable_metrics()->add_metrics() = std::move(metric);
  return event;
}

pb::MetricValue counter(const std::string& name, int64_t value) {
  pb::MetricValue metric;
  metric.set_name(name);
  metric.set_is_counter(true);
  metric.set_value(value);
  return metric;
}

pb::MetricValue timed(const std::string& name, int64_t count, double total_ms, double p50, double p90, double p99) {
  pb::MetricValue metric;
  metric.set_name(name);
  metric.set_count(count);
  metric.set_total_ms(total_ms);
  metric.set_p50_ms(p50);
  metric.set_p90_ms(p90);
  metric.set_p99_ms(p99);
  return metric;
}

TEST(SchemaMigration, Version1FileMigratesToVersion2KeepingEveryRow) {
  ScratchFolder scratch;
  const std::string path = scratch.file("v1.sqlite");
  write_version_1_file(path);

  // A plain read-only open names the problem; the reader migrates first.
  try {
    HistoryFile file(path, OpenMode::kReadOnly);
    FAIL() << "opened an older schema read-only";
  } catch (const OlderSchemaError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
    EXPECT_THAT(e.what(), HasSubstr("schema 1"));
  }
  HistoryReader reader(path);
  // Migrated to the current version.
  EXPECT_EQ(test_support::raw_int64(path, "PRAGMA user_version"), kSchemaVersion);

  const auto summary = reader.run_summary(7);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->run().name(), "old run");
  EXPECT_EQ(summary->steps(), 1);
  EXPECT_EQ(summary->compiles(), 1);
  EXPECT_EQ(summary->executions(), 1);
  EXPECT_EQ(summary->fallbacks(), 1);
  ASSERT_EQ(reader.fallbacks(7).size(), 1u);
  const pb::FallbackEvent fallback = reader.fallbacks(7)[0];
  EXPECT_EQ(fallback.op(), "nonzero");
  EXPECT_EQ(fallback.source().line(), 12);
  // Unknown for an old row, not invented.
  EXPECT_EQ(fallback.reason(), pb::FALLBACK_REASON_UNSPECIFIED);
  EXPECT_EQ(fallback.graph_cut_nodes(), 0);
  EXPECT_EQ(fallback.dtype(), "");
  // Steps recorded before schema 4 spent no time in collectives that we know of.
  ASSERT_EQ(reader.replica_steps(7).size(), 1u);
  EXPECT_EQ(reader.replica_steps(7)[0].step().collective_ns(), 0);
  EXPECT_EQ(reader.replica_steps(7)[0].step().collective_bytes(), 0);
  EXPECT_EQ(reader.transfers(7).size(), 1u);
  EXPECT_EQ(reader.scalar_series(7, "loss").values(0), 0.5);
  ASSERT_EQ(reader.output(7).chunks_size(), 1);
  EXPECT_EQ(reader.output(7).chunks(0).text(), "hello");
  EXPECT_TRUE(reader.metric_snapshots(7).empty());
  EXPECT_TRUE(reader.final_metrics(7).metrics().empty());

  // The migrated file records new runs with the new tables and columns.
  {
    Recorder recorder(path, test_support::sample_run_info("new run"));
    recorder.record(snapshot(1, 100, {counter("CompileCount", 3)}));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  }
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM metric_snapshots"), 1);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM runs"), 2);
}

TEST(SchemaMigration, WritableOpenOfAVersion1FileMigratesInOneStep) {
  ScratchFolder scratch;
  const std::string path = scratch.file("v1.sqlite");
  write_version_1_file(path);
  {
    HistoryFile file(path, OpenMode::kReadWrite);
    EXPECT_EQ(file.schema_version(), kSchemaVersion);
  }
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM fallbacks WHERE reason = 0 AND dtype = ''"), 1);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM metric_snapshots"), 0);
  // Opening again changes nothing.
  HistoryFile again(path, OpenMode::kReadWrite);
  EXPECT_EQ(again.schema_version(), kSchemaVersion);
}

TEST(MetricSnapshots, RoundTripAndTheLastValueOfEachMetric) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  std::vector<pb::Event> recorded = {
      snapshot(0, 1000, {counter("CachedCompile", 0), timed("CompileTime", 1, 12.5, 12.5, 12.5, 12.5)}),
      snapshot(1, 2000, {counter("CachedCompile", 1)}),  // only what changed
      snapshot(2, 3000, {counter("CachedCompile", 2), timed("ExecuteTime", 3, 3.0, 1.0, 1.5, 1.9)}),
  };
  recorded[2].set_replica(1);
  int64_t run_id = 0;
  {
    Recorder recorder(path, test_support::sample_run_info("metrics"));
    for (const auto& event : recorded) recorder.record(event);
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    run_id = recorder.run_id();
  }
  HistoryReader reader(path);
  const std::vector<pb::Event> read = reader.metric_snapshots(run_id);
  ASSERT_EQ(read.size(), recorded.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(read[i], recorded[i])) << read[i].DebugString();
  }

  const pb::MetricsReport final_metrics = reader.final_metrics(run_id);
  EXPECT_EQ(final_metrics.step(), 2);
  EXPECT_EQ(final_metrics.time_ns(), 3000);
  ASSERT_EQ(final_metrics.metrics_size(), 3);
  EXPECT_EQ(final_metrics.metrics(0).name(), "CachedCompile");
  EXPECT_EQ(final_metrics.metrics(0).value(), 2);
  // Not in the last snapshot: its value from the snapshot before.
  EXPECT_TRUE(MessageDifferencer::Equals(final_metrics.metrics(1), timed("CompileTime", 1, 12.5, 12.5, 12.5, 12.5)));
  EXPECT_TRUE(MessageDifferencer::Equals(final_metrics.metrics(2), timed("ExecuteTime", 3, 3.0, 1.0, 1.5, 1.9)));

  // Another run's metrics stay its own.
  EXPECT_TRUE(reader.final_metrics(run_id + 1).metrics().empty());
}

TEST(MetricSnapshots, NanPercentilesAreStoredAsZeroNotAFailedBatch) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Recorder recorder(path, test_support::sample_run_info("nan"));
  recorder.record(snapshot(0, 1, {timed("Empty", 0, 0, nan, nan, nan)}));
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  EXPECT_EQ(recorder.first_write_error(), "");
  HistoryReader reader(path);
  const auto report = reader.final_metrics(recorder.run_id());
  ASSERT_EQ(report.metrics_size(), 1);
  EXPECT_EQ(report.metrics(0).p50_ms(), 0.0);
}

TEST(FallbackFields, ReasonGraphCutAndDtypeRoundTripAndGroup) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  const auto at_line = test_support::source_at("train.py", 41, "train");
  auto fallback = [&](int64_t step, pb::FallbackReason reason, const std::string& dtype, int cut) {
    pb::Event event = test_support::fallback_at(step, "nonzero", step * 100, 2'000'000, 64, at_line);
    event.mutable_fallback()->set_reason(reason);
    event.mutable_fallback()->set_dtype(dtype);
    event.mutable_fallback()->set_graph_cut_nodes(cut);
    return event;
  };
  std::vector<pb::Event> recorded = {
      fallback(0, pb::FALLBACK_REASON_DATA_DEPENDENT, "float32", 10),
      fallback(1, pb::FALLBACK_REASON_DATA_DEPENDENT, "int64", 12),
      fallback(2, pb::FALLBACK_REASON_FORCED, "float32", 5),
  };
  int64_t run_id = 0;
  {
    Recorder recorder(path, test_support::sample_run_info("fallbacks"));
    for (const auto& event : recorded) recorder.record(event);
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    run_id = recorder.run_id();
  }
  HistoryReader reader(path);
  const auto read = reader.fallbacks(run_id);
  ASSERT_EQ(read.size(), 3u);
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(read[i], recorded[i].fallback())) << read[i].DebugString();
  }
  // One group per reason at the line: a forced fallback is a different finding.
  const auto groups = reader.fallback_groups(run_id);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].reason(), pb::FALLBACK_REASON_DATA_DEPENDENT);
  EXPECT_EQ(groups[0].count(), 2);
  EXPECT_EQ(groups[0].graph_cut_nodes(), 22);
  EXPECT_THAT(groups[0].dtypes(), ::testing::AnyOf("float32,int64", "int64,float32"));
  EXPECT_EQ(groups[1].reason(), pb::FALLBACK_REASON_FORCED);
  EXPECT_EQ(groups[1].dtypes(), "float32");
  EXPECT_EQ(groups[1].graph_cut_nodes(), 5);
}

}  // namespace
}  // namespace lazyscope::storage
