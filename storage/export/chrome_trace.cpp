#include "export/chrome_trace.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/step_times.h"
#include "lazyscope/event_text.h"

namespace lazyscope::storage {
namespace {

enum Thread : int {
  kCounters = 0,
  kSteps = 1,
  kCompiles = 2,
  kExecutions = 3,
  kFallbacks = 4,
  kTransfers = 5,
  kHostWaits = 6
};

constexpr std::pair<Thread, const char*> kThreadNames[] = {
    {kSteps, "steps"},         {kCompiles, "compiles"},   {kExecutions, "executions"},
    {kFallbacks, "fallbacks"}, {kTransfers, "transfers"}, {kHostWaits, "host waits (syncs)"},
};

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Nanoseconds as microseconds with exactly three decimals: exact, and the
// same text on every platform.
std::string micros(int64_t ns) {
  if (ns < 0) ns = 0;
  char text[32];
  std::snprintf(text, sizeof text, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  return text;
}

std::string number(double value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

std::string hash_hex(uint64_t hash) {
  char text[20];
  std::snprintf(text, sizeof text, "%016" PRIx64, hash);
  return text;
}

std::string source_text(const pb::SourceLocation& source) {
  if (source.file().empty()) return "";
  return source.file() + ":" + std::to_string(source.line());
}

// The "args" object, built one field at a time.
class Args {
 public:
  Args& raw(std::string_view key, const std::string& json_value) {
    text_ += text_.empty() ? "{" : ",";
    text_ += json_string(key) + ":" + json_value;
    return *this;
  }
  Args& integer(std::string_view key, int64_t value) { return raw(key, std::to_string(value)); }
  Args& text(std::string_view key, std::string_view value) { return raw(key, json_string(value)); }
  Args& boolean(std::string_view key, bool value) { return raw(key, value ? "true" : "false"); }
  std::string json() const { return text_.empty() ? "{}" : text_ + "}"; }

 private:
  std::string text_;
};

struct TraceEvent {
  int pid;
  int tid;
  int64_t ts_ns;  // relative to the run's first event
  size_t order;   // arrival order, the last sort key
  std::string json;
};

class TraceBuilder {
 public:
  explicit TraceBuilder(int64_t origin_ns) : origin_ns_(origin_ns) {}

  void complete(int replica, Thread thread, std::string_view name, std::string_view category, int64_t start_ns,
                int64_t duration_ns, const Args& args) {
    const int pid = replica + 1;
    const int64_t ts = start_ns - origin_ns_;
    add(pid, thread, ts,
        "{\"name\":" + json_string(name) + ",\"cat\":" + json_string(category) + ",\"ph\":\"X\",\"pid\":" +
            std::to_string(pid) + ",\"tid\":" + std::to_string(thread) + ",\"ts\":" + micros(ts) +
            ",\"dur\":" + micros(std::max<int64_t>(duration_ns, 0)) + ",\"args\":" + args.json() + "}");
    threads_[pid].insert(thread);
  }

  // A counter track (Perfetto draws one per name and process); `series` names
  // the value in the track's legend.
  void counter(int replica, std::string_view name, std::string_view category, std::string_view series, int64_t at_ns,
               double value) {
    const int pid = replica + 1;
    const int64_t ts = at_ns - origin_ns_;
    add(pid, kCounters, ts,
        "{\"name\":" + json_string(name) + ",\"cat\":" + json_string(category) +
            ",\"ph\":\"C\",\"pid\":" + std::to_string(pid) + ",\"tid\":0,\"ts\":" + micros(ts) + ",\"args\":{" +
            json_string(series) + ":" + number(value) + "}}");
    threads_[pid];
  }

  // The number of entries json() writes into traceEvents.
  size_t count() const {
    size_t metadata = 0;
    for (const auto& [pid, threads] : threads_) {
      metadata += 2;
      for (const auto& [tid, name] : kThreadNames) metadata += threads.contains(tid) ? 2 : 0;
    }
    return metadata + events_.size();
  }

  std::string json(const pb::RunInfo& run) {
    std::vector<std::string> lines;
    for (const auto& [pid, threads] : threads_) {
      const std::string head = "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",";
      lines.push_back(head + "\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"replica " +
                      std::to_string(pid - 1) + "\"}}");
      lines.push_back(
          head + "\"tid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":" + std::to_string(pid) + "}}");
      for (const auto& [tid, name] : kThreadNames) {
        if (!threads.contains(tid)) continue;
        const std::string thread_head = head + "\"tid\":" + std::to_string(tid) + ",";
        lines.push_back(thread_head + "\"name\":\"thread_name\",\"args\":{\"name\":\"" + name + "\"}}");
        lines.push_back(thread_head + "\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" + std::to_string(tid) +
                        "}}");
      }
    }
    std::sort(events_.begin(), events_.end(), [](const TraceEvent& a, const TraceEvent& b) {
      return std::tie(a.pid, a.tid, a.ts_ns, a.order) < std::tie(b.pid, b.tid, b.ts_ns, b.order);
    });
    for (auto& event : events_) lines.push_back(std::move(event.json));

    std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"run_id\":" + std::to_string(run.id()) +
                      ",\"run_name\":" + json_string(run.name()) + "},\"traceEvents\":[";
    for (size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? "\n" : ",\n") + lines[i];
    return out + "\n]}\n";
  }

 private:
  void add(int pid, int tid, int64_t ts, std::string json) {
    events_.push_back(TraceEvent{pid, tid, ts, events_.size(), std::move(json)});
  }

  const int64_t origin_ns_;
  std::vector<TraceEvent> events_;
  std::map<int, std::set<int>> threads_;  // pid -> tids with events
};

// The engine's memory counters, drawn as counter tracks: device memory is
// what runs out, host buffers show what stays alive between steps.
bool is_memory_metric(std::string_view name) { return name == "LiveDeviceBufferBytes" || name == "LiveBufferBytes"; }

// The start of the run's first timed event, the trace's zero.
int64_t first_start_ns(const pb::RunTimeline& timeline) {
  int64_t first = std::numeric_limits<int64_t>::max();
  for (const pb::Event& event : timeline.events()) {
    switch (event.kind_case()) {
      case pb::Event::kStep: first = std::min(first, event.step().start_ns()); break;
      case pb::Event::kCompile: first = std::min(first, event.compile().start_ns()); break;
      case pb::Event::kExecute: first = std::min(first, event.execute().start_ns()); break;
      case pb::Event::kFallback: first = std::min(first, event.fallback().start_ns()); break;
      case pb::Event::kTransfer: first = std::min(first, event.transfer().start_ns()); break;
      case pb::Event::kMetrics: first = std::min(first, event.metrics().time_ns()); break;
      default: break;
    }
  }
  return first == std::numeric_limits<int64_t>::max() ? 0 : first;
}

}  // namespace

ChromeTrace chrome_trace(const pb::RunTimeline& timeline) {
  TraceBuilder trace(first_start_ns(timeline));
  std::map<std::pair<int, int64_t>, int64_t> step_end_ns;  // (replica, step) -> end
  // The step breakdown every view shows (analysis/step_times.h), not the
  // engine's own bookkeeping: one definition of host wait and fallback.
  std::map<std::pair<int, int64_t>, StepTimes> breakdown;
  for (const StepTimes& times : step_times(timeline)) breakdown[{times.replica, times.step}] = times;
  for (const pb::Event& event : timeline.events()) {
    const int replica = event.replica();
    switch (event.kind_case()) {
      case pb::Event::kStep: {
        const pb::StepEvent& step = event.step();
        step_end_ns[{replica, step.step()}] = step.end_ns();
        const StepTimes& times = breakdown[{replica, step.step()}];
        trace.complete(replica, kSteps, "step " + std::to_string(step.step()), "step", step.start_ns(),
                       step.end_ns() - step.start_ns(),
                       Args()
                           .integer("step", step.step())
                           .boolean("ran_graph", times.ran_graph)
                           .raw("trace_us", micros(times.trace_ns))
                           .raw("compile_us", micros(times.compile_ns))
                           .raw("execute_us", micros(times.execute_ns))
                           .raw("transfer_us", micros(times.transfer_ns))
                           .raw("host_wait_us", micros(times.host_wait_ns))
                           .raw("fallback_us", micros(times.fallback_ns)));
        break;
      }
      case pb::Event::kCompile: {
        const pb::CompileEvent& compile = event.compile();
        trace.complete(replica, kCompiles, "compile " + hash_hex(compile.graph_hash()), "compile", compile.start_ns(),
                       compile.duration_ns(),
                       Args()
                           .integer("step", compile.step())
                           .text("graph", hash_hex(compile.graph_hash()))
                           .text("reason_kind", pb::CompileReasonKind_Name(compile.reason_kind()))
                           .text("reason", compile.reason())
                           .text("source", source_text(compile.source())));
        break;
      }
      case pb::Event::kExecute: {
        const pb::ExecuteEvent& execute = event.execute();
        trace.complete(replica, kExecutions, "execute " + hash_hex(execute.graph_hash()), "execute", execute.start_ns(),
                       execute.duration_ns(),
                       Args()
                           .integer("step", execute.step())
                           .text("graph", hash_hex(execute.graph_hash()))
                           .boolean("cache_hit", execute.cache_hit())
                           .text("cause", pb::SyncCause_Name(execute.cause()))
                           .integer("node_count", execute.node_count())
                           .text("source", source_text(execute.source())));
        break;
      }
      case pb::Event::kFallback: {
        const pb::FallbackEvent& fallback = event.fallback();
        trace.complete(replica, kFallbacks, fallback.op(), "fallback", fallback.start_ns(), fallback.duration_ns(),
                       Args()
                           .integer("step", fallback.step())
                           .integer("bytes", fallback.bytes())
                           .text("source", source_text(fallback.source())));
        break;
      }
      case pb::Event::kTransfer: {
        const pb::TransferEvent& transfer = event.transfer();
        trace.complete(replica, kTransfers, transfer.to_device() ? "to device" : "to host", "transfer",
                       transfer.start_ns(), transfer.duration_ns(),
                       Args().integer("step", transfer.step()).integer("bytes", transfer.bytes()));
        break;
      }
      case pb::Event::kMetrics: {
        // Snapshots carry only the metrics that changed, so a counter track
        // holds its value until the next sample, as Perfetto draws it.
        for (const pb::MetricValue& metric : event.metrics().metrics()) {
          if (!is_memory_metric(metric.name())) continue;
          trace.counter(replica, metric.name(), "memory", "bytes", event.metrics().time_ns(),
                        static_cast<double>(metric.value()));
        }
        break;
      }
      default: break;
    }
  }
  // Every sync the script forced by reading a value: the host's wait, from
  // the compile it waited for (if any) to the end of the execution.
  for (const SyncCost& cost : sync_costs(timeline)) {
    const pb::ExecuteEvent& execute = *cost.execute;
    if (!event_text::is_value_read(execute.cause())) continue;
    const int64_t start = cost.compile != nullptr ? cost.compile->start_ns() : execute.start_ns();
    const int64_t end = execute.start_ns() + execute.duration_ns();
    trace.complete(cost.replica, kHostWaits, "sync: " + event_text::sync_cause_label(execute.cause()), "host_wait",
                   start, std::max<int64_t>(end - start, cost.wait_ns()),
                   Args()
                       .integer("step", execute.step())
                       .text("cause", event_text::sync_cause_name(execute.cause()))
                       .text("graph", hash_hex(execute.graph_hash()))
                       .raw("host_wait_us", micros(cost.wait_ns()))
                       .raw("compile_us", micros(cost.compile_ns))
                       .text("source", source_text(execute.source())));
  }
  // Scalars after every step is known: each at the end of its step, or of the
  // last step before it that was recorded (a value logged after the last
  // barrier). NaN and infinities have no JSON spelling: left out.
  for (const pb::Event& event : timeline.events()) {
    if (event.kind_case() != pb::Event::kScalar) continue;
    const pb::ScalarEvent& scalar = event.scalar();
    if (!std::isfinite(scalar.value())) continue;
    auto after = step_end_ns.upper_bound({event.replica(), scalar.step()});
    if (after == step_end_ns.begin()) continue;
    const auto& [key, end_ns] = *std::prev(after);
    if (key.first != event.replica()) continue;  // no step of this replica at or before it
    trace.counter(event.replica(), scalar.name(), "scalar", "value", end_ns, scalar.value());
  }
  return {trace.json(timeline.run()), trace.count()};
}

std::string chrome_trace_json(const pb::RunTimeline& timeline) { return chrome_trace(timeline).json; }

}  // namespace lazyscope::storage
