// The runtime around the graphs: CPU fallbacks through a backend that lowers
// less, data-dependent ops, metric snapshots, device-buffer gauges.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>

#include "backend/backend.h"
#include "core/settings.h"
#include "events/event_bus.h"
#include "executor/graph_executor.h"
#include "metrics/metrics.h"
#include "tensor/ops.h"
#include "test_util.h"

namespace lazyscope {
namespace {

using testing::EventCapture;
using testing::lazy0;
using testing::make;
using testing::values;

// A backend that declares no exp (any dtype) and compiles through the CPU
// backend, remembering every op it was asked to compile.
class NoExpBackend final : public Backend {
 public:
  explicit NoExpBackend(Backend& cpu) : cpu_(cpu) {}
  std::string_view name() const override { return "no-exp"; }
  bool lowers(OpKind op, DType dtype) const override { return op != OpKind::kExp && cpu_.lowers(op, dtype); }
  std::unique_ptr<Executable> compile(const GraphView& graph) override {
    for (const Node* n : graph.nodes) compiled_ops.push_back(n->op());
    return cpu_.compile(graph);
  }
  std::vector<OpKind> compiled_ops;

 private:
  Backend& cpu_;
};

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    executor::mark_step(lazy0());
    metrics::reset();
  }
  void TearDown() override {
    set_default_backend(nullptr);
    settings::set_forced_fallbacks({});
  }
};

TEST_F(RuntimeTest, OpTheBackendDoesNotLowerRunsOnTheHost) {
  NoExpBackend backend(default_backend());
  set_default_backend(&backend);
  EventCapture capture;
  const Tensor x = make({0.f, 1.f, -1.f}, {3}, lazy0());
  const Tensor y = ops::add(ops::exp(ops::mul(x, x)), x);
  executor::mark_step(lazy0());
  const std::vector<float> got = values(y);
  const float in[] = {0.f, 1.f, -1.f};
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(got[i], std::exp(in[i] * in[i]) + in[i]);
  for (OpKind op : backend.compiled_ops) EXPECT_NE(op, OpKind::kExp);
  ASSERT_EQ(capture.fallbacks().size(), 1u);
  const pb::FallbackEvent f = capture.fallbacks()[0];
  EXPECT_EQ(f.op(), "exp");
  EXPECT_EQ(f.reason(), pb::FALLBACK_REASON_NOT_LOWERED);
  EXPECT_EQ(f.graph_cut_nodes(), 1);  // the mul
  EXPECT_EQ(f.bytes(), 2 * 3 * 4);
  EXPECT_EQ(metrics::counters()["Fallback.exp"], 1);
  EXPECT_EQ(metrics::counters()["SyncCause.fallback"], 1);
}

TEST_F(RuntimeTest, RestrictedBackendRefusesOnlyTheNamedDtype) {
  RestrictedBackend restricted(default_backend(), {{OpKind::kSin, DType::kFloat64}});
  EXPECT_FALSE(restricted.lowers(OpKind::kSin, DType::kFloat64));
  EXPECT_TRUE(restricted.lowers(OpKind::kSin, DType::kFloat32));
  EXPECT_TRUE(restricted.lowers(OpKind::kCos, DType::kFloat64));
}

// fallback_reason() remembers what the default backend lowers: a backend
// installed between two traces of the same op must be asked again, also one
// built where the previous one was (the Python bindings replace theirs so).
TEST_F(RuntimeTest, ABackendSwappedBetweenTwoTracesOfAnOpIsAskedAgain) {
  EventCapture capture;
  const Tensor x = make({0.f, 1.f}, {2}, lazy0());
  Tensor y = ops::exp(x);  // the CPU backend lowers exp: traced
  EXPECT_TRUE(capture.fallbacks().empty());

  NoExpBackend no_exp(default_backend());
  set_default_backend(&no_exp);
  y = ops::exp(x);
  ASSERT_EQ(capture.fallbacks().size(), 1u);
  EXPECT_EQ(capture.fallbacks()[0].op(), "exp");
  EXPECT_EQ(capture.fallbacks()[0].reason(), pb::FALLBACK_REASON_NOT_LOWERED);

  set_default_backend(nullptr);
  y = ops::exp(x);  // the CPU backend again: traced
  EXPECT_EQ(capture.fallbacks().size(), 1u);

  std::optional<RestrictedBackend> restricted;
  restricted.emplace(default_backend(), std::vector<RestrictedBackend::Refusal>{{OpKind::kSin, std::nullopt}});
  const void* first_address = &*restricted;
  set_default_backend(&*restricted);
  y = ops::sin(x);
  ASSERT_EQ(capture.fallbacks().size(), 2u);
  EXPECT_EQ(capture.fallbacks()[1].op(), "sin");
  set_default_backend(nullptr);
  restricted.reset();
  restricted.emplace(default_backend(), std::vector<RestrictedBackend::Refusal>{{OpKind::kCos, std::nullopt}});
  ASSERT_EQ(static_cast<const void*>(&*restricted), first_address);  // the same address
  set_default_backend(&*restricted);
  y = ops::sin(x);  // lowered by this one
  EXPECT_EQ(capture.fallbacks().size(), 2u);
  y = ops::cos(x);
  ASSERT_EQ(capture.fallbacks().size(), 3u);
  EXPECT_EQ(capture.fallbacks()[2].op(), "cos");
  set_default_backend(nullptr);
  executor::mark_step(lazy0());
  const std::vector<float> got = values(y);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], std::cos(0.0), 1e-6);
  EXPECT_NEAR(got[1], std::cos(1.0), 1e-6);
}

