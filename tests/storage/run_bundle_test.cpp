// Exchange: a run exported as a bundle and imported into another history
// reads back the same through every query; bad bundles are refused clearly
// and leave the history as it was.
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "db/history_file.h"
#include "export/run_bundle.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "recorder/run_import.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using google::protobuf::util::MessageDifferencer;
using test_support::ScratchFolder;
using ::testing::HasSubstr;

constexpr uint64_t kGraphA = 0xfedcba9876543210ULL;  // above INT64_MAX
constexpr uint64_t kGraphB = 0x1234;
constexpr int64_t kMs = 1'000'000;

// A run with a row in every table, two replicas, and a failure.
int64_t record_full_run(const std::string& path, const std::string& name) {
  Recorder recorder(path, test_support::sample_run_info(name));
  const auto line = test_support::source_at("train.py", 41, "train");
  for (int step = 0; step < 4; ++step) {
    recorder.record(test_support::step_event(step, step * 100 * kMs, (step * 100 + 20) * kMs, step == 0 ? 5 * kMs : 0));
    recorder.record(
        test_support::execute_at(step, kGraphA, step * 100 * kMs + 1, kMs, pb::SYNC_CAUSE_MARK_STEP, line, step > 0));
    recorder.record(test_support::scalar_event(step, "loss", 1.0 / (step + 1)));
  }
  recorder.record(test_support::step_event(0, 0, 30 * kMs, 0, /*replica=*/1));
  recorder.record(test_support::compile_at(0, kGraphA, 10, 5 * kMs, pb::COMPILE_REASON_FIRST_SIGHT, 0, line,
                                           test_support::chain_graph(kGraphA, {8, 3}, 4, line)));
  recorder.record(test_support::compile_at(2, kGraphB, 20, 2 * kMs, pb::COMPILE_REASON_SHAPE, kGraphA, line,
                                           test_support::chain_graph(kGraphB, {4, 3}, 4, line)));
  pb::Event fallback = test_support::fallback_at(1, "nonzero", 150 * kMs, 3 * kMs, 256, line);
  fallback.mutable_fallback()->set_reason(pb::FALLBACK_REASON_DATA_DEPENDENT);
  fallback.mutable_fallback()->set_graph_cut_nodes(7);
  fallback.mutable_fallback()->set_dtype("float32");
  recorder.record(fallback);
  recorder.record(test_support::transfer_at(0, true, 5, kMs, 4096));
  pb::Event metrics;
  metrics.mutable_metrics()->set_step(3);
  metrics.mutable_metrics()->set_time_ns(400 * kMs);
  pb::MetricValue& counter = *metrics.mutable_metrics()->add_metrics();
  counter.set_name("CompileCount");
  counter.set_is_counter(true);
  counter.set_value(2);
  recorder.record(metrics);
  pb::Event peaks;
  peaks.mutable_machine_peak()->set_gemm_gflops(180.5);
  peaks.mutable_machine_peak()->set_stream_gbps(31.25);
  peaks.mutable_machine_peak()->set_isa("avx512");
  recorder.record(peaks);
  pb::Event profile;
  profile.set_replica(1);
  profile.mutable_kernel_profile()->set_graph_hash(kGraphA);
  profile.mutable_kernel_profile()->set_executions(4);
  pb::KernelProfile& kernel = *profile.mutable_kernel_profile()->add_kernels();
  kernel.set_name("fused_elementwise");
  kernel.add_nodes(1);
  kernel.add_nodes(2);
  kernel.set_flops(1000);
  kernel.set_bytes(4000);
  kernel.set_samples(2);
  kernel.set_total_ns(5000);
  recorder.record(profile);
  recorder.record_output("stdout", "step 0\n");
  recorder.record_output("stderr", "warning\n");
  recorder.finish(pb::RUN_STATUS_FAILED, 1, "ValueError: x", "Traceback ...\n");
  return recorder.run_id();
}

template <typename T> void expect_same_list(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(MessageDifferencer::Equals(a[i], b[i])) << what << " " << i;
}

