// Schema version 3: per-kernel profiles and machine peaks. A version-2 file
// migrates forward keeping its rows; profiles are stored as their latest
// cumulative totals (an upsert per replica and graph); the kernel report joins
// them with the stored IR and rates each kernel against the machine's peaks,
// checked here against figures worked out by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "db/history_file.h"
#include "db/schema.h"
#include "query/history_reader.h"
#include "query/run_kernels.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::ScratchFolder;

pb::KernelProfile kernel(int index, const std::string& name, std::vector<int> nodes, int64_t flops, int64_t bytes,
                         int64_t samples, int64_t total_ns) {
  pb::KernelProfile k;
  k.set_index(index);
  k.set_name(name);
  for (int n : nodes) k.add_nodes(n);
  k.set_flops(flops);
  k.set_bytes(bytes);
  k.set_samples(samples);
  k.set_total_ns(total_ns);
  return k;
}

pb::Event profile(int64_t step, uint64_t hash, int64_t executions, int64_t peak_bytes,
                  std::vector<pb::KernelProfile> kernels, int replica = 0) {
  pb::Event event;
  event.set_replica(replica);
  pb::KernelProfileEvent& p = *event.mutable_kernel_profile();
  p.set_step(step);
  p.set_graph_hash(hash);
  p.set_executions(executions);
  p.set_peak_bytes(peak_bytes);
  for (auto& k : kernels) *p.add_kernels() = std::move(k);
  return event;
}

pb::Event peaks(double gflops, double gbps) {
  pb::Event event;
  pb::MachinePeakEvent& m = *event.mutable_machine_peak();
  m.set_gemm_gflops(gflops);
  m.set_stream_gbps(gbps);
  m.set_threads(2);
  m.set_isa("avx2");
  return event;
}

// A graph 0xabc of four nodes: device_data, matmul at train.py:10, add and
// relu at train.py:11.
pb::Event compile_with_ir(uint64_t hash) {
  pb::Event event = test_support::compile_event(0, hash, 1'000'000, 4);
  pb::IrGraph& g = *event.mutable_compile()->mutable_graph();
  const char* ops[] = {"device_data", "matmul", "add", "relu"};
  for (int i = 0; i < 4; ++i) {
    g.mutable_nodes(i)->set_op(ops[i]);
    *g.mutable_nodes(i)->mutable_source() = test_support::source_at("train.py", i < 2 ? 10 : 11, "forward");
    g.mutable_nodes(i)->set_scope("model.fc1");
  }
  return event;
}

