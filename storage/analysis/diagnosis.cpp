#include "analysis/diagnosis.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/step_times.h"
#include "lazyscope/event_text.h"
#include "lazyscope/ir_format.h"

namespace lazyscope::storage {
namespace {

constexpr double kNsPerMs = 1e6;

double ms(int64_t ns) { return static_cast<double>(ns) / kNsPerMs; }

std::string format(const char* fmt, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, fmt, args...);
  return buffer;
}

// "1.5 ms", or "40 us" below a millisecond, where "0.0 ms" would hide it.
std::string duration(double ms_value) {
  return ms_value < 1.0 ? format("%.0f us", ms_value * 1000.0) : format("%.1f ms", ms_value);
}

// "train.py:41": the file's name only, for titles; the finding keeps the path.
std::string where(const pb::SourceLocation& source) {
  if (source.file().empty()) return "an unknown line";
  const std::string name = std::filesystem::path(source.file()).filename().string();
  return source.line() > 0 ? name + ":" + std::to_string(source.line()) : name;
}

using SiteKey = std::tuple<std::string, int32_t>;  // file, line

SiteKey site_of(const pb::SourceLocation& source) { return {source.file(), source.line()}; }

// The denominator of every "share of step time": the summed step durations.
double total_step_ms(const RunData& run) {
  int64_t total = 0;
  for (const pb::StepEvent& step : run.steps) total += step.end_ns() - step.start_ns();
  return ms(total);
}

double share(double part_ms, double whole_ms) { return whole_ms > 0 ? part_ms / whole_ms : 0.0; }

std::unordered_set<int64_t> recorded_steps(const RunData& run) {
  std::unordered_set<int64_t> steps;
  for (const pb::StepEvent& step : run.steps) steps.insert(step.step());
  return steps;
}

// Fills the evidence common to every rule from one occurrence at a time.
class Evidence {
 public:
  void add(int64_t step, int64_t duration_ns) {
    first_step_ = count_ == 0 ? step : std::min(first_step_, step);
    last_step_ = count_ == 0 ? step : std::max(last_step_, step);
    ++count_;
    steps_.insert(step);
    time_ns_ += duration_ns;
  }
  int64_t count() const { return count_; }
  int64_t steps_affected() const { return static_cast<int64_t>(steps_.size()); }
  double time_ms() const { return ms(time_ns_); }

  pb::Finding finding(const char* rule, const pb::SourceLocation& source, double step_ms) const {
    pb::Finding finding;
    finding.set_rule(rule);
    finding.set_first_step(first_step_);
    finding.set_last_step(last_step_);
    *finding.mutable_source() = source;
    finding.set_count(count_);
    finding.set_steps_affected(steps_affected());
    finding.set_time_lost_ms(time_ms());
    finding.set_share_of_step_time(share(time_ms(), step_ms));
    return finding;
  }

