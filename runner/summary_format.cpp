#include "summary_format.h"

#include <cstdio>
#include <ctime>

#include "analysis/run_metrics.h"
#include "cli_args.h"
#include "query/run_kernels.h"

namespace lazyscope::runner {
namespace {

std::string printf_str(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string local_time(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::string status_name(pb::RunStatus status) {
  switch (status) {
    case pb::RUN_STATUS_RUNNING: return "running";
    case pb::RUN_STATUS_SUCCEEDED: return "succeeded";
    case pb::RUN_STATUS_FAILED: return "failed";
    case pb::RUN_STATUS_INTERRUPTED: return "interrupted";
    case pb::RUN_STATUS_CRASHED: return "crashed";
    default: return "unknown";
  }
}

std::string format_duration_ms(double ms) {
  if (ms < 1) return printf_str("%.0f us", ms * 1000);
  if (ms < 1000) return printf_str("%.1f ms", ms);
  if (ms < 120000) return printf_str("%.2f s", ms / 1000);
  return printf_str("%.1f min", ms / 60000);
}

std::string format_summary(const pb::RunSummary& s, TracebackAt traceback_at) {
  const pb::RunInfo& r = s.run();
  const std::string exit_code = r.has_exit_code() ? "exit code " + std::to_string(r.exit_code())
                                                  : std::string("exit code unknown");
  std::string out = printf_str("run #%lld \"%s\" %s in %s (%s)\n", static_cast<long long>(r.id()), r.name().c_str(),
                               status_name(r.status()).c_str(), format_duration_ms(s.wall_ms()).c_str(),
                               exit_code.c_str());
  if (!r.error().empty()) out += "  error        " + r.error() + "\n";
  // A run that did not finish: say how it ended and that what follows is
  // only what was recorded until then.
  const auto steps = static_cast<long long>(s.steps());
  const char* ended = r.status() == pb::RUN_STATUS_FAILED        ? "the script raised an error"
                      : r.status() == pb::RUN_STATUS_INTERRUPTED ? "stopped by a signal (Ctrl-C or SIGTERM)"
                      : r.status() == pb::RUN_STATUS_CRASHED
                          ? "the process died without finishing (killed, or out of memory)"
                      : r.status() == pb::RUN_STATUS_RUNNING ? "still running"
                                                             : nullptr;
  if (ended != nullptr) {
    out += printf_str("  ended        %s after %lld recorded step%s; below is what was recorded until then%s\n", ended,
                      steps, steps == 1 ? "" : "s",
                      r.traceback().empty()                 ? ""
                      : traceback_at == TracebackAt::kAbove ? ", the traceback above"
                                                            : ", the traceback last");
  }
  out += steps == 0 ? std::string("  steps        0\n")
                    : printf_str("  steps        %lld, median %s per step after warm-up\n", steps,
                                 format_duration_ms(s.median_step_ms()).c_str());
  out += printf_str("  compiles     %lld uncached (%s in total)\n", static_cast<long long>(s.compiles()),
                    format_duration_ms(s.compile_ms()).c_str());
  if (s.executions() == 0) {
    // An eager run (--device cpu) runs no graphs: a hit rate of 0% would
    // read as a cache that never hits.
    out += "  executions   0 (no graph ran: no cache to hit)\n";
  } else {
    const double hit_rate = 100.0 * static_cast<double>(s.cache_hits()) / static_cast<double>(s.executions());
    out += printf_str("  executions   %lld, %lld of them cached (hit rate %.0f%%), %s in total\n",
                      static_cast<long long>(s.executions()), static_cast<long long>(s.cache_hits()), hit_rate,
                      format_duration_ms(s.execute_ms()).c_str());
  }
  if (s.fallbacks()) out += printf_str("  fallbacks    %lld\n", static_cast<long long>(s.fallbacks()));
  out += "  started      " + local_time(r.started_unix_ms()) + " on " + r.host() + "\n";
  return out;
}

// One column per field of format_run_line, each headed.
std::string format_run_header() {
  return printf_str("%5s  %-24s %-11s %-19s %7s %8s  %s", "id", "name", "status", "started", "steps", "compiles",
                    "duration");
}

std::string format_run_line(const pb::RunSummary& s) {
  const pb::RunInfo& r = s.run();
  return printf_str("%5lld  %-24s %-11s %-19s %7lld %8lld  %s", static_cast<long long>(r.id()),
                    r.name().substr(0, 24).c_str(), status_name(r.status()).c_str(),
                    local_time(r.started_unix_ms()).c_str(), static_cast<long long>(s.steps()),
                    static_cast<long long>(s.compiles()), format_duration_ms(s.wall_ms()).c_str());
}

std::string format_findings(const google::protobuf::RepeatedPtrField<pb::Finding>& findings, pb::RunStatus status) {
  if (findings.empty()) {
    // A run that did not finish is not "fine": its recorded part is.
    if (status == pb::RUN_STATUS_SUCCEEDED || status == pb::RUN_STATUS_UNSPECIFIED) {
      return "\ndiagnosis: nothing slows this run down that LazyScope can see\n";
    }
    return "\ndiagnosis: the run did not finish (" + status_name(status) +
           "); nothing in the part that was recorded slows it down\n";
  }
  std::string out = "\ndiagnosis:\n";
  for (const pb::Finding& f : findings) {
    const char* severity = f.severity() == pb::SEVERITY_CRITICAL  ? "critical"
                           : f.severity() == pb::SEVERITY_WARNING ? "warning"
                                                                  : "info";
    out += printf_str("  [%s] ", severity) + f.title() + "\n";
    const std::string steps = f.first_step() == f.last_step()
                                  ? printf_str("step %lld", static_cast<long long>(f.first_step()))
                                  : printf_str("steps %lld-%lld", static_cast<long long>(f.first_step()),
                                               static_cast<long long>(f.last_step()));
    const std::string times = f.count() == 1 ? std::string("once")
                                             : printf_str("%lld times", static_cast<long long>(f.count()));
    out += printf_str("      %s, %s, %s lost (%.1f%% of step time)\n", steps.c_str(), times.c_str(),
                      format_duration_ms(f.time_lost_ms()).c_str(), 100.0 * f.share_of_step_time());
    if (!f.detail().empty()) out += "      " + f.detail() + "\n";
    out += "      fix: " + f.fix() + "\n";
  }
  return out;
}

std::string format_metrics(const pb::MetricsReport& report) {
  if (report.metrics().empty()) return "";
  std::string out = printf_str("\nmetrics (last snapshot, step %lld):\n", static_cast<long long>(report.step()));
  for (const pb::MetricValue& m : report.metrics()) {
    if (storage::is_unused_cause_counter(m)) continue;
    if (m.is_counter()) {
      out += printf_str("  %-32s %lld\n", m.name().c_str(), static_cast<long long>(m.value()));
    } else {
      out += printf_str("  %-32s %lld samples, %s in total, p50 %s, p90 %s, p99 %s\n", m.name().c_str(),
                        static_cast<long long>(m.count()), format_duration_ms(m.total_ms()).c_str(),
                        format_duration_ms(m.p50_ms()).c_str(), format_duration_ms(m.p90_ms()).c_str(),
                        format_duration_ms(m.p99_ms()).c_str());
    }
  }
  return out;
}

namespace {

// "add (train.py:11), relu (train.py:11) +3 more": the first IR nodes of a kernel.
std::string format_kernel_nodes(const pb::KernelRow& k) {
  constexpr int kShown = 3;
  std::string out;
  for (int i = 0; i < k.nodes_size() && i < kShown; ++i) {
    const pb::KernelNode& n = k.nodes(i);
    if (!out.empty()) out += ", ";
    if (n.op().empty()) {
      out += printf_str("#%d", n.id());
    } else {
      out += n.op();
    }
    if (n.source().line() > 0) {
      const std::string& file = n.source().file();
      const std::string base = file.substr(file.find_last_of('/') + 1);  // npos + 1 is 0: the whole name
      out += printf_str(" (%s:%d)", base.c_str(), n.source().line());
    }
  }
  if (k.nodes_size() > kShown) out += printf_str(" +%d more", k.nodes_size() - kShown);
  return out;
}

}  // namespace

std::string format_kernel_report(const pb::KernelReport& report) {
  if (report.kernels_size() == 0) return printf_str("no kernel profile: %s\n", report.missing_reason().c_str());
  std::string out = printf_str("kernels: %d in %d profiled graph(s), %s of kernel time", report.kernels_size(),
                               report.graphs(), format_duration_ms(report.total_ms()).c_str());
  if (report.peak_bytes() > 0) {
    const double b = static_cast<double>(report.peak_bytes());
    out += b >= 1e6 ? printf_str(", memory-plan peak %.1f MB", b / 1e6)
                    : printf_str(", memory-plan peak %.1f kB", b / 1e3);
  }
  out += "\n";
  if (report.has_peaks()) {
    const pb::MachinePeakEvent& p = report.peaks();
    out += printf_str("machine peaks: %.1f GFLOP/s (SGEMM), %.1f GB/s (STREAM triad)", p.gemm_gflops(),
                      p.stream_gbps());
    if (p.cache_gbps() > 0) {
      out += printf_str(", %.1f GB/s in cache (triad over %.1f MB; the roof of kernels that fit)", p.cache_gbps(),
                        static_cast<double>(p.cache_bytes()) / 1e6);
    }
    out += printf_str(", %d thread(s)%s%s\n", p.threads(), p.isa().empty() ? "" : ", ", p.isa().c_str());
  } else {
    out += "machine peaks: not recorded (no roofline fractions)\n";
  }
  out += printf_str("\n%10s %6s %7s %10s %8s %8s %5s  %-31s %-8s %s\n", "total", "share", "calls", "mean", "GFLOP/s",
                    "GB/s", "roof", "kernel", "graph", "IR nodes");
  bool first_calls_only = false;
  for (const pb::KernelRow& k : report.kernels()) {
    const std::string roof = report.has_peaks() && k.roofline_fraction() > 0
                                 ? printf_str("%.0f%%", 100 * k.roofline_fraction())
                                 : std::string("-");
    const bool first_only = k.first_call_only();
    first_calls_only |= first_only;
    out += printf_str("%10s %5.1f%% %7lld %10s %8.2f %8.2f %5s  %-31s %-8.8s %s\n",
                      format_duration_ms(k.total_ms()).c_str(), 100 * k.share(), static_cast<long long>(k.calls()),
                      (format_duration_ms(k.mean_us() / 1e3) + (first_only ? "*" : "")).c_str(), k.gflops(), k.gbps(),
                      roof.c_str(), storage::kernel_display_name(k).c_str(), hash_hex(k.graph_hash()).c_str(),
                      format_kernel_nodes(k).c_str());
  }
  if (first_calls_only) {
    out +=
        "\n* timed on the graph's first and only call, which includes one-time set-up (first touch of its\n"
        "  memory, code generated per matrix shape): slower than the kernel runs once warm\n";
  }
  return out;
}

std::string format_replicas(const pb::RunReport& report) {
  if (report.replicas_size() < 2) return "";
  std::string out = "\nreplicas:\n";
  for (const pb::ReplicaStats& r : report.replicas()) {
    const double per_step = r.steps() == 0 ? 0.0 : r.collective_ms() / static_cast<double>(r.steps());
    char line[256];
    std::snprintf(line, sizeof line, "  %-4d %6lld steps  median %s  in collectives %s (%s per step)  sent %.2f MB\n",
                  r.replica(), static_cast<long long>(r.steps()), format_duration_ms(r.step_p50_ms()).c_str(),
                  format_duration_ms(r.collective_ms()).c_str(), format_duration_ms(per_step).c_str(),
                  static_cast<double>(r.collective_bytes()) / 1e6);
    out += line;
  }
  return out;
}

}  // namespace lazyscope::runner
