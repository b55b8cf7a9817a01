#include "query/run_kernels.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "db/history_file.h"
#include "db/statement.h"
#include "query/run_graphs.h"

namespace lazyscope::storage {
namespace {

// The columns a MachinePeakEvent is stored in, and a row of them read back.
constexpr const char* kPeakColumns = "gemm_gflops, stream_gbps, threads, isa, cache_gbps, cache_bytes";

pb::MachinePeakEvent peak_at(const Statement& row, int first) {
  pb::MachinePeakEvent peaks;
  peaks.set_gemm_gflops(row.double_at(first));
  peaks.set_stream_gbps(row.double_at(first + 1));
  peaks.set_threads(static_cast<int32_t>(row.int64_at(first + 2)));
  peaks.set_isa(row.text_at(first + 3));
  peaks.set_cache_gbps(row.double_at(first + 4));
  peaks.set_cache_bytes(row.int64_at(first + 5));
  return peaks;
}

std::optional<pb::MachinePeakEvent> read_peaks(const HistoryFile& file, int64_t run_id) {
  // Replica 0's peaks (replicas of a process share the machine), else the first.
  Statement row(
      file, std::string("SELECT ") + kPeakColumns + " FROM machine_peaks WHERE run_id = ?1 ORDER BY replica LIMIT 1");
  row.bind_int64(1, run_id);
  if (!row.next_row()) return std::nullopt;
  pb::MachinePeakEvent peaks = peak_at(row, 0);
  row.reset();
  return peaks;
}

// The rates of a row from its measured fields.
void rate(pb::KernelRow& k, const std::optional<pb::MachinePeakEvent>& peaks) {
  constexpr double kNsPerMs = 1e6;
  const double mean_ns = k.samples() > 0 ? k.timed_ms() * kNsPerMs / static_cast<double>(k.samples()) : 0.0;
  k.set_mean_us(mean_ns / 1e3);
  k.set_total_ms(mean_ns * static_cast<double>(k.calls()) / kNsPerMs);
  // FLOP per ns is GFLOP/s; byte per ns is GB/s.
  k.set_gflops(mean_ns > 0 ? static_cast<double>(k.flops()) / mean_ns : 0.0);
  k.set_gbps(mean_ns > 0 ? static_cast<double>(k.bytes()) / mean_ns : 0.0);
  k.set_intensity(k.bytes() > 0 ? static_cast<double>(k.flops()) / static_cast<double>(k.bytes()) : 0.0);
  // The engine drops the first call's timings once a later call is timed.
  k.set_first_call_only(k.samples() == 1 && k.calls() <= 1);
  if (!peaks) return;
  // A kernel whose bytes fit the cache triad's working set can find its
  // operands in cache (a step's small kernels do: they read what the one
  // before wrote), so its roof is the cache's bandwidth; the rest stream
  // from memory.
  k.set_in_cache(peaks->cache_gbps() > 0 && k.bytes() > 0 && k.bytes() <= peaks->cache_bytes());
  const double bandwidth = k.in_cache() ? peaks->cache_gbps() : peaks->stream_gbps();
  k.set_attainable(k.flops() > 0
                       ? std::min(peaks->gemm_gflops(), (k.intensity() > 0 ? k.intensity() : 1e300) * bandwidth)
                       : bandwidth);
  if (mean_ns <= 0 || k.attainable() <= 0) return;
  k.set_roofline_fraction((k.flops() > 0 ? k.gflops() : k.gbps()) / k.attainable());
}

// Why a run has no kernels to show: nothing compiled ran, or the engine that
// recorded it did not profile.
std::string missing_reason(const HistoryFile& file, int64_t run_id) {
  Statement count(file, "SELECT COUNT(*) FROM executions WHERE run_id = ?1");
  count.bind_int64(1, run_id);
  count.next_row();
  const int64_t executions = count.int64_at(0);
  count.reset();
  if (executions == 0) {
    return "This run executed no compiled graph, so there are no kernels to profile: it ran eagerly on the "
           "`cpu` device, or ended before its first step. Kernel profiles come from graphs run on a lazy device.";
  }
  return "This run executed " + std::to_string(executions) +
         " compiled graph(s) but recorded no kernel profile: the LazyScope that recorded it did not profile "
         "kernels (a history from before kernel profiles, or profiling was off). Record it again to see its kernels.";
}

}  // namespace

std::vector<pb::Event> read_kernel_events(const HistoryFile& file, int64_t run_id) {
  std::vector<pb::Event> events;
  Statement peaks(
      file, std::string("SELECT replica, ") + kPeakColumns + " FROM machine_peaks WHERE run_id = ?1 ORDER BY replica");
  peaks.bind_int64(1, run_id);
  while (peaks.next_row()) {
    pb::Event& e = events.emplace_back();
    e.set_replica(static_cast<int32_t>(peaks.int64_at(0)));
    *e.mutable_machine_peak() = peak_at(peaks, 1);
  }
  Statement rows(file, R"sql(
    SELECT p.replica, p.graph_hash, p.step, p.executions, p.peak_bytes,
           k.kernel_index, k.name, k.flops, k.bytes, k.samples, k.total_ns, n.value, k.code
    FROM kernel_profiles AS p
    LEFT JOIN kernel_profile_kernels AS k
      ON k.run_id = p.run_id AND k.replica = p.replica AND k.graph_hash = p.graph_hash
    LEFT JOIN json_each(k.nodes_json) AS n
    WHERE p.run_id = ?1
    ORDER BY p.replica, p.graph_hash, k.kernel_index, n.key)sql");
  rows.bind_int64(1, run_id);
  pb::KernelProfileEvent* profile = nullptr;
  pb::KernelProfile* kernel = nullptr;
  while (rows.next_row()) {
    const int32_t replica = static_cast<int32_t>(rows.int64_at(0));
    const uint64_t hash = rows.hash_at(1);
    if (profile == nullptr || events.back().replica() != replica || profile->graph_hash() != hash) {
      pb::Event& e = events.emplace_back();
      e.set_replica(replica);
      profile = e.mutable_kernel_profile();
      profile->set_graph_hash(hash);
      profile->set_step(rows.int64_at(2));
      profile->set_executions(rows.int64_at(3));
      profile->set_peak_bytes(rows.int64_at(4));
      kernel = nullptr;
    }
    if (rows.is_null_at(5)) continue;  // a graph profiled without kernels
    const int32_t index = static_cast<int32_t>(rows.int64_at(5));
    if (kernel == nullptr || kernel->index() != index) {
      kernel = profile->add_kernels();
      kernel->set_index(index);
      kernel->set_name(rows.text_at(6));
      kernel->set_flops(rows.int64_at(7));
      kernel->set_bytes(rows.int64_at(8));
      kernel->set_samples(rows.int64_at(9));
      kernel->set_total_ns(rows.int64_at(10));
      kernel->set_code(rows.text_at(12));
    }
    if (!rows.is_null_at(11)) kernel->add_nodes(static_cast<int32_t>(rows.int64_at(11)));
  }
  return events;
}

std::string kernel_display_name(const pb::KernelRow& kernel) {
  const std::string& code = kernel.code();
  const auto ends_with = [&](std::string_view tail) {
    return code.size() >= tail.size() && code.compare(code.size() - tail.size(), tail.size(), tail) == 0;
  };
  // "<isa> compiled", "<isa> tiles" (the interpreter's vector tiles), or a
  // group of kernels, some of each.
  const char* how = ends_with(" compiled+tiles") ? "compiled+interpreted"
                    : ends_with(" compiled")     ? "compiled"
                    : ends_with(" tiles")        ? "interpreted"
                                                 : nullptr;
  return how ? kernel.name() + " (" + how + ")" : kernel.name();
}

pb::KernelReport read_kernel_report(const HistoryFile& file, int64_t run_id) {
  pb::KernelReport report;
  const auto peaks = read_peaks(file, run_id);
  if (peaks) *report.mutable_peaks() = *peaks;
  {
    Statement graphs(file, R"sql(
      SELECT COUNT(*), COALESCE(MAX(peak_bytes), 0) FROM kernel_profiles WHERE run_id = ?1)sql");
    graphs.bind_int64(1, run_id);
    graphs.next_row();
    report.set_graphs(static_cast<int32_t>(graphs.int64_at(0)));
    report.set_peak_bytes(graphs.int64_at(1));
    graphs.reset();
  }
  // One row per (kernel, IR node); a kernel without nodes still gives one
  // row, with a NULL node.
  // Calls are the graph's recorded executions: a profile is published only
  // when sampled (executions 1-4, then every 64th), so the count it carries
  // lags the run's by up to 63.
  Statement rows(file, R"sql(
    WITH runs_of AS (
      SELECT replica, graph_hash, COUNT(*) AS n FROM executions WHERE run_id = ?1 GROUP BY replica, graph_hash)
    SELECT k.replica, k.graph_hash, k.kernel_index, k.name, k.flops, k.bytes, k.samples, k.total_ns,
           MAX(COALESCE(p.executions, 0), COALESCE(r.n, 0)), n.value, k.code
    FROM kernel_profile_kernels AS k
    LEFT JOIN kernel_profiles AS p
      ON p.run_id = k.run_id AND p.replica = k.replica AND p.graph_hash = k.graph_hash
    LEFT JOIN runs_of AS r ON r.replica = k.replica AND r.graph_hash = k.graph_hash
    LEFT JOIN json_each(k.nodes_json) AS n
    WHERE k.run_id = ?1
    ORDER BY k.replica, k.graph_hash, k.kernel_index, n.key)sql");
  rows.bind_int64(1, run_id);
  std::map<uint64_t, std::optional<pb::IrGraph>> irs;  // read once per graph
  std::map<uint64_t, std::map<int32_t, const pb::IrNode*>> nodes_by_id;
  pb::KernelRow* current = nullptr;
  std::tuple<int64_t, uint64_t, int64_t> current_key{-1, 0, -1};
  while (rows.next_row()) {
    const std::tuple<int64_t, uint64_t, int64_t> key{rows.int64_at(0), rows.hash_at(1), rows.int64_at(2)};
    if (current == nullptr || key != current_key) {
      current_key = key;
      current = report.add_kernels();
      current->set_replica(static_cast<int32_t>(std::get<0>(key)));
      current->set_graph_hash(std::get<1>(key));
      current->set_index(static_cast<int32_t>(std::get<2>(key)));
      current->set_name(rows.text_at(3));
      current->set_flops(rows.int64_at(4));
      current->set_bytes(rows.int64_at(5));
      current->set_samples(rows.int64_at(6));
      current->set_timed_ms(static_cast<double>(rows.int64_at(7)) / 1e6);
      current->set_calls(rows.int64_at(8));
      current->set_code(rows.text_at(10));
    }
    if (rows.is_null_at(9)) continue;
    pb::KernelNode* node = current->add_nodes();
    node->set_id(static_cast<int32_t>(rows.int64_at(9)));
    const uint64_t hash = std::get<1>(key);
    if (!irs.contains(hash)) {
      auto& ir = irs[hash] = read_graph_ir(file, run_id, hash);
      if (ir) {
        for (const pb::IrNode& n : ir->nodes()) nodes_by_id[hash][n.id()] = &n;
      }
    }
    const auto& by_id = nodes_by_id[hash];
    if (auto it = by_id.find(node->id()); it != by_id.end()) {
      node->set_op(it->second->op());
      *node->mutable_source() = it->second->source();
      node->set_scope(it->second->scope());
    }
  }
  rows.reset();
  double total = 0;
  for (pb::KernelRow& k : *report.mutable_kernels()) {
    rate(k, peaks);
    total += k.total_ms();
  }
  report.set_total_ms(total);
  if (report.kernels_size() == 0) report.set_missing_reason(missing_reason(file, run_id));
  for (pb::KernelRow& k : *report.mutable_kernels()) k.set_share(total > 0 ? k.total_ms() / total : 0.0);
  std::stable_sort(report.mutable_kernels()->begin(), report.mutable_kernels()->end(),
                   [](const pb::KernelRow& a, const pb::KernelRow& b) { return a.total_ms() > b.total_ms(); });
  return report;
}

}  // namespace lazyscope::storage