TEST_F(RuntimeTest, ForcedFallbackBeatsALoweredOp) {
  settings::set_forced_fallbacks({"relu"});
  EventCapture capture;
  const Tensor y = ops::relu(make({-2.f, 3.f}, {2}, lazy0()));
  EXPECT_EQ(values(y), (std::vector<float>{0.f, 3.f}));
  ASSERT_EQ(capture.fallbacks().size(), 1u);
  EXPECT_EQ(capture.fallbacks()[0].reason(), pb::FALLBACK_REASON_FORCED);
  EXPECT_EQ(capture.fallbacks()[0].graph_cut_nodes(), 0);
}

TEST_F(RuntimeTest, NonzeroOnALazyDeviceIsADataDependentFallback) {
  EventCapture capture;
  const Tensor x = make({0.f, 2.f, 0.f, 5.f}, {2, 2}, lazy0());
  const Tensor idx = ops::nonzero(ops::mul(x, x));
  EXPECT_TRUE(idx.device().is_lazy());
  EXPECT_EQ(idx.shape(), (Shape{2, 2}));
  const BufferPtr host = idx.host_buffer(pb::SYNC_CAUSE_TO_HOST);
  EXPECT_EQ(std::vector<int64_t>(host->as<int64_t>(), host->as<int64_t>() + 4), (std::vector<int64_t>{0, 1, 1, 1}));
  ASSERT_EQ(capture.fallbacks().size(), 1u);
  EXPECT_EQ(capture.fallbacks()[0].reason(), pb::FALLBACK_REASON_DATA_DEPENDENT);
  EXPECT_EQ(capture.fallbacks()[0].dtype(), "float32");
}

TEST_F(RuntimeTest, MarkStepPublishesOnlyChangedMetrics) {
  settings::set_metric_snapshot_ms(0);  // a snapshot at every barrier
  EventCapture capture;
  // "Changed" is against the last snapshot published, which earlier tests'
  // throttled barriers may have left behind SetUp's reset: publish one now.
  executor::publish_metric_snapshot(lazy0(), /*only_changed=*/true);
  const size_t earlier = capture.snapshots().size();
  const Tensor x = make({1.f, 2.f}, {2}, lazy0());
  Tensor y = ops::add(x, x);
  executor::mark_step(lazy0());
  executor::mark_step(lazy0());  // nothing ran: only MarkStep moved
  auto snaps = capture.snapshots();
  snaps.erase(snaps.begin(), snaps.begin() + static_cast<long>(earlier));
  ASSERT_EQ(snaps.size(), 2u);
  bool saw_execute = false;
  for (const auto& v : snaps[0].metrics()) saw_execute = saw_execute || v.name() == "ExecuteTime";
  EXPECT_TRUE(saw_execute);
  ASSERT_EQ(snaps[1].metrics_size(), 1);
  EXPECT_EQ(snaps[1].metrics(0).name(), "MarkStep");
  EXPECT_TRUE(snaps[1].metrics(0).is_counter());
  EXPECT_EQ(snaps[1].step(), snaps[0].step() + 1);
  executor::publish_metric_snapshot(lazy0(), /*only_changed=*/false);
  EXPECT_GT(capture.snapshots().back().metrics_size(), 5);
  settings::set_metric_snapshot_ms(100);
}

TEST_F(RuntimeTest, BarrierSnapshotsAreThrottledAndNothingIsLostMeanwhile) {
  settings::set_metric_snapshot_ms(0);
  {
    EventCapture listening;        // snapshots are built only while someone listens
    executor::mark_step(lazy0());  // the last snapshot before the quiet stretch
    ASSERT_EQ(listening.snapshots().size(), 1u);
  }
  EventCapture capture;
  settings::set_metric_snapshot_ms(3'600'000);  // an hour: none during these steps
  const Tensor x = make({1.f, 2.f}, {2}, lazy0());
  for (int i = 0; i < 3; ++i) {
    Tensor y = ops::add(x, x);
    executor::mark_step(lazy0());
  }
  EXPECT_TRUE(capture.snapshots().empty());
  EXPECT_EQ(capture.steps().size(), 3u);  // steps are never throttled
  settings::set_metric_snapshot_ms(0);
  executor::mark_step(lazy0());
  settings::set_metric_snapshot_ms(100);
  const auto snapshots = capture.snapshots();
  ASSERT_EQ(snapshots.size(), 1u);
  // The one snapshot carries what changed during the quiet steps.
  std::map<std::string, pb::MetricValue> by_name;
  for (const auto& v : snapshots[0].metrics()) by_name[v.name()] = v;
  ASSERT_TRUE(by_name.contains("ExecuteTime"));
  EXPECT_GE(by_name["ExecuteTime"].count(), 3);
  ASSERT_TRUE(by_name.contains("MarkStep"));
  EXPECT_GE(by_name["MarkStep"].value(), 4);
}