TEST(KernelProfiles, LatestTotalsJoinedWithTheIrAndRatedAgainstThePeaks) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  int64_t run_id = 0;
  {
    Recorder recorder(path, test_support::sample_run_info("profiled"));
    recorder.record(compile_with_ir(0xabc));
    recorder.record(peaks(100.0, 20.0));
    // Cumulative: the second event replaces the first.
    recorder.record(profile(1, 0xabc, 2, 4096, {kernel(0, "gemm", {1}, 2'000'000, 40'000, 2, 200'000)}));
    recorder.record(profile(9, 0xabc, 10, 8192,
                            {kernel(0, "gemm", {1}, 2'000'000, 40'000, 4, 400'000),
                             kernel(1, "fused_elementwise", {2, 3}, 0, 1'000'000, 4, 800'000)}));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    run_id = recorder.run_id();
    EXPECT_EQ(recorder.first_write_error(), "");
  }
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM kernel_profiles"), 1);
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM kernel_profile_kernels"), 2);

  HistoryReader reader(path);
  const pb::KernelReport report = reader.kernel_report(run_id);
  ASSERT_TRUE(report.has_peaks());
  EXPECT_EQ(report.peaks().isa(), "avx2");
  EXPECT_EQ(report.graphs(), 1);
  EXPECT_EQ(report.peak_bytes(), 8192);
  ASSERT_EQ(report.kernels_size(), 2);

  // fused: 4 timed calls, 800 us in all -> 200 us mean; 10 calls -> 2 ms.
  const pb::KernelRow& fused = report.kernels(0);
  EXPECT_EQ(fused.name(), "fused_elementwise");
  EXPECT_EQ(fused.calls(), 10);
  EXPECT_EQ(fused.samples(), 4);
  EXPECT_DOUBLE_EQ(fused.mean_us(), 200.0);
  EXPECT_DOUBLE_EQ(fused.total_ms(), 2.0);
  EXPECT_DOUBLE_EQ(fused.gbps(), 5.0);                // 1e6 bytes / 200,000 ns
  EXPECT_DOUBLE_EQ(fused.roofline_fraction(), 0.25);  // no FLOPs: 5 of 20 GB/s
  ASSERT_EQ(fused.nodes_size(), 2);
  EXPECT_EQ(fused.nodes(0).id(), 2);
  EXPECT_EQ(fused.nodes(0).op(), "add");
  EXPECT_EQ(fused.nodes(1).op(), "relu");
  EXPECT_EQ(fused.nodes(1).source().line(), 11);
  EXPECT_EQ(fused.nodes(1).scope(), "model.fc1");

  // gemm: 100 us mean, 1 ms total; 2e6 FLOP / 1e5 ns = 20 GFLOP/s at 50
  // FLOP/byte, where the roof is min(100, 50 x 20) = 100: a fifth of it.
  const pb::KernelRow& gemm = report.kernels(1);
  EXPECT_EQ(gemm.name(), "gemm");
  EXPECT_DOUBLE_EQ(gemm.total_ms(), 1.0);
  EXPECT_DOUBLE_EQ(gemm.gflops(), 20.0);
  EXPECT_DOUBLE_EQ(gemm.intensity(), 50.0);
  EXPECT_DOUBLE_EQ(gemm.roofline_fraction(), 0.2);
  EXPECT_EQ(gemm.nodes(0).op(), "matmul");
  EXPECT_EQ(gemm.nodes(0).source().file(), "train.py");

  EXPECT_DOUBLE_EQ(report.total_ms(), 3.0);
  EXPECT_NEAR(fused.share() + gemm.share(), 1.0, 1e-12);
  EXPECT_NEAR(fused.share(), 2.0 / 3.0, 1e-12);
  EXPECT_EQ(report.missing_reason(), "");
}

// A profile is published only when an execution is sampled (1-4, then every
// 64th), so the executions it carries lag the run's: the calls, and with them
// each kernel's total time, come from the executions the run recorded.
TEST(KernelProfiles, CallsCountTheGraphsRecordedExecutionsNotTheLastSampledOne) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  int64_t run_id = 0;
  {
    Recorder recorder(path, test_support::sample_run_info("profiled"));
    recorder.record(compile_with_ir(0xabc));
    recorder.record(compile_with_ir(0xdef));
    for (int step = 0; step < 70; ++step) recorder.record(test_support::execute_event(step, 0xabc, 1000, step > 0));
    recorder.record(test_support::execute_event(70, 0xdef, 1000, false));
    recorder.record(profile(3, 0xabc, 4, 4096, {kernel(0, "gemm", {1}, 2'000'000, 40'000, 3, 300'000)}));
    // A graph whose profile outruns its recorded executions keeps the profile's count.
    recorder.record(profile(70, 0xdef, 2, 4096, {kernel(0, "gemm", {1}, 2'000'000, 40'000, 1, 100'000)}));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    run_id = recorder.run_id();
    EXPECT_EQ(recorder.first_write_error(), "");
  }
  const pb::KernelReport report = HistoryReader(path).kernel_report(run_id);
  ASSERT_EQ(report.kernels_size(), 2);
  const pb::KernelRow& busy = report.kernels(0);
  EXPECT_EQ(busy.graph_hash(), 0xabcu);
  EXPECT_EQ(busy.calls(), 70);
  EXPECT_DOUBLE_EQ(busy.mean_us(), 100.0);
  EXPECT_DOUBLE_EQ(busy.total_ms(), 7.0);
  EXPECT_FALSE(busy.first_call_only());
  EXPECT_EQ(report.kernels(1).calls(), 2);
  EXPECT_DOUBLE_EQ(report.kernels(1).total_ms(), 0.2);
  EXPECT_FALSE(report.kernels(1).first_call_only());  // one sample, but of the second call
}

// A graph that ran once was timed on its first call, one-time set-up and
// all: the report says so, for the GUI and the command line to show.
TEST(KernelProfiles, AKernelTimedOnlyOnItsGraphsFirstCallIsMarked) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  int64_t run_id = 0;
  {
    Recorder recorder(path, test_support::sample_run_info("once"));
    recorder.record(compile_with_ir(0xabc));
    recorder.record(test_support::execute_event(0, 0xabc, 1000, false));
    recorder.record(profile(0, 0xabc, 1, 4096, {kernel(0, "gemm", {1}, 2'000'000, 40'000, 1, 100'000)}));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    run_id = recorder.run_id();
  }
  const pb::KernelReport report = HistoryReader(path).kernel_report(run_id);
  ASSERT_EQ(report.kernels_size(), 1);
  EXPECT_TRUE(report.kernels(0).first_call_only());
  EXPECT_EQ(report.kernels(0).calls(), 1);
}

// A kernel whose bytes per call fit the cache triad's working set is rated
// against the cache's bandwidth; a bigger one, and every kernel of a run
// recorded without a cache roof, against memory's.
TEST(KernelProfiles, KernelsThatFitTheCacheAreRatedAgainstItsRoof) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  int64_t cached_run = 0, plain_run = 0;
  for (const bool with_cache : {true, false}) {
    Recorder recorder(path, test_support::sample_run_info(with_cache ? "cache" : "plain"));
    recorder.record(compile_with_ir(0xabc));
    pb::Event p = peaks(100.0, 20.0);
    if (with_cache) {
      p.mutable_machine_peak()->set_cache_gbps(80.0);
      p.mutable_machine_peak()->set_cache_bytes(1'000'000);
    }
    recorder.record(p);
    // small: 2e5 FLOP, 1e5 bytes (2 FLOP/byte) in 10 us -> 20 GFLOP/s, 10 GB/s.
    // big: no FLOPs, 4e6 bytes in 400 us -> 10 GB/s.
    recorder.record(profile(1, 0xabc, 2, 4096,
                            {kernel(0, "gemm", {1}, 200'000, 100'000, 2, 20'000),
                             kernel(1, "fused_elementwise", {2, 3}, 0, 4'000'000, 2, 800'000)}));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    (with_cache ? cached_run : plain_run) = recorder.run_id();
  }
  HistoryReader reader(path);
  const pb::KernelReport cached = reader.kernel_report(cached_run);
  ASSERT_EQ(cached.kernels_size(), 2);
  EXPECT_DOUBLE_EQ(cached.peaks().cache_gbps(), 80.0);
  EXPECT_EQ(cached.peaks().cache_bytes(), 1'000'000);
  const pb::KernelRow& big = cached.kernels(0);  // 800 us before 20 us
  const pb::KernelRow& small = cached.kernels(1);
  // small fits: roof min(100, 2 x 80) = 100 GFLOP/s; a fifth of it.
  EXPECT_TRUE(small.in_cache());
  EXPECT_DOUBLE_EQ(small.attainable(), 100.0);
  EXPECT_DOUBLE_EQ(small.roofline_fraction(), 0.2);
  // big does not: 10 of memory's 20 GB/s.
  EXPECT_FALSE(big.in_cache());
  EXPECT_DOUBLE_EQ(big.attainable(), 20.0);
  EXPECT_DOUBLE_EQ(big.roofline_fraction(), 0.5);

  const pb::KernelReport plain = reader.kernel_report(plain_run);
  ASSERT_EQ(plain.kernels_size(), 2);
  // Without a cache roof: min(100, 2 x 20) = 40 GFLOP/s; half of it.
  EXPECT_FALSE(plain.kernels(1).in_cache());
  EXPECT_DOUBLE_EQ(plain.kernels(1).attainable(), 40.0);
  EXPECT_DOUBLE_EQ(plain.kernels(1).roofline_fraction(), 0.5);

  // A run bundle carries the cache roof too.
  bool carried = false;
  const auto bundle = reader.run_bundle(cached_run);
  ASSERT_TRUE(bundle.has_value());
  for (const pb::Event& e : bundle->events()) {
    if (e.has_machine_peak())
      carried = e.machine_peak().cache_gbps() == 80.0 && e.machine_peak().cache_bytes() == 1'000'000;
  }
  EXPECT_TRUE(carried);
}

TEST(KernelProfiles, ARunWithoutProfilesSaysWhy) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  Recorder eager(path, test_support::sample_run_info("eager"));
  eager.record(test_support::step_event(0, 0, 10, 0));
  eager.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  Recorder unprofiled(path, test_support::sample_run_info("lazy, no profile"));
  unprofiled.record(test_support::execute_event(0, 0x5, 1000, false));
  unprofiled.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  HistoryReader reader(path);
  using ::testing::HasSubstr;
  EXPECT_THAT(reader.kernel_report(eager.run_id()).missing_reason(), HasSubstr("executed no compiled graph"));
  EXPECT_THAT(reader.kernel_report(unprofiled.run_id()).missing_reason(), HasSubstr("recorded no kernel profile"));
}

TEST(KernelProfiles, ReplicasKeepTheirOwnRowsAndMissingIrOrPeaksAreUnknownNotInvented) {
  ScratchFolder scratch;
  const std::string path = scratch.file("h.sqlite");
  Recorder recorder(path, test_support::sample_run_info("replicas"));
  recorder.record(profile(0, 0x1, 1, 0, {kernel(0, "conv2d", {5}, 100, 10, 1, 1000)}, 0));
  recorder.record(profile(0, 0x1, 1, 0, {kernel(0, "conv2d", {5}, 100, 10, 1, 3000)}, 1));
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  HistoryReader reader(path);
  const pb::KernelReport report = reader.kernel_report(recorder.run_id());
  EXPECT_FALSE(report.has_peaks());
  EXPECT_EQ(report.graphs(), 2);
  ASSERT_EQ(report.kernels_size(), 2);
  EXPECT_EQ(report.kernels(0).replica(), 1);  // the slower one first
  EXPECT_EQ(report.kernels(0).nodes(0).id(), 5);
  EXPECT_EQ(report.kernels(0).nodes(0).op(), "");  // no IR stored for the graph
  EXPECT_EQ(report.kernels(0).roofline_fraction(), 0.0);
  // Another run, and a run without profiles, read as empty.
  EXPECT_EQ(reader.kernel_report(recorder.run_id() + 1).kernels_size(), 0);
}

TEST(KernelProfiles, AVersion2FileMigratesToVersion3KeepingItsRuns) {
  ScratchFolder scratch;
  const std::string path = scratch.file("v2.sqlite");
  test_support::raw_execute(
      path, std::string(schema_migrations()[0].sql) + schema_migrations()[1].sql + "PRAGMA user_version = 2;");
  test_support::raw_execute(path, R"sql(
    INSERT INTO runs (id, name, started_unix_ms, heartbeat_unix_ms, status, ended_unix_ms)
      VALUES (3, 'before profiles', 1000, 2000, 2, 2000);
    INSERT INTO steps VALUES (3, 0, 0, 0, 5000000, 1, 2, 3, 4, 5);
    INSERT INTO metric_snapshots (run_id, replica, step, time_ns, name, is_counter, value, count,
                                  total_ms, p50_ms, p90_ms, p99_ms)
      VALUES (3, 0, 0, 10, 'CompileCount', 1, 1, 0, 0, 0, 0, 0);
  )sql");
  HistoryReader reader(path);
  EXPECT_EQ(test_support::raw_int64(path, "PRAGMA user_version"), kSchemaVersion);
  ASSERT_TRUE(reader.run_summary(3).has_value());
  // The step row survives (the summary counts only steps that ran a graph, and this one ran none).
  EXPECT_EQ(test_support::raw_int64(path, "SELECT COUNT(*) FROM steps WHERE run_id = 3"), 1);
  EXPECT_EQ(reader.final_metrics(3).metrics_size(), 1);
  const pb::KernelReport old = reader.kernel_report(3);
  EXPECT_EQ(old.kernels_size(), 0);
  EXPECT_FALSE(old.has_peaks());

  Recorder recorder(path, test_support::sample_run_info("after"));
  recorder.record(peaks(50, 10));
  recorder.record(profile(0, 0x2, 1, 64, {kernel(0, "gemm", {}, 10, 10, 1, 10)}));
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  const pb::KernelReport fresh = reader.kernel_report(recorder.run_id());
  ASSERT_EQ(fresh.kernels_size(), 1);
  EXPECT_EQ(fresh.kernels(0).nodes_size(), 0);
  EXPECT_TRUE(fresh.has_peaks());
}

// Version 6: how a generated kernel ran (KernelProfile.code). A version-5
// file's kernels migrate with no code (unknown: shown by name alone); a new
// profile's code comes back in the report, in the events a run bundle
// carries, and in the name the command line and the GUI show.
TEST(KernelProfiles, AVersion5FileMigratesAndKernelsKeepHowTheyRan) {
  ScratchFolder scratch;
  const std::string path = scratch.file("v5.sqlite");
  std::string v5;
  for (int i = 0; i < 5; ++i) v5 += schema_migrations()[static_cast<size_t>(i)].sql;
  test_support::raw_execute(path, v5 + "PRAGMA user_version = 5;");
  test_support::raw_execute(path, R"sql(
    INSERT INTO runs (id, name, started_unix_ms, heartbeat_unix_ms, status, ended_unix_ms)
      VALUES (4, 'before codes', 1000, 2000, 2, 2000);
    INSERT INTO kernel_profiles VALUES (4, 0, 7, 0, 3, 64);
    INSERT INTO kernel_profile_kernels (run_id, replica, graph_hash, kernel_index, name, nodes_json, flops, bytes,
                                        samples, total_ns)
      VALUES (4, 0, 7, 0, 'fused_elementwise', '[]', 10, 10, 3, 300);
  )sql");
  HistoryReader reader(path);
  EXPECT_EQ(test_support::raw_int64(path, "PRAGMA user_version"), kSchemaVersion);
  const pb::KernelReport old = reader.kernel_report(4);
  ASSERT_EQ(old.kernels_size(), 1);
  EXPECT_EQ(old.kernels(0).code(), "");
  EXPECT_EQ(kernel_display_name(old.kernels(0)), "fused_elementwise");

  Recorder recorder(path, test_support::sample_run_info("after"));
  pb::KernelProfile compiled = kernel(0, "fused_elementwise", {}, 100, 800, 2, 2000);
  compiled.set_code("avx2 compiled");
  pb::KernelProfile interpreted = kernel(1, "fused_elementwise", {}, 100, 800, 2, 4000);
  interpreted.set_code("avx2 tiles");
  pb::KernelProfile group = kernel(2, "fused_elementwise", {}, 100, 800, 2, 6000);
  group.set_code("avx2 compiled+tiles");
  recorder.record(profile(0, 0x9, 2, 64, {compiled, interpreted, group, kernel(3, "gemm", {}, 10, 10, 2, 8000)}));
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  const pb::KernelReport fresh = reader.kernel_report(recorder.run_id());
  ASSERT_EQ(fresh.kernels_size(), 4);
  std::map<int, std::pair<std::string, std::string>> by_index;
  for (const pb::KernelRow& k : fresh.kernels()) by_index[k.index()] = {k.code(), kernel_display_name(k)};
  EXPECT_EQ(by_index[0], std::make_pair(std::string("avx2 compiled"), std::string("fused_elementwise (compiled)")));
  EXPECT_EQ(by_index[1], std::make_pair(std::string("avx2 tiles"), std::string("fused_elementwise (interpreted)")));
  EXPECT_EQ(by_index[2], std::make_pair(std::string("avx2 compiled+tiles"),
                                        std::string("fused_elementwise (compiled+interpreted)")));
  EXPECT_EQ(by_index[3], std::make_pair(std::string(""), std::string("gemm")));
  const std::vector<pb::Event> events = read_kernel_events(HistoryFile(path, OpenMode::kReadOnly), recorder.run_id());
  ASSERT_EQ(events.size(), 1u);
  ASSERT_EQ(events[0].kernel_profile().kernels_size(), 4);
  EXPECT_EQ(events[0].kernel_profile().kernels(1).code(), "avx2 tiles");
}

}  // namespace
}  // namespace lazyscope::storage
