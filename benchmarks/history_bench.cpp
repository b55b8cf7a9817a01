// Reading a long run: run_summary() and step_series() of a generated
// 100,000-step history, each side by side with a reference that is the least
// any query of that data must do (one bare pass over the run's step rows):
//   RunSummary/lazyscope   HistoryReader::run_summary (counts, totals, median)
//   RunSummary/reference   SELECT TOTAL(end_ns - start_ns) FROM steps: one pass
//                          reading every step row (a bare count(*) is answered
//                          from the b-tree's page counts without reading rows)
//   StepSeries/lazyscope   HistoryReader::step_series (protobuf columns in ms)
//   StepSeries/reference   the same rows stepped through, nothing built
// Absolute times are in ms; the target is run_summary under 1 s at 100k steps.
// Run: build/release/bin/history_bench (LAZYSCOPE_BENCH_STEPS=N for another length)
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "db/history_file.h"
#include "db/statement.h"
#include "query/history_reader.h"
#include "query/hot_queries.h"
#include "recorder/recorder.h"

namespace lazyscope::storage {
namespace {

int64_t steps_from_env() {
  const char* text = std::getenv("LAZYSCOPE_BENCH_STEPS");
  const long long n = text != nullptr ? std::atoll(text) : 0;
  return n > 0 ? n : 100'000;
}

const int64_t g_steps = steps_from_env();

// A recorded run shaped like a training run: per step a step event, an
// execution, a logged loss; a compile now and then.
struct GeneratedHistory {
  std::string path;
  int64_t run_id = 0;

  GeneratedHistory() {
    path = (std::filesystem::temp_directory_path() /
            ("lazyscope_history_bench_" + std::to_string(getpid()) + ".sqlite"))
               .string();
    pb::RunInfo info;
    info.set_name("long run");
    Recorder recorder(path, info);
    constexpr int64_t kStepNs = 2'000'000;
    for (int64_t step = 0; step < g_steps; ++step) {
      const int64_t start = step * kStepNs;
      const bool compiles = step % 10'000 == 0;
      pb::Event event;
      pb::StepEvent& s = *event.mutable_step();
      s.set_step(step);
      s.set_start_ns(start);
      s.set_end_ns(start + kStepNs - 1000 + (step % 7) * 100);
      s.set_compile_ns(compiles ? 500'000 : 0);
      s.set_execute_ns(1'000'000);
      recorder.record(std::move(event));
      pb::Event execute;
      execute.mutable_execute()->set_step(step);
      execute.mutable_execute()->set_graph_hash(42);
      execute.mutable_execute()->set_start_ns(start + 10);
      execute.mutable_execute()->set_duration_ns(1'000'000);
      execute.mutable_execute()->set_cause(pb::SYNC_CAUSE_MARK_STEP);
      execute.mutable_execute()->set_cache_hit(!compiles);
      recorder.record(std::move(execute));
      if (compiles) {
        pb::Event compile;
        compile.mutable_compile()->set_step(step);
        compile.mutable_compile()->set_graph_hash(42);
        compile.mutable_compile()->set_duration_ns(500'000);
        recorder.record(std::move(compile));
      }
      pb::Event loss;
      loss.mutable_scalar()->set_step(step);
      loss.mutable_scalar()->set_name("loss");
      loss.mutable_scalar()->set_value(1.0 / static_cast<double>(step + 1));
      recorder.record(std::move(loss));
    }
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    run_id = recorder.run_id();
  }

  ~GeneratedHistory() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
};

GeneratedHistory& history() {
  static GeneratedHistory generated;
  return generated;
}

void RunSummary_lazyscope(benchmark::State& state) {
  HistoryReader reader(history().path);
  for (auto _ : state) {
    auto summary = reader.run_summary(history().run_id);
    if (!summary || summary->steps() != g_steps) state.SkipWithError("wrong step count");
    benchmark::DoNotOptimize(summary);
  }
}

void RunSummary_reference(benchmark::State& state) {
  HistoryFile file(history().path, OpenMode::kReadOnly);
  Statement scan(file, "SELECT TOTAL(end_ns - start_ns) FROM steps");
  for (auto _ : state) {
    scan.next_row();
    benchmark::DoNotOptimize(scan.double_at(0));
    scan.reset();
  }
}

void StepSeries_lazyscope(benchmark::State& state) {
  HistoryReader reader(history().path);
  for (auto _ : state) {
    auto series = reader.step_series(history().run_id);
    if (series.steps_size() != g_steps) state.SkipWithError("wrong series length");
    benchmark::DoNotOptimize(series);
  }
}

void StepSeries_reference(benchmark::State& state) {
  HistoryFile file(history().path, OpenMode::kReadOnly);
  Statement rows(file, kSelectStepSeries);
  for (auto _ : state) {
    rows.bind_int64(1, history().run_id);
    int64_t n = 0;
    while (rows.next_row()) n += rows.int64_at(0);
    benchmark::DoNotOptimize(n);
  }
}

}  // namespace
}  // namespace lazyscope::storage

BENCHMARK(lazyscope::storage::RunSummary_lazyscope)->Name("RunSummary/lazyscope")->Unit(benchmark::kMillisecond);
BENCHMARK(lazyscope::storage::RunSummary_reference)->Name("RunSummary/reference")->Unit(benchmark::kMillisecond);
BENCHMARK(lazyscope::storage::StepSeries_lazyscope)->Name("StepSeries/lazyscope")->Unit(benchmark::kMillisecond);
BENCHMARK(lazyscope::storage::StepSeries_reference)->Name("StepSeries/reference")->Unit(benchmark::kMillisecond);