// Everything but the id and the name (which an import may change).
void expect_same_run(const HistoryReader& a, int64_t run_a, const HistoryReader& b, int64_t run_b) {
  pb::RunSummary summary_a = *a.run_summary(run_a);
  pb::RunSummary summary_b = *b.run_summary(run_b);
  for (pb::RunSummary* summary : {&summary_a, &summary_b}) {
    summary->mutable_run()->clear_id();
    summary->mutable_run()->clear_name();
  }
  EXPECT_TRUE(MessageDifferencer::Equals(summary_a, summary_b)) << summary_a.DebugString() << summary_b.DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(a.step_series(run_a), b.step_series(run_b)));
  expect_same_list(a.steps(run_a), b.steps(run_b), "steps");
  expect_same_list(a.compilations(run_a), b.compilations(run_b), "compilations");
  expect_same_list(a.graphs(run_a), b.graphs(run_b), "graphs");
  for (const auto& graph : a.graphs(run_a)) {
    const auto ir_a = a.graph_ir(run_a, graph.hash());
    const auto ir_b = b.graph_ir(run_b, graph.hash());
    ASSERT_EQ(ir_a.has_value(), ir_b.has_value());
    if (ir_a) {
      EXPECT_TRUE(MessageDifferencer::Equals(*ir_a, *ir_b));
    }
    EXPECT_EQ(a.program_text(run_a, graph.hash()), b.program_text(run_b, graph.hash()));
  }
  expect_same_list(a.executions(run_a), b.executions(run_b), "executions");
  expect_same_list(a.fallbacks(run_a), b.fallbacks(run_b), "fallbacks");
  expect_same_list(a.fallback_groups(run_a), b.fallback_groups(run_b), "fallback groups");
  expect_same_list(a.transfers(run_a), b.transfers(run_b), "transfers");
  EXPECT_EQ(a.scalar_names(run_a), b.scalar_names(run_b));
  for (const auto& name : a.scalar_names(run_a)) {
    EXPECT_TRUE(MessageDifferencer::Equals(a.scalar_series(run_a, name), b.scalar_series(run_b, name)));
  }
  EXPECT_TRUE(MessageDifferencer::Equals(a.output(run_a), b.output(run_b)));
  expect_same_list(a.metric_snapshots(run_a), b.metric_snapshots(run_b), "metric snapshots");
  EXPECT_TRUE(MessageDifferencer::Equals(a.final_metrics(run_a), b.final_metrics(run_b)));
  EXPECT_TRUE(MessageDifferencer::Equals(a.kernel_report(run_a), b.kernel_report(run_b)))
      << a.kernel_report(run_a).DebugString() << b.kernel_report(run_b).DebugString();
  pb::RunTimeline timeline_a = *a.timeline(run_a);
  pb::RunTimeline timeline_b = *b.timeline(run_b);
  for (pb::RunTimeline* timeline : {&timeline_a, &timeline_b}) {
    timeline->mutable_run()->clear_id();
    timeline->mutable_run()->clear_name();
  }
  EXPECT_TRUE(MessageDifferencer::Equals(timeline_a, timeline_b));
}

TEST(RunBundle, ExportThenImportReadsBackTheSameThroughEveryQuery) {
  ScratchFolder scratch;
  const std::string source = scratch.file("source.sqlite");
  const std::string target = scratch.file("target.sqlite");
  const std::string bundle_file = scratch.file("run.lsrun");
  record_full_run(source, "other");  // so that ids differ between the histories
  const int64_t run_id = record_full_run(source, "mnist");
  {
    HistoryReader reader(source);
    write_run_bundle_file(*reader.run_bundle(run_id), bundle_file);
  }
  const ImportedRun imported = import_run_bundle(target, read_run_bundle_file(bundle_file));
  EXPECT_EQ(imported.name, "mnist");
  EXPECT_FALSE(imported.renamed);
  HistoryReader a(source);
  HistoryReader b(target);
  EXPECT_EQ(b.list_runs().size(), 1u);
  expect_same_run(a, run_id, b, imported.run_id);
  ASSERT_EQ(b.kernel_report(imported.run_id).kernels_size(), 1);  // the profile came along
  EXPECT_EQ(b.kernel_report(imported.run_id).kernels(0).nodes_size(), 2);
}

