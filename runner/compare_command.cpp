// `lazyscope compare A B [--json]`: summary deltas, graphs in one run or both,
// and how the reasons for recompiling changed.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "analysis/compare.h"
#include "cli_args.h"
#include "commands.h"
#include "lazyscope/event_text.h"
#include "query/history_reader.h"
#include "summary_format.h"

namespace lazyscope::runner {
namespace {

std::string printf_str(const char* fmt, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, fmt, args...);
  return buffer;
}

std::string graph_line(const pb::GraphMatch& match) {
  const pb::GraphInfo& graph = match.has_a() ? match.a() : match.b();
  std::string line = printf_str(
      "  %s  %5d nodes  compiles %lld (%s)  executions %lld (%s)", hash_hex(match.hash()).c_str(), graph.node_count(),
      static_cast<long long>(graph.compiles()), format_duration_ms(graph.compile_ms()).c_str(),
      static_cast<long long>(graph.executions()), format_duration_ms(graph.execute_ms()).c_str());
  if (match.has_a() && match.has_b()) {
    line += printf_str("  B-A: compiles %+lld (%+.1f ms), executions %+lld (%+.1f ms)",
                       static_cast<long long>(match.compiles_delta()), match.compile_ms_delta(),
                       static_cast<long long>(match.executions_delta()), match.execute_ms_delta());
  }
  return line + "\n";
}

// The answer a comparison is usually run for, in words before the table:
// did B compile less, and is its typical step faster.
std::string headline(const pb::RunComparison& c) {
  const long long compiles = static_cast<long long>(c.b().compiles() - c.a().compiles());
  const std::string compiled = compiles == 0  ? "the same number of compiles"
                               : compiles < 0 ? printf_str("%lld fewer compile%s", -compiles, compiles == -1 ? "" : "s")
                                              : printf_str("%lld more compile%s", compiles, compiles == 1 ? "" : "s");
  const double a_ms = c.a().median_step_ms();
  const double delta_ms = c.b().median_step_ms() - a_ms;
  std::string step = printf_str("median step %s -> %s", format_duration_ms(a_ms).c_str(),
                                format_duration_ms(c.b().median_step_ms()).c_str());
  if (a_ms > 0) {
    step += printf_str(" (%s %s, %+.0f%%)", delta_ms <= 0 ? "faster by" : "slower by",
                       format_duration_ms(std::abs(delta_ms)).c_str(), 100.0 * delta_ms / a_ms);
  }
  return "B vs A: " + compiled + ", " + step + "\n\n";
}

std::string format_comparison(const pb::RunComparison& c) {
  std::string out = printf_str("A: run #%lld \"%s\"\nB: run #%lld \"%s\"\n\n", static_cast<long long>(c.a().run().id()),
                               c.a().run().name().c_str(), static_cast<long long>(c.b().run().id()),
                               c.b().run().name().c_str());
  out += headline(c);
  out += printf_str("  %-16s %14s %14s %14s\n", "", "A", "B", "B - A");
  for (const auto& metric : c.metrics()) {
    // Counts as integers; the verdict in words (no colour in a pipe), and a
    // change of a time within the runs' own noise said to be so.
    const std::string verdict = metric.verdict() > 0   ? "  better"
                                : metric.verdict() < 0 ? "  worse"
                                : metric.delta() != 0 && metric.noise() > 0 &&
                                        std::abs(metric.delta()) <= metric.noise()
                                    ? printf_str("  within noise (+/-%.3f)", metric.noise())
                                    : std::string();
    if (metric.is_count()) {
      out += printf_str("  %-16s %14lld %14lld %+14lld%s\n", metric.metric().c_str(), std::llround(metric.a()),
                        std::llround(metric.b()), std::llround(metric.delta()), verdict.c_str());
    } else {
      out += printf_str("  %-16s %14.3f %14.3f %+14.3f%s\n", metric.metric().c_str(), metric.a(), metric.b(),
                        metric.delta(), verdict.c_str());
    }
  }
  const auto section = [&](const char* title, const auto& matches) {
    out += printf_str("\ngraphs %s: %d\n", title, matches.size());
    for (const auto& match : matches) out += graph_line(match);
  };
  section("in both", c.both());
  section("in A only", c.only_a());
  section("in B only", c.only_b());
  if (c.reasons_size() > 0) out += "\ncompile reasons that changed:\n";
  for (const auto& reason : c.reasons()) {
    const std::string where = reason.source().file().empty()
                                  ? std::string("an unknown line")
                                  : reason.source().file() + ":" + std::to_string(reason.source().line());
    out += printf_str("  %-12s at %s: A %lld (%s), B %lld (%s)\n",
                      event_text::compile_reason_label(reason.kind()).c_str(), where.c_str(),
                      static_cast<long long>(reason.count_a()), format_duration_ms(reason.compile_ms_a()).c_str(),
                      static_cast<long long>(reason.count_b()), format_duration_ms(reason.compile_ms_b()).c_str());
  }
  return out;
}

}  // namespace

int compare_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {"--json"}, {});
  if (args.positional.size() != 2) throw std::invalid_argument("compare needs two runs: compare A B");
  storage::HistoryReader reader(args.history);
  const int64_t a = resolve_run(reader, args.positional[0], args.history);
  const int64_t b = resolve_run(reader, args.positional[1], args.history);
  const auto data_a = storage::load_run_data(reader, a);
  const auto data_b = storage::load_run_data(reader, b);
  if (!data_a || !data_b) throw NotFound("a run was deleted meanwhile");
  pb::RunComparison comparison = storage::compare_runs(*data_a, *data_b);
  for (pb::RunSummary* summary : {comparison.mutable_a(), comparison.mutable_b()}) {
    summary->mutable_run()->clear_script_text();
  }
  std::cout << (args.has("--json") ? to_json(comparison) + "\n" : format_comparison(comparison));
  return 0;
}

}  // namespace lazyscope::runner
