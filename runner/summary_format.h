// Text for people: the end-of-run summary and the run list, shared by `run`,
// `runs` and `show`.
#pragma once

#include <string>

#include "lazyscope/history.pb.h"

namespace lazyscope::runner {

std::string status_name(pb::RunStatus status);
std::string format_summary(const pb::RunSummary& summary);
std::string format_run_line(const pb::RunSummary& summary);
std::string format_duration_ms(double ms);

}  // namespace lazyscope::runner
