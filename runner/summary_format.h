// Text for people: the end-of-run summary and the run list, shared by `run`,
// `runs` and `show`.
#pragma once

#include <string>

#include <google/protobuf/repeated_ptr_field.h>

#include "lazyscope/history.pb.h"

namespace lazyscope::runner {

std::string status_name(pb::RunStatus status);
// Where the failed run's traceback is, for the summary to point at it:
// `show` prints it after the summary; `run` has printed it (the script's
// stderr) before.
enum class TracebackAt { kLast, kAbove };
std::string format_summary(const pb::RunSummary& summary, TracebackAt traceback_at = TracebackAt::kLast);
std::string format_run_line(const pb::RunSummary& summary);
// The header of format_run_line's columns.
std::string format_run_header();
std::string format_duration_ms(double ms);
// "replicas:" and a line per replica (rank) when there are several: steps,
// median step, time in collectives and bytes contributed
// (storage::replica_stats); empty for one.
std::string format_replicas(const pb::RunReport& report);
// "diagnosis:" and one block per finding (title, evidence, fix); with none,
// a run that did not finish says so rather than "nothing slows it down".
std::string format_findings(const google::protobuf::RepeatedPtrField<pb::Finding>& findings, pb::RunStatus status);
// "metrics (last snapshot ...):" and a line per metric; empty without metrics.
std::string format_metrics(const pb::MetricsReport& report);
// `show --kernels`: the machine's peaks and one line per kernel, by total
// time; or why the run has no profile.
std::string format_kernel_report(const pb::KernelReport& report);

}  // namespace lazyscope::runner