 private:
  int64_t count_ = 0;
  int64_t first_step_ = 0;
  int64_t last_step_ = 0;
  std::set<int64_t> steps_;
  int64_t time_ns_ = 0;
};

pb::Severity severity_by_share(double share_of_step_time) {
  return share_of_step_time >= kCriticalShareOfStepTime ? pb::SEVERITY_CRITICAL : pb::SEVERITY_WARNING;
}

// --- (a) recompilations --------------------------------------------------

struct VaryingInput {
  int32_t parameter = -1;
  pb::SourceLocation source;               // where the script made the input
  std::vector<std::string> shapes;         // distinct, in order of first sight
  std::vector<std::vector<int64_t>> dims;  // the same shapes as numbers
};

// The one dimension in which the shapes differ (all of one rank), or -1:
// naming it ("the batch dimension") points at the fix more directly than
// listing the shapes.
int varying_dimension(const VaryingInput& input) {
  int varying = -1;
  for (size_t d = 0; d < input.dims.front().size(); ++d) {
    for (const auto& dims : input.dims) {
      if (dims.size() != input.dims.front().size()) return -1;
      if (dims[d] != input.dims.front()[d]) {
        if (varying >= 0 && varying != static_cast<int>(d)) return -1;
        varying = static_cast<int>(d);
      }
    }
  }
  return varying;
}

// The graph inputs whose shape differs among `graphs`: the first one found.
std::optional<VaryingInput> varying_input(const std::vector<const pb::IrGraph*>& graphs) {
  std::map<int32_t, VaryingInput> inputs;
  for (const pb::IrGraph* graph : graphs) {
    for (const pb::IrNode& node : graph->nodes()) {
      if (node.parameter_index() < 0) continue;
      VaryingInput& input = inputs[node.parameter_index()];
      input.parameter = node.parameter_index();
      if (input.source.file().empty()) input.source = node.source();
      const std::string shape = ir_format::shape(node);
      if (std::find(input.shapes.begin(), input.shapes.end(), shape) == input.shapes.end()) {
        input.shapes.push_back(shape);
        input.dims.emplace_back(node.shape().begin(), node.shape().end());
      }
    }
  }
  for (auto& [parameter, input] : inputs) {
    if (input.shapes.size() > 1) return input;
  }
  return std::nullopt;
}

std::string joined(const std::vector<std::string>& items, size_t at_most) {
  std::string text;
  for (size_t i = 0; i < items.size() && i < at_most; ++i) text += (i > 0 ? ", " : "") + items[i];
  if (items.size() > at_most) text += format(", ... (%zu in all)", items.size());
  return text;
}

void describe_recompiles(pb::CompileReasonKind kind, const std::vector<const pb::CompileEvent*>& group,
                         const RunData& run, pb::Finding& finding) {
  const std::string site = where(group.front()->source());
  const auto n = static_cast<long long>(group.size());
  const std::string cost = format("%lld recompile%s, %s", n, n == 1 ? "" : "s",
                                  duration(finding.time_lost_ms()).c_str());
  std::vector<std::string> reasons;
  for (const pb::CompileEvent* compile : group) {
    if (std::find(reasons.begin(), reasons.end(), compile->reason()) == reasons.end()) {
      reasons.push_back(compile->reason());
    }
  }
  finding.set_detail("compiled at " + site + "; reasons: " + joined(reasons, 3));
  switch (kind) {
    case pb::COMPILE_REASON_SHAPE: {
      // The group's graphs and the ones they were compared with: every shape
      // the input took at this site.
      std::unordered_map<uint64_t, const pb::IrGraph*> by_hash;
      for (const pb::CompileEvent& compile : run.compiles) {
        if (compile.has_graph()) by_hash.emplace(compile.graph_hash(), &compile.graph());
      }
      std::vector<const pb::IrGraph*> graphs;
      std::unordered_set<uint64_t> seen;
      for (const pb::CompileEvent* compile : group) {
        for (uint64_t hash : {compile->compared_with(), compile->graph_hash()}) {
          auto found = by_hash.find(hash);
          if (found != by_hash.end() && seen.insert(hash).second) graphs.push_back(found->second);
        }
      }
      if (const auto input = varying_input(graphs)) {
        const std::string at = input->source.file().empty() ? site : where(input->source);
        const int dim = varying_dimension(*input);
        const std::string what = dim == 0  ? format("input %d shape: the batch dimension (dim 0)", input->parameter)
                                 : dim > 0 ? format("input %d shape: dimension %d", input->parameter, dim)
                                           : format("input %d shape", input->parameter);
        finding.set_title(
            format("%s took %zu values at %s (%s)", what.c_str(), input->shapes.size(), at.c_str(), cost.c_str()));
        finding.set_detail("shapes: " + joined(input->shapes, 5) + "; compiled at " + site);
        if (!input->source.file().empty()) *finding.mutable_source() = input->source;
      } else {
        finding.set_title("input shapes change at " + site + " (" + cost + ")");
      }
      finding.set_fix(
          "use drop_last=True or pad batches to a fixed size (bucket variable lengths into a few sizes), "
          "so that every step traces the same shapes");
      break;
    }
    case pb::COMPILE_REASON_DTYPE:
      finding.set_title("input dtypes change at " + site + " (" + cost + ")");
      finding.set_fix(
          "cast inputs to one dtype before the step (e.g. x.float()), so every step traces the same dtypes");
      break;
    case pb::COMPILE_REASON_EVICTED:
      finding.set_title("compiled graphs are evicted and compiled again at " + site + " (" + cost + ")");
      finding.set_fix("raise LAZYSCOPE_COMPILE_CACHE_SIZE: the run uses more graphs than the compile cache holds");
      break;
    default:
      finding.set_title("the traced graph changes at " + site + " (" + cost + ")");
      finding.set_fix(
          "the ops traced differ between steps: keep Python control flow on step-varying values (step "
          "counters, values read from tensors) out of the step, or express the branch as a tensor op (where)");
      break;
  }
}

// A structure change compiled once, in the run's second step, whose graph
// every later step reuses: the first step created state the later ones carry
// (an optimizer's momentum or Adam moments become graph inputs and ops). It
// costs one compile for the whole run, so it is reported as information, not
// as a change the script should make.
bool is_warm_up_change(const std::vector<const pb::CompileEvent*>& group, const RunData& run) {
  if (group.size() != 1 || group.front()->reason_kind() != pb::COMPILE_REASON_STRUCTURE || run.steps.empty()) {
    return false;
  }
  const pb::CompileEvent& compile = *group.front();
  int64_t first_step = run.steps.front().step();
  int64_t last_step = first_step;
  for (const pb::StepEvent& step : run.steps) {
    first_step = std::min(first_step, step.step());
    last_step = std::max(last_step, step.step());
  }
  if (compile.step() > first_step + 1 || compile.step() >= last_step) return false;
  // Later steps must run this very graph; otherwise the graph kept changing.
  for (const pb::ExecuteEvent& execution : run.executions) {
    if (execution.graph_hash() == compile.graph_hash() && execution.step() > compile.step()) return true;
  }
  return false;
}

void describe_warm_up(const pb::CompileEvent& compile, pb::Finding& finding) {
  finding.set_severity(pb::SEVERITY_INFO);
  finding.set_title(
      format("the step's graph changed once, at step %lld, and every later step reuses it: warm-up, "
             "not a recompilation problem",
             static_cast<long long>(compile.step())));
  finding.set_detail("compiled at " + where(compile.source()) + "; reason: " + compile.reason() +
                     " (typically the optimizer creating its state, e.g. momentum buffers, in the first step)");
  finding.set_fix("nothing to change: it costs one compile per run");
}

// Compiles of graph pieces that a CPU fallback cut off (the sync of its
// operands): their graphs differ from the step's other pieces because the
// fallback cut them there, not because the script traced something else. The
// fallback is the finding (rule cpu-fallback), not a recompilation.
std::set<std::pair<uint64_t, int64_t>> fallback_cut_compiles(const RunData& run) {
  std::set<std::pair<uint64_t, int64_t>> cut;  // graph hash, start
  for (const SyncCost& cost : sync_costs(run.timeline)) {
    if (cost.compile != nullptr && cost.execute->cause() == pb::SYNC_CAUSE_FALLBACK) {
      cut.emplace(cost.compile->graph_hash(), cost.compile->start_ns());
    }
  }
  return cut;
}

std::vector<pb::Finding> find_recompilations(const RunData& run) {
  const auto cut = fallback_cut_compiles(run);
  std::map<std::tuple<int, std::string, int32_t>, std::vector<const pb::CompileEvent*>> groups;
  for (const pb::CompileEvent& compile : run.compiles) {
    if (!event_text::is_recompile(compile.reason_kind()) || cut.contains({compile.graph_hash(), compile.start_ns()})) {
      continue;
    }
    groups[{compile.reason_kind(), compile.source().file(), compile.source().line()}].push_back(&compile);
  }
  const double step_ms = total_step_ms(run);
  std::vector<pb::Finding> findings;
  for (const auto& [key, group] : groups) {
    Evidence evidence;
    for (const pb::CompileEvent* compile : group) evidence.add(compile->step(), compile->duration_ns());
    pb::Finding finding = evidence.finding("recompilation", group.front()->source(), step_ms);
    if (is_warm_up_change(group, run)) {
      describe_warm_up(*group.front(), finding);
      findings.push_back(std::move(finding));
      continue;
    }
    finding.set_severity(severity_by_share(finding.share_of_step_time()));
    describe_recompiles(static_cast<pb::CompileReasonKind>(std::get<0>(key)), group, run, finding);
    findings.push_back(std::move(finding));
  }
  return findings;
}

// --- (b) host syncs inside the step loop ----------------------------------

// What to do about each kind of value read; event_text says what it is.
struct SyncFix {
  pb::SyncCause cause;
  const char* fix;
};

constexpr std::array kSyncFixes = {
    SyncFix{pb::SYNC_CAUSE_ITEM, "log with lazyscope.log or read the value after mark_step (every N steps)"},
    SyncFix{pb::SYNC_CAUSE_TO_HOST, "read values after mark_step, and only every N steps"},
    SyncFix{pb::SYNC_CAUSE_CONTROL_FLOW,
            "branch on a tensor op (where) instead of a Python if, or decide on host values"},
    SyncFix{pb::SYNC_CAUSE_SAVE, "save after mark_step, every N steps"},
};

const char* fix_of(pb::SyncCause cause) {
  for (const SyncFix& row : kSyncFixes) {
    if (row.cause == cause) return row.fix;
  }
  return "read device values after mark_step";
}

// The host's wait for each value read is the step breakdown's host-wait
// segment (analysis/step_times.h): its graph's compile plus its execution.
std::vector<pb::Finding> find_host_syncs(const RunData& run) {
  const std::unordered_set<int64_t> steps = recorded_steps(run);
  std::map<std::tuple<int, std::string, int32_t>, std::pair<Evidence, pb::SourceLocation>> groups;
  for (const SyncCost& cost : sync_costs(run.timeline)) {
    const pb::ExecuteEvent& execution = *cost.execute;
    if (!event_text::is_value_read(execution.cause()) || !steps.contains(execution.step())) continue;
    auto& [evidence, source] = groups[{execution.cause(), execution.source().file(), execution.source().line()}];
    evidence.add(execution.step(), cost.wait_ns());
    source = execution.source();
  }
  const double step_ms = total_step_ms(run);
  const auto step_count = static_cast<int64_t>(steps.size());
  std::vector<pb::Finding> findings;
  for (const auto& [key, group] : groups) {
    const auto& [evidence, source] = group;
    const auto cause = static_cast<pb::SyncCause>(std::get<0>(key));
    pb::Finding finding = evidence.finding("host-sync", source, step_ms);
    const bool every_step = evidence.steps_affected() == step_count;
    finding.set_severity(2 * evidence.steps_affected() >= step_count ? pb::SEVERITY_WARNING : pb::SEVERITY_INFO);
    const std::string when = every_step
                                 ? "in every step"
                                 : format("in %lld of %lld steps", static_cast<long long>(evidence.steps_affected()),
                                          static_cast<long long>(step_count));
    finding.set_title(event_text::sync_cause_description(cause) + " at " + where(source) + " " + when +
                      " forces a sync");
    const double affected = static_cast<double>(std::max<int64_t>(evidence.steps_affected(), 1));
    finding.set_detail(
        format("%lld syncs made the host wait %s for the device inside steps (compile and "
               "execution of the graphs they forced; %.1f syncs and %s per affected step)",
               static_cast<long long>(evidence.count()), duration(evidence.time_ms()).c_str(),
               static_cast<double>(evidence.count()) / affected, duration(evidence.time_ms() / affected).c_str()));
    finding.set_fix(fix_of(cause));
    findings.push_back(std::move(finding));
  }
  return findings;
}

// --- (c) CPU fallbacks ----------------------------------------------------

bool output_shape_depends_on_data(std::string op) {
  if (const size_t colons = op.rfind("::"); colons != std::string::npos) op = op.substr(colons + 2);
  return op == "nonzero" || op == "masked_select" || op == "unique" || op == "index_bool";
}

// Old recordings (and engines) give no reason: the op's name tells.
pb::FallbackReason reason_of(const pb::FallbackEvent& fallback) {
  if (fallback.reason() != pb::FALLBACK_REASON_UNSPECIFIED) return fallback.reason();
  return output_shape_depends_on_data(fallback.op()) ? pb::FALLBACK_REASON_DATA_DEPENDENT
                                                     : pb::FALLBACK_REASON_NOT_LOWERED;
}

std::string fallback_fix(const std::string& op, pb::FallbackReason reason, const std::string& dtypes) {
  switch (reason) {
    case pb::FALLBACK_REASON_DATA_DEPENDENT:
      return op +
             " has a data-dependent output shape (it depends on the values, so it cannot be traced): "
             "compute a fixed-shape result instead (a mask with where, a fixed-size top-k), or move it out "
             "of the step loop";
    case pb::FALLBACK_REASON_FORCED:
      return op +
             " runs on the host because LAZYSCOPE_FORCE_FALLBACK (--force-fallback) names it: drop it "
             "from that setting to run it on the device";
    default:
      return "the backend does not lower " + op + (dtypes.empty() ? std::string() : std::string(" for ") + dtypes) +
             ": rewrite it with supported ops" +
             (dtypes.empty() ? std::string() : " or cast its operands to a supported dtype (e.g. float32)") +
             ", or move it out of the step loop";
  }
}

std::vector<pb::Finding> find_fallbacks(const RunData& run) {
  struct Group {
    Evidence evidence;
    pb::SourceLocation source;
    std::set<std::string> dtypes;
    int64_t cut_nodes = 0;
    int64_t in_steps = 0;
  };
  const std::unordered_set<int64_t> steps = recorded_steps(run);
  std::map<std::tuple<std::string, std::string, int32_t, int>, Group> groups;
  for (const pb::FallbackEvent& fallback : run.fallbacks) {
    Group& group = groups[{fallback.op(), fallback.source().file(), fallback.source().line(), reason_of(fallback)}];
    group.evidence.add(fallback.step(), fallback.duration_ns());
    group.source = fallback.source();
    if (!fallback.dtype().empty()) group.dtypes.insert(fallback.dtype());
    group.cut_nodes += fallback.graph_cut_nodes();
    if (steps.contains(fallback.step())) ++group.in_steps;
  }
  const double step_ms = total_step_ms(run);
  std::vector<pb::Finding> findings;
  for (const auto& [key, group] : groups) {
    const Evidence& evidence = group.evidence;
    const std::string& op = std::get<0>(key);
    const auto reason = static_cast<pb::FallbackReason>(std::get<3>(key));
    pb::Finding finding = evidence.finding("cpu-fallback", group.source, step_ms);
    // Ranked by its cost even when forced: what the fallback costs is what a
    // person forcing it wants to see first (the fix says it was forced).
    finding.set_severity(severity_by_share(finding.share_of_step_time()));
    finding.set_title(format("%s runs on the CPU at %s: %lld calls, %s (%.1f%% of step time)", op.c_str(),
                             where(group.source).c_str(), static_cast<long long>(evidence.count()),
                             duration(evidence.time_ms()).c_str(), 100.0 * finding.share_of_step_time()));
    std::string detail = format(
        "%lld of the calls inside the step loop, in %lld steps; each call cuts the graph "
        "and moves its operands to the host and back",
        static_cast<long long>(group.in_steps), static_cast<long long>(evidence.steps_affected()));
    if (group.cut_nodes > 0) {
      detail += format(" (%.1f pending nodes executed early per call)",
                       static_cast<double>(group.cut_nodes) / static_cast<double>(evidence.count()));
    }
    std::vector<std::string> dtypes(group.dtypes.begin(), group.dtypes.end());
    if (!dtypes.empty()) detail += "; operand dtypes: " + joined(dtypes, 4);
    finding.set_detail(detail);
    finding.set_fix(fallback_fix(op, reason, joined(dtypes, 4)));
    findings.push_back(std::move(finding));
  }
  return findings;
}

// --- (d) a graph that grows every step ------------------------------------

constexpr const char* kBarrierFix =
    "add a barrier at the end of every iteration (mark_step(), or optimizer_step(barrier=True)), and detach "
    "tensors carried from one iteration to the next";

std::vector<pb::Finding> find_growing_graphs(const RunData& run) {
  const double step_ms = total_step_ms(run);
  std::vector<pb::Finding> findings;

  // Executions forced by the node limit: the graph outgrew it without a barrier.
  std::map<SiteKey, std::pair<Evidence, pb::SourceLocation>> limited;
  for (const pb::ExecuteEvent& execution : run.executions) {
    if (execution.cause() != pb::SYNC_CAUSE_GRAPH_LIMIT) continue;
    auto& [evidence, source] = limited[site_of(execution.source())];
    evidence.add(execution.step(), execution.duration_ns());
    source = execution.source();
  }
  for (const auto& [key, group] : limited) {
    const auto& [evidence, source] = group;
    pb::Finding finding = evidence.finding("growing-graph", source, step_ms);
    finding.set_severity(pb::SEVERITY_CRITICAL);
    finding.set_title(
        format("the pending graph hit the node limit %lld times (last traced at %s): a barrier is missing",
               static_cast<long long>(evidence.count()), where(source).c_str()));
    finding.set_detail("the engine cut the graph because no barrier did");
    finding.set_fix(kBarrierFix);
    findings.push_back(std::move(finding));
  }

  // Successive uncached compiles at one site whose node count keeps rising.
  std::unordered_map<uint64_t, int32_t> executed_nodes;
  for (const pb::ExecuteEvent& execution : run.executions) {
    executed_nodes.emplace(execution.graph_hash(), execution.node_count());
  }
  // A graph never executed: its stored node count, for compiles loaded
  // without their IR (load_run_data, CompileIr::kForDiagnosis).
  for (const pb::GraphInfo& graph : run.graphs) executed_nodes.emplace(graph.hash(), graph.node_count());
  const auto nodes_of = [&](const pb::CompileEvent& compile) -> int64_t {
    if (compile.graph().nodes_size() > 0) return compile.graph().nodes_size();
    auto found = executed_nodes.find(compile.graph_hash());
    return found == executed_nodes.end() ? 0 : found->second;
  };
  std::map<SiteKey, std::vector<const pb::CompileEvent*>> by_site;
  for (const pb::CompileEvent& compile : run.compiles) by_site[site_of(compile.source())].push_back(&compile);
  for (const auto& [key, compiles] : by_site) {
    // The longest stretch of strictly rising node counts.
    size_t best_begin = 0, best_length = 1, begin = 0;
    for (size_t i = 1; i < compiles.size(); ++i) {
      if (nodes_of(*compiles[i]) <= nodes_of(*compiles[i - 1])) begin = i;
      if (i - begin + 1 > best_length) {
        best_begin = begin;
        best_length = i - begin + 1;
      }
    }
    if (best_length < static_cast<size_t>(kGrowingCompiles)) continue;
    Evidence evidence;
    for (size_t i = best_begin; i < best_begin + best_length; ++i) {
      evidence.add(compiles[i]->step(), compiles[i]->duration_ns());
    }
    const pb::CompileEvent& first = *compiles[best_begin];
    const pb::CompileEvent& last = *compiles[best_begin + best_length - 1];
    pb::Finding finding = evidence.finding("growing-graph", first.source(), step_ms);
    finding.set_severity(pb::SEVERITY_CRITICAL);
    finding.set_title(format("the graph compiled at %s grows every step: %lld -> %lld nodes over %zu compiles",
                             where(first.source()).c_str(), static_cast<long long>(nodes_of(first)),
                             static_cast<long long>(nodes_of(last)), best_length));
    finding.set_detail(
        format("steps %lld to %lld each compiled a larger graph (%.1f ms of compiling): the graph "
               "carries earlier steps' ops because no barrier cuts it",
               static_cast<long long>(first.step()), static_cast<long long>(last.step()), evidence.time_ms()));
    finding.set_fix(kBarrierFix);
    findings.push_back(std::move(finding));
  }
  return findings;
}

// --- (e) uploads inside steps that do not overlap compute ------------------

std::vector<pb::Finding> find_blocking_transfers(const RunData& run) {
  const std::unordered_set<int64_t> steps = recorded_steps(run);
  Evidence evidence;
  int64_t bytes = 0;
  for (const pb::TransferEvent& transfer : run.transfers) {
    if (!transfer.to_device() || !steps.contains(transfer.step())) continue;
    evidence.add(transfer.step(), transfer.duration_ns());
    bytes += transfer.bytes();
  }
  const double step_ms = total_step_ms(run);
  if (evidence.count() == 0 || evidence.time_ms() < kMinTransferMs ||
      share(evidence.time_ms(), step_ms) <= kTransferShareThreshold) {
    return {};
  }
  pb::Finding finding = evidence.finding("blocking-transfer", {}, step_ms);
  finding.set_severity(pb::SEVERITY_WARNING);
  finding.set_title(format("uploads to the device take %.0f%% of step time and block the step",
                           100.0 * finding.share_of_step_time()));
  finding.set_detail(format("%lld host-to-device transfers in %lld steps moved %.1f MB in %.1f ms",
                            static_cast<long long>(evidence.count()), static_cast<long long>(evidence.steps_affected()),
                            static_cast<double>(bytes) / 1e6, evidence.time_ms()));
  finding.set_fix(
      "load batches with the parallel loader (MpDeviceLoader), which uploads the next batch while this one "
      "computes; keep data that does not change on the device instead of copying it every step");
  return {finding};
}

// --- (f) replicas: a straggler, and collectives that dominate the step ----

// Per replica over the steps every replica ran (replica_stats, step_times.h):
// step time, time in collectives, bytes contributed.
struct ReplicaTotals {
  double step_ms = 0.0;
  double collective_ms = 0.0;
  int64_t bytes = 0;
  double busy_ms() const { return step_ms - collective_ms; }
};

std::vector<pb::Finding> find_collective_problems(const RunData& run) {
  if (steps_per_replica(run.step_times).size() < 2) return {};
  const std::set<int64_t> common = common_steps(run.step_times);
  if (common.empty()) return {};
  std::map<int32_t, ReplicaTotals> totals;
  ReplicaTotals all;
  for (const pb::ReplicaStats& stats : replica_stats(run.step_times, &common)) {
    ReplicaTotals& t = totals[stats.replica()];
    t.step_ms = stats.step_ms();
    t.collective_ms = stats.collective_ms();
    t.bytes = stats.collective_bytes();
    all.step_ms += t.step_ms;
    all.collective_ms += t.collective_ms;
    all.bytes += t.bytes;
  }
  if (all.collective_ms == 0.0 && all.bytes == 0) return {};  // replicas that never exchanged anything
  const auto replicas = static_cast<double>(totals.size());
  const auto steps = static_cast<long long>(common.size());
  const double step_ms_per_replica = all.step_ms / replicas;
  std::vector<pb::Finding> findings;

  // The straggler computes longest outside collectives; the others wait for
  // it inside them, so every replica's step takes as long as its.
  const auto slowest = std::max_element(totals.begin(), totals.end(), [](const auto& a, const auto& b) {
    return a.second.busy_ms() < b.second.busy_ms();
  });
  std::vector<double> others;
  for (const auto& [replica, t] : totals) {
    if (replica != slowest->first) others.push_back(t.busy_ms());
  }
  std::sort(others.begin(), others.end());
  const double median_others = others[others.size() / 2];
  const double lag_ms = slowest->second.busy_ms() - median_others;
  if (lag_ms >= kMinStragglerMs && slowest->second.busy_ms() >= kStragglerRatio * std::max(median_others, 1e-6)) {
    pb::Finding finding;
    finding.set_rule("replicas");
    finding.set_first_step(*common.begin());
    finding.set_last_step(*common.rbegin());
    finding.set_count(steps);
    finding.set_steps_affected(steps);
    finding.set_time_lost_ms(lag_ms);
    finding.set_share_of_step_time(share(lag_ms, step_ms_per_replica));
    finding.set_severity(severity_by_share(finding.share_of_step_time()));
    finding.set_title(
        format("replica %d is a straggler: its steps compute %s longer than the others' median, "
               "and the others wait for it in collectives",
               slowest->first, duration(lag_ms / static_cast<double>(steps)).c_str()));
    std::string detail = format("over %lld steps, time outside collectives per replica:", steps);
    for (const auto& [replica, t] : totals) {
      detail += format(" %d: %.1f ms (waited %.1f ms)", replica, t.busy_ms(), t.collective_ms);
    }
    finding.set_detail(detail);
    finding.set_fix(
        "give every replica the same work: the same per-replica batch (DistributedSampler, drop_last=True), "
        "no work only the master does inside the step (logging, evaluation, checkpoints: after the "
        "step or in a step closure), and no other load on the slow replica's cores");
    findings.push_back(std::move(finding));
  }

  const double collective_share = share(all.collective_ms, all.step_ms);
  if (all.collective_ms / replicas >= kMinCollectiveMs && collective_share > kCollectiveShareThreshold) {
    pb::Finding finding;
    finding.set_rule("replicas");
    finding.set_first_step(*common.begin());
    finding.set_last_step(*common.rbegin());
    finding.set_count(steps);
    finding.set_steps_affected(steps);
    finding.set_time_lost_ms(all.collective_ms / replicas);
    finding.set_share_of_step_time(collective_share);
    finding.set_severity(severity_by_share(collective_share));
    finding.set_title(format("collectives take %.0f%% of step time (%s per step and replica)", 100.0 * collective_share,
                             duration(all.collective_ms / replicas / static_cast<double>(steps)).c_str()));
    std::string detail = format("%.0f replicas contributed %.2f MB per step; time in collectives per replica:",
                                replicas, static_cast<double>(all.bytes) / 1e6 / static_cast<double>(steps));
    for (const auto& [replica, t] : totals) detail += format(" %d: %.1f ms", replica, t.collective_ms);
    finding.set_detail(detail);
    finding.set_fix(
        "exchange less per unit of work: a larger per-replica batch (more compute per all_reduce), "
        "gradient accumulation (reduce every k steps), fewer replicas than cores on one machine");
    findings.push_back(std::move(finding));
  }
  return findings;
}

constexpr std::array kRules = {
    DiagnosisRule{"recompilation", "uncached compiles after the first, by reason and source line", find_recompilations},
    DiagnosisRule{"host-sync", "value reads inside steps that make the host wait for the device", find_host_syncs},
    DiagnosisRule{"cpu-fallback", "ops that ran on the CPU, by op and source line", find_fallbacks},
    DiagnosisRule{"growing-graph", "graphs that grow step after step: a missing barrier", find_growing_graphs},
    DiagnosisRule{"blocking-transfer", "uploads to the device that take a large share of step time",
                  find_blocking_transfers},
    DiagnosisRule{"replicas", "a straggler replica the others wait for, and collectives that dominate the step",
                  find_collective_problems},
};

}  // namespace

std::span<const DiagnosisRule> diagnosis_rules() { return kRules; }

std::vector<pb::Finding> diagnose(const RunData& run) {
  std::vector<pb::Finding> findings;
  for (const DiagnosisRule& rule : kRules) {
    for (pb::Finding& finding : rule.find(run)) findings.push_back(std::move(finding));
  }
  std::stable_sort(findings.begin(), findings.end(), [](const pb::Finding& a, const pb::Finding& b) {
    if (a.severity() != b.severity()) return a.severity() > b.severity();
    return a.time_lost_ms() > b.time_lost_ms();
  });
  return findings;
}

}  // namespace lazyscope::storage
