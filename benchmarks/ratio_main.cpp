// A main() for Google Benchmark that, after the usual table, prints ratios:
// every benchmark named "<case>/lazyscope" is divided by "<case>/reference".
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

namespace {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      // With --benchmark_repetitions, the median of the repetitions (run
      // interleaved with --benchmark_enable_random_interleaving) is the figure.
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if ((run.run_type != Run::RT_Iteration && !median) || run.error_occurred) continue;
      // The side is a path segment of the name; the case is the rest.
      const std::string name = run.benchmark_name();
      for (const char* side : {"lazyscope", "reference"}) {
        const std::string segment = std::string("/") + side;
        const auto at = name.find(segment);
        if (at == std::string::npos) continue;
        std::string key = name.substr(0, at) + name.substr(at + segment.size());
        if (median) key = key.substr(0, key.size() - std::string("_median").size());
        times_[key][side] = run.GetAdjustedRealTime();
      }
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%-40s %14s %14s %8s\n", "case", "lazyscope", "reference", "ratio");
    for (const auto& [name, by_kind] : times_) {
      auto ours = by_kind.find("lazyscope");
      auto ref = by_kind.find("reference");
      if (ours == by_kind.end() || ref == by_kind.end()) continue;
      std::printf("%-40s %14.1f %14.1f %7.2fx\n", name.c_str(), ours->second, ref->second, ours->second / ref->second);
    }
    std::printf("(times in the benchmark's unit; ratio < 1 means LazyScope is faster)\n");
  }

 private:
  std::map<std::string, std::map<std::string, double>> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
