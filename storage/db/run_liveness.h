// How a reader tells a running run from one whose writer died: the writer's
// host and pid, and a heartbeat the writer refreshes. Shared by the recorder
// (which writes the signs of life) and the query library (which judges them).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "lazyscope/history.pb.h"

namespace lazyscope::storage {

// The recorder refreshes the heartbeat at least this often, even when the
// script is silent (a long compile, input()).
inline constexpr std::chrono::milliseconds kHeartbeatInterval{10'000};
// A RUNNING run whose heartbeat is older than this is taken as crashed: six
// missed heartbeats, so a busy disk does not make live runs look dead.
inline constexpr std::chrono::milliseconds kHeartbeatStaleAfter{60'000};

int64_t unix_now_ms();

std::string this_host_name();

// False only when the pid is known to be gone (ESRCH); a pid we may not
// signal (EPERM) still exists.
bool process_is_alive(int64_t pid);

// The status to show for a run whose stored status is `stored`: RUNNING
// becomes CRASHED when its writer is gone from this host, or has been silent
// too long (also the only test that works for a run written on another host).
pb::RunStatus observed_status(pb::RunStatus stored, const std::string& host, int64_t pid, int64_t heartbeat_unix_ms,
                              int64_t now_unix_ms);

}  // namespace lazyscope::storage
