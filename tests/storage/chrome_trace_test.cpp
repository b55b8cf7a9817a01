// Chrome trace export of a recorded run: the exact JSON text.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "export/chrome_trace.h"
#include "query/history_reader.h"
#include "recorder/recorder.h"
#include "test_support.h"

namespace lazyscope::storage {
namespace {

using test_support::ScratchFolder;

constexpr uint64_t kGraph = 0xabc;

// A metric snapshot as the engine publishes it: the counters that changed.
pb::Event snapshot_at(int64_t step, int64_t time_ns, std::vector<std::pair<const char*, int64_t>> counters) {
  pb::Event event;
  event.mutable_metrics()->set_step(step);
  event.mutable_metrics()->set_time_ns(time_ns);
  for (const auto& [name, value] : counters) {
    pb::MetricValue& metric = *event.mutable_metrics()->add_metrics();
    metric.set_name(name);
    metric.set_is_counter(true);
    metric.set_value(value);
  }
  return event;
}

int64_t record_small_run(const std::string& path) {
  pb::RunInfo info = test_support::sample_run_info("trace \"demo\"");
  Recorder recorder(path, info);
  const pb::SourceLocation line12 = test_support::source_at("train.py", 12);
  // The transfer comes first: it is the trace's zero (1 ms on the engine clock).
  recorder.record(test_support::transfer_at(0, true, 1'000'000, 2'500, 4096));
  recorder.record(test_support::step_event(0, 1'000'500, 3'000'000, 1'200'000));
  recorder.record(test_support::compile_at(0, kGraph, 1'100'000, 1'200'000, pb::COMPILE_REASON_FIRST_SIGHT, 0, line12,
                                           test_support::chain_graph(kGraph, {2}, 1)));
  recorder.record(test_support::execute_at(0, kGraph, 2'400'000, 300'000, pb::SYNC_CAUSE_MARK_STEP, line12, false));
  recorder.record(test_support::step_event(1, 3'100'000, 3'600'000, 0));
  recorder.record(
      test_support::fallback_at(1, "aten::nonzero", 3'200'000, 50'000, 128, test_support::source_at("train.py", 20)));
  recorder.record(test_support::execute_at(1, kGraph, 3'300'000, 250'000, pb::SYNC_CAUSE_MARK_STEP, line12, true));
  recorder.record(test_support::step_event(0, 1'000'500, 2'900'000, 0, /*replica=*/1));
  recorder.record(test_support::scalar_event(0, "loss", 2.5));
  recorder.record(test_support::scalar_event(1, "loss", 1.25));
  recorder.record(test_support::scalar_event(0, "accuracy", std::numeric_limits<double>::quiet_NaN()));
  recorder.record(test_support::scalar_event(5, "accuracy", 0.75));  // after the last step
  // Memory counters become counter tracks; other metrics stay in `show`.
  recorder.record(
      snapshot_at(0, 2'950'000, {{"LiveDeviceBufferBytes", 4096}, {"ExecuteCount", 1}, {"LiveBufferBytes", 8192}}));
  recorder.record(snapshot_at(1, 3'650'000, {{"LiveDeviceBufferBytes", 0}}));
  recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
  return recorder.run_id();
}

TEST(ChromeTrace, ExportsProcessesThreadsSpansAndCounters) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  const int64_t run_id = record_small_run(path);
  const auto timeline = HistoryReader(path).timeline(run_id);
  ASSERT_TRUE(timeline.has_value());
  const std::string expected =
      R"json({"displayTimeUnit":"ms","otherData":{"run_id":1,"run_name":"trace \"demo\""},"traceEvents":[
{"ph":"M","pid":1,"tid":0,"name":"process_name","args":{"name":"replica 0"}},
{"ph":"M","pid":1,"tid":0,"name":"process_sort_index","args":{"sort_index":1}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"steps"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_sort_index","args":{"sort_index":1}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"compiles"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_sort_index","args":{"sort_index":2}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"executions"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_sort_index","args":{"sort_index":3}},
{"ph":"M","pid":1,"tid":4,"name":"thread_name","args":{"name":"fallbacks"}},
{"ph":"M","pid":1,"tid":4,"name":"thread_sort_index","args":{"sort_index":4}},
{"ph":"M","pid":1,"tid":5,"name":"thread_name","args":{"name":"transfers"}},
{"ph":"M","pid":1,"tid":5,"name":"thread_sort_index","args":{"sort_index":5}},
{"ph":"M","pid":2,"tid":0,"name":"process_name","args":{"name":"replica 1"}},
{"ph":"M","pid":2,"tid":0,"name":"process_sort_index","args":{"sort_index":2}},
{"ph":"M","pid":2,"tid":1,"name":"thread_name","args":{"name":"steps"}},
{"ph":"M","pid":2,"tid":1,"name":"thread_sort_index","args":{"sort_index":1}},
{"name":"LiveDeviceBufferBytes","cat":"memory","ph":"C","pid":1,"tid":0,"ts":1950.000,"args":{"bytes":4096}},
{"name":"LiveBufferBytes","cat":"memory","ph":"C","pid":1,"tid":0,"ts":1950.000,"args":{"bytes":8192}},
{"name":"loss","cat":"scalar","ph":"C","pid":1,"tid":0,"ts":2000.000,"args":{"value":2.5}},
{"name":"loss","cat":"scalar","ph":"C","pid":1,"tid":0,"ts":2600.000,"args":{"value":1.25}},
{"name":"accuracy","cat":"scalar","ph":"C","pid":1,"tid":0,"ts":2600.000,"args":{"value":0.75}},
{"name":"LiveDeviceBufferBytes","cat":"memory","ph":"C","pid":1,"tid":0,"ts":2650.000,"args":{"bytes":0}},
{"name":"step 0","cat":"step","ph":"X","pid":1,"tid":1,"ts":0.500,"dur":1999.500,"args":{"step":0,"ran_graph":true,"trace_us":497.000,"compile_us":1200.000,"execute_us":300.000,"transfer_us":2.500,"host_wait_us":0.000,"fallback_us":0.000}},
{"name":"step 1","cat":"step","ph":"X","pid":1,"tid":1,"ts":2100.000,"dur":500.000,"args":{"step":1,"ran_graph":true,"trace_us":200.000,"compile_us":0.000,"execute_us":250.000,"transfer_us":0.000,"host_wait_us":0.000,"fallback_us":50.000}},
{"name":"compile 0000000000000abc","cat":"compile","ph":"X","pid":1,"tid":2,"ts":100.000,"dur":1200.000,"args":{"step":0,"graph":"0000000000000abc","reason_kind":"COMPILE_REASON_FIRST_SIGHT","reason":"COMPILE_REASON_FIRST_SIGHT","source":"train.py:12"}},
{"name":"execute 0000000000000abc","cat":"execute","ph":"X","pid":1,"tid":3,"ts":1400.000,"dur":300.000,"args":{"step":0,"graph":"0000000000000abc","cache_hit":false,"cause":"SYNC_CAUSE_MARK_STEP","node_count":3,"source":"train.py:12"}},
{"name":"execute 0000000000000abc","cat":"execute","ph":"X","pid":1,"tid":3,"ts":2300.000,"dur":250.000,"args":{"step":1,"graph":"0000000000000abc","cache_hit":true,"cause":"SYNC_CAUSE_MARK_STEP","node_count":3,"source":"train.py:12"}},
{"name":"aten::nonzero","cat":"fallback","ph":"X","pid":1,"tid":4,"ts":2200.000,"dur":50.000,"args":{"step":1,"bytes":128,"source":"train.py:20"}},
{"name":"to device","cat":"transfer","ph":"X","pid":1,"tid":5,"ts":0.000,"dur":2.500,"args":{"step":0,"bytes":4096}},
{"name":"step 0","cat":"step","ph":"X","pid":2,"tid":1,"ts":0.500,"dur":1899.500,"args":{"step":0,"ran_graph":false,"trace_us":1899.500,"compile_us":0.000,"execute_us":0.000,"transfer_us":0.000,"host_wait_us":0.000,"fallback_us":0.000}}
]}
)json";
  EXPECT_EQ(chrome_trace_json(*timeline), expected);
}

TEST(ChromeTrace, EmptyRunHasNoEventsAndUnknownRunHasNoTimeline) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  int64_t run_id = 0;
  {
    Recorder recorder(path, test_support::sample_run_info("empty"));
    recorder.finish(pb::RUN_STATUS_SUCCEEDED, 0, "", "");
    run_id = recorder.run_id();
  }
  HistoryReader reader(path);
  const auto timeline = reader.timeline(run_id);
  ASSERT_TRUE(timeline.has_value());
  EXPECT_EQ(timeline->events_size(), 0);
  EXPECT_EQ(chrome_trace_json(*timeline),
            "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"run_id\":1,\"run_name\":\"empty\"},\"traceEvents\":[\n]}\n");
  EXPECT_FALSE(reader.timeline(run_id + 1).has_value());
}

TEST(ChromeTrace, TimelineHoldsEveryReplicaAndCompilesWithoutTheirIr) {
  ScratchFolder scratch;
  const std::string path = scratch.file("history.sqlite");
  const int64_t run_id = record_small_run(path);
  const auto timeline = HistoryReader(path).timeline(run_id);
  ASSERT_TRUE(timeline.has_value());
  EXPECT_EQ(timeline->run().name(), "trace \"demo\"");
  EXPECT_EQ(timeline->events_size(), 14);  // 12 events and the 2 metric snapshots
  int replica1_steps = 0;
  int snapshots = 0;
  for (const pb::Event& event : timeline->events()) {
    if (event.has_step() && event.replica() == 1) ++replica1_steps;
    if (event.has_metrics()) {
      EXPECT_EQ(event.metrics().step(), snapshots++);  // in arrival order
    }
    if (event.has_compile()) {
      EXPECT_EQ(event.compile().graph().nodes_size(), 0);
      EXPECT_EQ(event.compile().source().line(), 12);
    }
  }
  EXPECT_EQ(replica1_steps, 1);
  EXPECT_EQ(snapshots, 2);
  EXPECT_TRUE(timeline->events(12).has_metrics() && timeline->events(13).has_metrics());
}

}  // namespace
}  // namespace lazyscope::storage