TEST(RunBundle, ANameAlreadyInTheHistoryGetsAnImportedSuffix) {
  ScratchFolder scratch;
  const std::string source = scratch.file("source.sqlite");
  const std::string bundle_file = scratch.file("run.lsrun");
  const int64_t run_id = record_full_run(source, "mnist");
  {
    HistoryReader reader(source);
    write_run_bundle_file(*reader.run_bundle(run_id), bundle_file);
  }
  // Into the same history, twice.
  const ImportedRun first = import_run_bundle(source, read_run_bundle_file(bundle_file));
  const ImportedRun second = import_run_bundle(source, read_run_bundle_file(bundle_file));
  EXPECT_TRUE(first.renamed);
  EXPECT_EQ(first.name, "mnist (imported)");
  EXPECT_EQ(second.name, "mnist (imported 2)");
  EXPECT_NE(first.run_id, run_id);
  HistoryReader reader(source);
  EXPECT_EQ(reader.find_run("mnist"), run_id);  // the name still means the original
  expect_same_run(reader, run_id, reader, second.run_id);
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const HistoryError& e) {
    return e.what();
  }
  return "";
}

TEST(RunBundle, TruncatedGarbageAndNewerBundlesAreRefusedClearly) {
  ScratchFolder scratch;
  const std::string source = scratch.file("source.sqlite");
  const std::string bundle_file = scratch.file("run.lsrun");
  const int64_t run_id = record_full_run(source, "mnist");
  {
    HistoryReader reader(source);
    write_run_bundle_file(*reader.run_bundle(run_id), bundle_file);
  }
  const std::string bytes = test_support::read_bytes(bundle_file);
  ASSERT_GT(bytes.size(), 100u);
  const std::string cut = scratch.file("cut.lsrun");
  // Cut anywhere: never read as a (smaller) run.
  for (size_t size = 0; size < bytes.size(); size += 1 + size / 16) {
    test_support::write_bytes(cut, bytes.substr(0, size));
    const std::string error = error_of([&] { read_run_bundle_file(cut); });
    EXPECT_THAT(error, HasSubstr(cut)) << "cut at " << size;
  }
  test_support::write_bytes(cut, bytes.substr(0, bytes.size() - 2));
  EXPECT_THAT(error_of([&] { read_run_bundle_file(cut); }), HasSubstr("truncated"));

  const std::string garbage = scratch.file("garbage.lsrun");
  test_support::write_bytes(garbage, std::string(4000, '\x07') + "not a bundle");
  EXPECT_THAT(error_of([&] { read_run_bundle_file(garbage); }), HasSubstr("not a LazyScope run bundle"));
  // Another file that parses as protobuf (the history itself does not).
  EXPECT_THAT(error_of([&] { read_run_bundle_file(source); }), HasSubstr("not a LazyScope run bundle"));
  EXPECT_THAT(error_of([&] { read_run_bundle_file(scratch.file("missing.lsrun")); }), HasSubstr("no such bundle file"));

  pb::RunBundle newer = read_run_bundle_file(bundle_file);
  newer.set_format_version(kRunBundleFormatVersion + 1);
  test_support::write_bytes(scratch.file("newer.lsrun"), newer.SerializeAsString());
  EXPECT_THAT(error_of([&] { read_run_bundle_file(scratch.file("newer.lsrun")); }), HasSubstr("newer LazyScope"));
}

TEST(RunBundle, AFlippedBitAnywhereIsRefusedInLazyScopesWords) {
  ScratchFolder scratch;
  const std::string source = scratch.file("source.sqlite");
  const std::string bundle_file = scratch.file("run.lsrun");
  const int64_t run_id = record_full_run(source, "mnist");
  write_run_bundle_file(*HistoryReader(source).run_bundle(run_id), bundle_file);
  const std::string bytes = test_support::read_bytes(bundle_file);
  const std::string flipped = scratch.file("flipped.lsrun");
  // Every byte, one bit each: a bundle either is the run exported or is refused.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ (1 << (i % 8)));
    test_support::write_bytes(flipped, damaged);
    ::testing::internal::CaptureStderr();
    const std::string error = error_of([&] { read_run_bundle_file(flipped); });
    const std::string printed = ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(error, HasSubstr(flipped)) << "byte " << i;
    EXPECT_EQ(printed, "") << "byte " << i;  // protobuf's log goes into the error, not to stderr
  }
}

