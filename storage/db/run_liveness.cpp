#include "db/run_liveness.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace lazyscope::storage {

int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string this_host_name() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return {};
  return name.data();
}

bool process_is_alive(int64_t pid) {
  if (pid <= 0) return true;  // unknown: leave the judgement to the heartbeat
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

pb::RunStatus observed_status(pb::RunStatus stored, const std::string& host, int64_t pid, int64_t heartbeat_unix_ms,
                              int64_t now_unix_ms) {
  if (stored != pb::RUN_STATUS_RUNNING) return stored;
  const bool writer_gone = host == this_host_name() && !process_is_alive(pid);
  const bool silent_too_long = now_unix_ms - heartbeat_unix_ms > kHeartbeatStaleAfter.count();
  return writer_gone || silent_too_long ? pb::RUN_STATUS_CRASHED : pb::RUN_STATUS_RUNNING;
}

}  // namespace lazyscope::storage