TEST_F(RuntimeTest, DeviceBufferGaugesFollowDeviceData) {
  const int64_t before = metrics::counters()["LiveDeviceBufferBytes"];
  {
    const Tensor x = make(std::vector<float>(256, 1.f), {256}, lazy0());
    EXPECT_EQ(metrics::counters()["LiveDeviceBufferBytes"] - before, 1024);
    const Tensor host = make(std::vector<float>(256, 1.f), {256});
    EXPECT_EQ(metrics::counters()["LiveDeviceBufferBytes"] - before, 1024);  // host memory is not counted
  }
  EXPECT_EQ(metrics::counters()["LiveDeviceBufferBytes"], before);
}

TEST_F(RuntimeTest, SnapshotPercentilesMatchASortedOracle) {
  metrics::Metric* m = metrics::metric("TestMetricForPercentiles");
  for (int i = 100; i >= 1; --i) m->add(i);
  const metrics::MetricStats s = m->stats();
  EXPECT_EQ(s.count, 100);
  EXPECT_DOUBLE_EQ(s.total, 5050);
  // numpy.percentile(range(1, 101), [50, 90, 99]): linear interpolation
  // between ranks (tests/e2e/test_percentiles.py checks recorded runs).
  EXPECT_DOUBLE_EQ(s.p50, 50.5);
  EXPECT_DOUBLE_EQ(s.p90, 90.1);
  EXPECT_DOUBLE_EQ(s.p99, 99.01);
}

// Every event-emitting path (compile, execute, step, transfer, fallback,
// scalar logs, metric snapshots) once, on the lazy and the cpu device.
void exercise_every_event_path() {
  settings::set_forced_fallbacks({"exp"});
  const Tensor x = make({0.f, 1.f, -1.f}, {3}, lazy0());  // an upload: a transfer
  const Tensor y = ops::add(ops::exp(x), x);              // a fallback, then a graph
  executor::log_scalar("loss", ops::sum(y, {}, false));
  executor::log_scalar("cpu_loss", make({2.f}, {1}));
  executor::publish_scalar(lazy0(), "lr", 0.1);
  executor::mark_step(lazy0());  // compile, execute, step, scalars, snapshot
  EXPECT_EQ(values(y).size(), 3u);
  executor::publish_metric_snapshot(lazy0(), false);
  settings::set_forced_fallbacks({});
}

TEST_F(RuntimeTest, NoEventIsBuiltWithoutASubscriber) {
  ASSERT_FALSE(events::enabled());
  const int64_t before = events::published_count();
  exercise_every_event_path();
  EXPECT_EQ(events::published_count(), before) << "a path publishes (and so builds) events nobody receives";
  // The same work with a subscriber does publish: the count sees every path.
  EventCapture capture;
  exercise_every_event_path();
  EXPECT_GE(events::published_count() - before, 7);
  EXPECT_FALSE(capture.fallbacks().empty());
  EXPECT_FALSE(capture.compiles().empty() && capture.executions().empty());
}

// The recorder takes the engine's event instead of copying it (issue 15):
// plain subscribers see it first, every taking subscriber gets the whole
// event (all but the last a copy), and an unsubscribed one gets nothing.
TEST_F(RuntimeTest, TakingSubscribersGetTheWholeEventAfterThePlainOnes) {
  std::vector<std::string> seen;
  const int plain = events::subscribe([&](const pb::Event& e) { seen.push_back("plain:" + e.scalar().name()); });
  std::vector<pb::Event> first, second;
  const int take1 = events::subscribe_taking([&](pb::Event&& e) {
    seen.push_back("take1");
    first.push_back(std::move(e));
  });
  const int take2 = events::subscribe_taking([&](pb::Event&& e) {
    seen.push_back("take2");
    second.push_back(std::move(e));
  });
  executor::publish_scalar(lazy0(), "loss", 0.25);
  events::unsubscribe(take1);
  executor::publish_scalar(lazy0(), "acc", 0.5);
  events::unsubscribe(take2);
  events::unsubscribe(plain);
  EXPECT_FALSE(events::enabled());
  EXPECT_EQ(seen, (std::vector<std::string>{"plain:loss", "take1", "take2", "plain:acc", "take2"}));
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 2u);
  for (const pb::Event* e : {&first[0], &second[0]}) {
    EXPECT_EQ(e->scalar().name(), "loss");
    EXPECT_EQ(e->scalar().value(), 0.25);
  }
  EXPECT_EQ(second[1].scalar().name(), "acc");
  EXPECT_EQ(second[1].scalar().value(), 0.5);
}

}  // namespace
}  // namespace lazyscope
