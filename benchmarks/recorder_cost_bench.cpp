// The recorder's cost per step, side by side in one run (issue 15): tiny lazy
// steps (w * 2, summed, the sum logged as "loss", one barrier) with a
// storage::Recorder subscribed as `lazyscope run` subscribes it, and with no
// subscriber. Rounds alternate recorded and unrecorded so that a machine
// busy with other work slows both alike; each round's per-step time is
// measured, and the medians are compared. Prints the recording cost per step
// (target: under 10 us) and the ratio, for the training thread's wall time
// and for the process's CPU time (the writer thread included).
//
//   build/release/bin/recorder_cost_bench [STEPS_PER_ROUND [ROUNDS]]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "db/history_file.h"
#include "db/statement.h"
#include "events/event_bus.h"
#include "executor/graph_executor.h"
#include "recorder/recorder.h"
#include "tensor/ops.h"

namespace lazyscope {
namespace {

const Device kLazy{DeviceKind::kLazy, 0};

// RUSAGE_SELF: every thread of the process (the writer included);
// RUSAGE_THREAD: the calling (training) thread only.
double cpu_seconds(int who = RUSAGE_SELF) {
  rusage usage{};
  getrusage(who, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

struct Round {
  double wall_us_per_step;
  double cpu_us_per_step;
  double thread_cpu_us_per_step;
};

void tiny_step(const Tensor& w) {
  const Tensor loss = ops::sum(ops::mul(w, ops::scalar(2.0, DType::kFloat32, kLazy)));
  executor::log_scalar("loss", loss);
  executor::mark_step(kLazy);
}

// One round of `steps` tiny steps, recorded into a fresh history or not. The
// recorder's end (finish, its last batch) is part of the recorded round: it
// is work that recording costs.
Round run_round(const Tensor& w, int steps, bool recorded, const std::string& path) {
  std::unique_ptr<storage::Recorder> recorder;
  int subscription = 0;
  if (recorded) {
    pb::RunInfo info;
    info.set_name("recorder_cost_bench");
    recorder = std::make_unique<storage::Recorder>(path, info);
    subscription = events::subscribe_taking([&recorder](pb::Event&& e) { recorder->record(std::move(e)); });
  }
  const double cpu_start = cpu_seconds();
  const double thread_cpu_start = cpu_seconds(RUSAGE_THREAD);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) tiny_step(w);
  if (recorded) {
    events::unsubscribe(subscription);
    recorder->finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    recorder.reset();  // joins the writer: every row is stored
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = cpu_seconds() - cpu_start;
  const double thread_cpu = cpu_seconds(RUSAGE_THREAD) - thread_cpu_start;
  if (recorded) {
    // Cheaper recording must not mean fewer rows: every step, execution and
    // logged scalar of the round is in the history (after the timing).
    {
      storage::HistoryFile file(path, storage::OpenMode::kReadOnly);
      for (const char* table : {"steps", "executions", "scalars"}) {
        storage::Statement count(file, std::string("SELECT COUNT(*) FROM ") + table);
        count.next_row();
        if (count.int64_at(0) != steps) {
          std::fprintf(stderr, "recorder_cost_bench: %s holds %lld rows, expected %d\n", table,
                       static_cast<long long>(count.int64_at(0)), steps);
          std::exit(1);
        }
        count.reset();
      }
    }
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
  return {wall * 1e6 / steps, cpu * 1e6 / steps, thread_cpu * 1e6 / steps};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int main_impl(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  if (steps < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: recorder_cost_bench [STEPS_PER_ROUND [ROUNDS]]\n");
    return 2;
  }
  const std::string path = "/tmp/lazyscope-recorder-cost-" + std::to_string(getpid()) + ".sqlite";
  const Tensor w = ops::scalar(1.5, DType::kFloat32, Device{}).to(kLazy);
  for (int i = 0; i < 100; ++i) tiny_step(w);  // compile outside the timing
  std::vector<double> wall[2], cpu[2], thread_cpu[2];
  for (int round = 0; round < rounds; ++round) {
    // Alternate which side goes first, so neither always follows the other.
    for (int k = 0; k < 2; ++k) {
      const bool recorded = (round + k) % 2 == 0;
      const Round r = run_round(w, steps, recorded, path);
      wall[recorded].push_back(r.wall_us_per_step);
      cpu[recorded].push_back(r.cpu_us_per_step);
      thread_cpu[recorded].push_back(r.thread_cpu_us_per_step);
    }
  }
  std::printf("%d rounds of %d tiny steps each, recorded and unrecorded alternating (medians)\n", rounds, steps);
  std::printf("%-28s %12s %12s %14s %8s\n", "per step", "recorded", "unrecorded", "recording cost", "ratio");
  for (const auto& [what, values] : {std::pair{"wall time, us", wall}, std::pair{"CPU time (all threads), us", cpu},
                                     std::pair{"CPU time (step thread), us", thread_cpu}}) {
    const double on = median(values[1]);
    const double off = median(values[0]);
    std::printf("%-28s %12.2f %12.2f %14.2f %7.2fx\n", what, on, off, on - off, on / off);
  }
  std::printf("target: recording cost under 10 us per step (wall time)\n");
  return 0;
}

}  // namespace
}  // namespace lazyscope

int main(int argc, char** argv) { return lazyscope::main_impl(argc, argv); }
