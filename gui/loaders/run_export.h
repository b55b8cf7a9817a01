// Writing one run of a history to a file, for `lazyscope import` elsewhere
// (a run bundle, as `lazyscope export RUN --bundle FILE` writes it) or for
// Perfetto / chrome://tracing (Chrome trace JSON). Storage does the work; this
// is the GUI's one call into it, run off the GUI thread by RunActions.
#pragma once

#include <QString>
#include <cstdint>

namespace lazyscope::gui {

struct JobControl;

enum class RunExportFormat { Bundle, ChromeTrace };

// Writes run `runId` of `history` to `path`. Empty on success, else a
// message naming the run or file and what went wrong. Blocking. With
// `control` stopped before the file is written, nothing is written (the
// storage writer itself cannot be stopped half way).
QString exportRunToFile(const QString& history, int64_t runId, const QString& path, RunExportFormat format,
                        const JobControl* control = nullptr);

}  // namespace lazyscope::gui
