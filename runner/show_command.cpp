// `lazyscope show [RUN] [--json] [--output | --kernels]`: the summary, the
// diagnosis, the compiles, the final metrics; or, with --output, what the
// script printed; with --kernels, the per-kernel profile.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "analysis/diagnosis.h"
#include "cli_args.h"
#include "commands.h"
#include "query/history_reader.h"
#include "summary_format.h"

namespace lazyscope::runner {
namespace {

std::string format_report(const pb::RunReport& report) {
  std::string out = format_summary(report.summary());
  out += format_replicas(report);
  out += format_findings(report.findings(), report.summary().run().status());
  if (report.compiles_size() > 0) out += "\ncompiles:\n";
  for (const auto& compile : report.compiles()) {
    out += "  step " + std::to_string(compile.step()) + "  " + hash_hex(compile.graph_hash()) + "  " +
           format_duration_ms(static_cast<double>(compile.duration_ns()) / 1e6) + "  " + compile.reason() + "\n";
  }
  out += format_metrics(report.metrics());
  if (!report.summary().run().traceback().empty()) {
    out += "\ntraceback (where the script failed):\n" + report.summary().run().traceback();
  }
  return out;
}

}  // namespace

int show_command(const std::vector<std::string>& raw) {
  const CommandArgs args = parse_command_args(raw, {"--json", "--output", "--kernels"}, {});
  if (args.positional.size() > 1) throw std::invalid_argument("show takes one RUN, got " + args.positional[1]);
  storage::HistoryReader reader(args.history);
  const int64_t run_id = resolve_run(reader, args.positional.empty() ? "last" : args.positional[0], args.history);
  if (args.has("--output")) {
    const pb::RunOutput output = reader.output(run_id);
    if (args.has("--json")) {
      std::cout << to_json(output) << "\n";
    } else {
      for (const auto& chunk : output.chunks()) std::cout << chunk.text();
    }
    return 0;
  }
  if (args.has("--kernels")) {
    const pb::KernelReport kernels = reader.kernel_report(run_id);
    std::cout << (args.has("--json") ? to_json(kernels) + "\n" : format_kernel_report(kernels));
    return 0;
  }
  const auto data = storage::load_run_data(reader, run_id, storage::CompileIr::kForDiagnosis);
  if (!data) throw NotFound("run " + std::to_string(run_id) + " was deleted meanwhile");

  pb::RunReport report;
  *report.mutable_summary() = data->summary;
  for (auto& finding : storage::diagnose(*data)) *report.add_findings() = std::move(finding);
  for (auto& replica : storage::replica_stats(data->step_times)) *report.add_replicas() = std::move(replica);
  for (const auto& compile : data->compiles) {
    pb::CompileEvent& listed = *report.add_compiles() = compile;
    listed.clear_graph();  // `graph RUN GRAPH` shows one
    listed.clear_program_text();
  }
  *report.mutable_metrics() = reader.final_metrics(run_id);
  std::cout << (args.has("--json") ? to_json(report) + "\n" : format_report(report));
  return 0;
}

}  // namespace lazyscope::runner
