// The query library: everything the command line and the GUI read from a
// history goes through here (the GUI has no SQL of its own). Never writes to
// the file, and reads while a Recorder (here or in another process) writes.
// Thread-safe: calls are serialized on the one connection.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lazyscope/events.pb.h"
#include "lazyscope/history.pb.h"
#include "lazyscope/ir.pb.h"
#include "query/run_filter.h"

namespace lazyscope::storage {

class HistoryFile;

class HistoryReader {
 public:
  // Opens read-only. Throws HistoryError (missing, corrupt, newer schema).
  explicit HistoryReader(const std::string& path);
  ~HistoryReader();
  HistoryReader(const HistoryReader&) = delete;
  HistoryReader& operator=(const HistoryReader&) = delete;

  // Newest first. A run still marked RUNNING whose writer process is gone is
  // reported as CRASHED.
  std::vector<pb::RunSummary> list_runs(const RunFilter& filter = {}) const;
  std::optional<pb::RunSummary> run_summary(int64_t run_id) const;
  // Id of the newest run, if any.
  std::optional<int64_t> last_run_id() const;
  // The run a person means by `ref`: "last", a run id, or a run name (the
  // newest run of that name). An id wins over a name made of digits.
  std::optional<int64_t> find_run(const std::string& ref) const;

  // Uncached compiles of a run (every replica), in order, with their IR (and
  // program text) unless with_ir is false: a 100,000-node graph's IR parsed
  // takes over 100 MB, which a summary does not need.
  std::vector<pb::CompileEvent> compilations(int64_t run_id, bool with_ir = true) const;
  // Per-step timings of a run (replica 0), in step order.
  std::vector<pb::StepEvent> steps(int64_t run_id) const;
  // Every replica's steps (Event.replica and Event.step), by replica then step.
  std::vector<pb::Event> replica_steps(int64_t run_id) const;
  // The same as columns in milliseconds, for charts.
  pb::StepSeries step_series(int64_t run_id) const;
  // Names of the logged scalars (replica 0), sorted; and one scalar's series.
  std::vector<std::string> scalar_names(int64_t run_id) const;
  pb::ScalarSeries scalar_series(int64_t run_id, const std::string& name) const;

  // Events of every replica, in start order.
  std::vector<pb::ExecuteEvent> executions(int64_t run_id) const;
  std::vector<pb::FallbackEvent> fallbacks(int64_t run_id) const;
  std::vector<pb::TransferEvent> transfers(int64_t run_id) const;
  // Fallbacks grouped by op and source line, the most expensive group first.
  std::vector<pb::FallbackGroup> fallback_groups(int64_t run_id) const;

  // The engine's metric snapshots (events of kind metrics), in arrival
  // order; and the last value of each metric, sorted by name.
  std::vector<pb::Event> metric_snapshots(int64_t run_id) const;
  pb::MetricsReport final_metrics(int64_t run_id) const;

  // Everything recorded for the run, for `export --bundle`; nullopt when
  // there is no such run.
  std::optional<pb::RunBundle> run_bundle(int64_t run_id) const;

  // What the script printed (stdout and stderr), in arrival order.
  pb::RunOutput output(int64_t run_id) const;

  // Every event of every replica, for timelines and trace export; nullopt
  // when there is no such run.
  std::optional<pb::RunTimeline> timeline(int64_t run_id) const;

  // Every graph the run compiled or executed, in order of first use.
  std::vector<pb::GraphInfo> graphs(int64_t run_id) const;
  // One graph's stored IR and lowered program; nullopt when not stored.
  std::optional<pb::IrGraph> graph_ir(int64_t run_id, uint64_t hash) const;
  std::optional<std::string> program_text(int64_t run_id, uint64_t hash) const;

  // The per-kernel profile: kernels by total time with their IR nodes and
  // rates against the machine's peaks (empty when none was recorded).
  pb::KernelReport kernel_report(int64_t run_id) const;

 private:
  std::unique_ptr<HistoryFile> file_;
  // list_runs() and run_summary() read in one transaction on the shared
  // connection, for one snapshot; two threads' transactions cannot nest.
  mutable std::mutex mutex_;
};

}  // namespace lazyscope::storage
