// Export of a run as Chrome trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open.
//
// Layout: one process per replica (pid = replica + 1, named "replica N"), one
// thread per kind of event: steps (tid 1), compiles (2), executions (3), host
// fallbacks (4), transfers (5) and host waits (6: one event per sync the
// script forced by reading a value, from the compile it waited for to the
// end of its execution). Steps carry the breakdown of analysis/step_times.h. Timed events are complete ("X") events with
// ts and dur in microseconds, relative to the run's first event; a logged
// scalar is a counter ("C", cat "scalar", args {"value"}) event of its replica
// at the end of its step; the memory metrics of each metric snapshot
// (LiveDeviceBufferBytes, LiveBufferBytes) are counter events (cat "memory",
// args {"bytes"}) at the snapshot's time; "M"
// events name the processes and threads. Events are listed metadata first,
// then by pid, tid and ts.
#pragma once

#include <cstddef>
#include <string>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

struct ChromeTrace {
  std::string json;
  size_t event_count = 0;  // entries of traceEvents, metadata included
};

ChromeTrace chrome_trace(const pb::RunTimeline& timeline);
std::string chrome_trace_json(const pb::RunTimeline& timeline);

}  // namespace lazyscope::storage