TEST(RunBundle, ProtobufsComplaintIsPartOfTheError) {
  ScratchFolder scratch;
  pb::RunBundle bundle;
  bundle.set_magic(kRunBundleMagic);
  bundle.mutable_run()->set_name("bad \xff name");  // not UTF-8: protobuf logs while parsing
  const std::string file = scratch.file("utf8.lsrun");
  test_support::write_bytes(file, bundle.SerializePartialAsString());
  ::testing::internal::CaptureStderr();
  const std::string error = error_of([&] { read_run_bundle_file(file); });
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_THAT(error, HasSubstr(file + ": the bundle is truncated or corrupt (protobuf: "));
  EXPECT_THAT(error, HasSubstr("UTF-8"));
}

TEST(RunBundle, EveryGraphThatACompileOrAnExecutionNamesMustBeInTheBundle) {
  ScratchFolder scratch;
  const std::string source = scratch.file("source.sqlite");
  const std::string target = scratch.file("target.sqlite");
  const int64_t run_id = record_full_run(source, "mnist");
  pb::RunBundle bundle = *HistoryReader(source).run_bundle(run_id);
  ASSERT_EQ(bundle.graphs_size(), 2);
  // Graph A dropped: a valid checksum over a bundle that cannot be shown.
  bundle.mutable_graphs()->erase(bundle.mutable_graphs()->begin());
  const std::string file = scratch.file("missing_graph.lsrun");
  write_run_bundle_file(bundle, file);
  EXPECT_THAT(error_of([&] { read_run_bundle_file(file); }),
              HasSubstr(file + ": the bundle is corrupt: a compile of step 0 refers to graph fedcba9876543210, "
                               "which the bundle does not hold; nothing was imported"));
}

TEST(RunBundle, AFormat1BundleWithoutAChecksumStillReads) {
  ScratchFolder scratch;
  const std::string source = scratch.file("source.sqlite");
  const int64_t run_id = record_full_run(source, "mnist");
  pb::RunBundle bundle = *HistoryReader(source).run_bundle(run_id);
  bundle.set_magic(kRunBundleMagic);
  bundle.set_format_version(1);
  bundle.set_end_marker("end");
  const std::string file = scratch.file("v1.lsrun");
  test_support::write_bytes(file, bundle.SerializeAsString());
  EXPECT_EQ(read_run_bundle_file(file).events_size(), bundle.events_size());
  // From format 2 on the checksum is required.
  bundle.set_format_version(2);
  test_support::write_bytes(file, bundle.SerializeAsString());
  EXPECT_THAT(error_of([&] { read_run_bundle_file(file); }), HasSubstr("checksum does not match"));
}

TEST(RunBundle, AnImportThatFailsHalfWayLeavesTheHistoryUntouched) {
  ScratchFolder scratch;
  const std::string source = scratch.file("source.sqlite");
  const std::string target = scratch.file("target.sqlite");
  const int64_t run_id = record_full_run(source, "mnist");
  record_full_run(target, "kept");
  pb::RunBundle bundle = *HistoryReader(source).run_bundle(run_id);
  // Two output chunks with one sequence number: the last insert fails.
  *bundle.add_output() = bundle.output(0);
  EXPECT_THAT(error_of([&] { import_run_bundle(target, bundle); }), HasSubstr(target));
  EXPECT_EQ(test_support::raw_int64(target, "SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(test_support::raw_int64(target, "SELECT COUNT(*) FROM steps"), 5);
  EXPECT_EQ(test_support::raw_int64(target, "SELECT COUNT(*) FROM metric_snapshots"), 1);

  pb::RunBundle running = *HistoryReader(source).run_bundle(run_id);
  running.mutable_run()->set_status(pb::RUN_STATUS_RUNNING);
  EXPECT_THAT(error_of([&] { import_run_bundle(target, running); }), HasSubstr("had not ended"));
  EXPECT_EQ(test_support::raw_int64(target, "SELECT COUNT(*) FROM runs"), 1);
}

}  // namespace
}  // namespace lazyscope::storage
