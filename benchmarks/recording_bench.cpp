// Recording overhead, side by side: lazy training steps of a small MLP
// (784-256-10, batch 64, forward + backward + SGD update, one barrier per
// step) with a storage::Recorder subscribed to the engine's events
// ("lazyscope") and without any subscriber ("reference"). The ratio minus one
// is the share of step time recording costs (brief target: <= 2%).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "autograd/autograd.h"
#include "events/event_bus.h"
#include "executor/graph_executor.h"
#include "recorder/recorder.h"
#include "tensor/ops.h"

namespace lazyscope {
namespace {

const Device kLazy{DeviceKind::kLazy, 0};

Tensor random_tensor(Shape shape, float scale, uint32_t seed) {
  BufferPtr b = Buffer::allocate(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (int64_t i = 0; i < b->numel(); ++i) b->as<float>()[i] = dist(rng);
  return Tensor::wrap(std::move(b), Device{}).to(kLazy);
}

struct Mlp {
  Tensor w1 = random_tensor({784, 256}, 0.03f, 1);
  Tensor w2 = random_tensor({256, 10}, 0.06f, 2);
  Tensor x = random_tensor({64, 784}, 1.0f, 3);
  Tensor y = random_tensor({64, 10}, 1.0f, 4);

  Mlp() {
    w1.set_requires_grad(true);
    w2.set_requires_grad(true);
  }

  void step() {
    Tensor h = ops::relu(ops::matmul(x, w1));
    Tensor diff = ops::sub(ops::matmul(h, w2), y);
    Tensor loss = ops::sum(ops::mul(diff, diff));
    loss.backward();
    {
      autograd::NoGradGuard no_grad;
      const Tensor lr = ops::scalar(1e-4, DType::kFloat32, kLazy);
      w1 = ops::sub(w1, ops::mul(w1.grad(), lr)).detach();
      w2 = ops::sub(w2, ops::mul(w2.grad(), lr)).detach();
    }
    w1.set_requires_grad(true);
    w2.set_requires_grad(true);
    executor::mark_step(kLazy);
  }
};

void BM_Steps(benchmark::State& state, bool record) {
  Mlp mlp;
  for (int i = 0; i < 3; ++i) mlp.step();  // compile outside the timing
  const std::string path = "/tmp/lazyscope-recording-bench-" + std::to_string(getpid()) + ".sqlite";
  std::unique_ptr<storage::Recorder> recorder;
  int subscription = 0;
  if (record) {
    pb::RunInfo info;
    info.set_name("recording_bench");
    recorder = std::make_unique<storage::Recorder>(path, info);
    subscription = events::subscribe_taking([&recorder](pb::Event&& e) { recorder->record(std::move(e)); });
  }
  for (auto _ : state) mlp.step();
  if (record) {
    events::unsubscribe(subscription);
    recorder->finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    recorder.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
}

BENCHMARK_CAPTURE(BM_Steps, recorded, true)->Name("mlp_step/lazyscope")->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK_CAPTURE(BM_Steps, unrecorded, false)->Name("mlp_step/reference")->Unit(benchmark::kMicrosecond)->MinTime(1.0);

}  // namespace
}  // namespace lazyscope
