#include "distributed/process_group.h"

#include <gloo/allgather.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "distributed/tcp_store.h"
#include "distributed/tcp_store_client.h"
#include "events/event_bus.h"
#include "metrics/metrics.h"

namespace lazyscope::distributed {
namespace {

struct State {
  std::mutex mu;  // one collective at a time: Gloo matches them by issue order
  InitOptions options;
  std::shared_ptr<gloo::rendezvous::Context> context;
  Totals totals;
};

State& state() {
  static auto* s = new State();  // leaked: a worker may exit with the group still up
  return *s;
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::string seconds_text(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

std::string where(const InitOptions& o) {
  return "rank " + std::to_string(o.rank) + " of " + std::to_string(o.world_size);
}

// Every rank announces itself (its world size) in the store and waits for
// the others, so that a rank that never arrives is named and a rank started
// with another world size is refused — connectFullMesh alone would only time
// out on an unnamed key.
void await_ranks(gloo::rendezvous::Store& store, const InitOptions& o, const std::string& at) {
  const std::string mine = std::to_string(o.world_size);
  store.set("arrived_" + std::to_string(o.rank), std::vector<char>(mine.begin(), mine.end()));
  std::vector<bool> seen(static_cast<size_t>(o.world_size), false);
  const auto deadline = std::chrono::steady_clock::now() + millis(o.timeout_s);
  while (true) {
    std::string missing;
    for (int r = 0; r < o.world_size; ++r) {
      if (seen[static_cast<size_t>(r)]) continue;
      const std::string key = "arrived_" + std::to_string(r);
      try {
        store.wait({key}, std::chrono::milliseconds(1));
      } catch (const gloo::Exception&) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        continue;
      }
      const std::vector<char> value = store.get(key);
      const std::string theirs(value.begin(), value.end());
      if (theirs != mine) {
        throw EngineError("init_process_group: rank " + std::to_string(r) + " was started with world size " + theirs +
                          " and " + where(o) + " with " + mine +
                          ": every process of a job needs the same world size (the same --nnodes and "
                          "--nproc-per-node on every node)");
      }
      seen[static_cast<size_t>(r)] = true;
    }
    if (missing.empty()) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw EngineError("init_process_group: rank(s) " + missing + " never arrived within " +
                        seconds_text(o.timeout_s) + " s (LAZYSCOPE_COLLECTIVE_TIMEOUT_S); " + where(o) +
                        " waited in the rendezvous at " + at);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// This process's TCP sockets (stream sockets of the inet families).
std::set<int> tcp_sockets() {
  std::set<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == ::dirfd(dir)) continue;
    struct stat st {};
    if (::fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int type = 0;
    socklen_t len = sizeof type;
    sockaddr_storage addr{};
    socklen_t addr_len = sizeof addr;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) continue;
    if (addr.ss_family == AF_INET || addr.ss_family == AF_INET6) fds.insert(static_cast<int>(fd));
  }
  ::closedir(dir);
  return fds;
}

// Gloo (Debian's 2022 snapshot) leaves Nagle's algorithm on for its TCP
// pairs, and its collectives are conversations of small messages: a 48-byte
// "ready" notification, then the data, each waiting for the peer's. With
// Nagle a small send waits for the ACK of the previous one, which the peer
// delays (milliseconds even on loopback): a 1 KiB all_reduce between 2
// processes took ~5-11 ms. Sockets that connectFullMesh opened get
// TCP_NODELAY (unless !small_message_tuning()).
void no_delay_on_new_sockets(const std::set<int>& before) {
  if (!small_message_tuning()) return;
  for (int fd : tcp_sockets()) {
    if (before.contains(fd)) continue;
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  }
}

State& active(const std::string& what) {
  State& s = state();
  if (!s.context) {
    throw EngineError(what +
                      ": the process group is not initialized (lazyscope.distributed.init_process_group(), "
                      "in a worker that `lazyscope run --nproc-per-node N` started)");
  }
  return s;
}

// Runs one Gloo collective under the group's lock, timing the wait and
// turning Gloo's errors (a peer that died, a timeout) into EngineErrors that
// name the collective and this rank.
template <typename F> void run_collective(const std::string& what, size_t bytes, F&& body) {
  State& s = active(what);
  std::lock_guard lock(s.mu);
  if (!s.context) throw EngineError(what + ": the process group was destroyed");
  const int64_t start = events::now_ns();
  try {
    body(s);
  } catch (const gloo::Exception& e) {
    throw EngineError(what + " failed on " + where(s.options) + ": " + e.what() +
                      " (another rank died, or did not reach this collective within "
                      "LAZYSCOPE_COLLECTIVE_TIMEOUT_S)");
  }
  const int64_t waited = events::now_ns() - start;
  s.totals.collectives += 1;
  s.totals.bytes_sent += static_cast<int64_t>(bytes);
  s.totals.wait_ns += waited;
  LAZYSCOPE_COUNTER("CollectiveBytes")->add(static_cast<int64_t>(bytes));
  LAZYSCOPE_METRIC("CollectiveWaitTime")->add(static_cast<double>(waited) / 1e6);
}

}  // namespace

bool small_message_tuning() {
  static const bool on = [] {
    const char* v = std::getenv("LAZYSCOPE_GLOO_TUNING");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

void init(const InitOptions& o) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.context)
    throw EngineError("init_process_group: the process group is already initialized (" + where(s.options) + ")");
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    throw EngineError("init_process_group: rank " + std::to_string(o.rank) + " is not in 0 .. world size " +
                      std::to_string(o.world_size) + " - 1");
  }
  if (o.store_dir.empty() || o.prefix.empty()) {
    throw EngineError(
        "init_process_group: no rendezvous directory (LAZYSCOPE_RDZV_DIR) or job id "
        "(LAZYSCOPE_RDZV_ID); start the script with `lazyscope run --nproc-per-node N`");
  }
  // The store: node 0's launcher over TCP ("tcp://HOST:PORT", so that
  // machines need no shared folder), or a Gloo file store in a folder.
  const std::optional<TcpAddress> tcp = parse_tcp_rendezvous(o.store_dir);
  const std::string at = tcp ? o.store_dir + " (prefix " + o.prefix + ")" : o.store_dir + "/" + o.prefix;
  std::unique_ptr<gloo::rendezvous::Store> base;
  if (tcp) {
    try {
      base = std::make_unique<TcpStore>(tcp->host, tcp->port, millis(o.timeout_s));
    } catch (const EngineError& e) {
      throw EngineError("init_process_group: " + where(o) + " " + e.what() + " within " + seconds_text(o.timeout_s) +
                        " s (LAZYSCOPE_COLLECTIVE_TIMEOUT_S): is node 0's `lazyscope run` started with this "
                        "--master-addr and --master-port, and reachable from this machine?");
    }
  } else {
    const std::filesystem::path dir = std::filesystem::path(o.store_dir) / o.prefix;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      throw EngineError("init_process_group: cannot create the rendezvous directory " + dir.string() + ": " +
                        ec.message());
    base = std::make_unique<gloo::rendezvous::FileStore>(dir.string());
  }
  try {
    // The job's keys apart from another job's on the same store.
    std::unique_ptr<gloo::rendezvous::PrefixStore> prefixed;
    if (tcp) prefixed = std::make_unique<gloo::rendezvous::PrefixStore>(o.prefix, *base);
    gloo::rendezvous::Store& store = prefixed ? static_cast<gloo::rendezvous::Store&>(*prefixed) : *base;
    await_ranks(store, o, at);
    gloo::transport::tcp::attr attr;
    attr.hostname = o.hostname.empty() ? "127.0.0.1" : o.hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.world_size);
    context->setTimeout(millis(o.timeout_s));
    const std::set<int> sockets_before = tcp_sockets();
    context->connectFullMesh(store, device);
    no_delay_on_new_sockets(sockets_before);
    s.context = std::move(context);
    s.options = o;
    s.totals = {};
  } catch (const gloo::Exception& e) {
    throw EngineError("init_process_group: " + where(o) + " could not connect to the others through Gloo (store " + at +
                      ", TCP on " + (o.hostname.empty() ? "127.0.0.1" : o.hostname) + "): " + e.what());
  }
}

void destroy() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.context.reset();
}

bool initialized() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.context != nullptr;
}

int rank() { return active("get_rank").options.rank; }
int world_size() { return active("get_world_size").options.world_size; }

Totals totals() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.totals;
}

void all_gather(const std::string& what, const void* in, size_t bytes, void* out, int64_t counted) {
  run_collective(what, counted < 0 ? bytes : static_cast<size_t>(counted), [&](State& s) {
    gloo::AllgatherOptions opts(s.context);
    opts.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes);
    opts.setOutput(static_cast<char*>(out), bytes * static_cast<size_t>(s.options.world_size));
    opts.setTimeout(millis(s.options.timeout_s));
    gloo::allgather(opts);
  });
}

void barrier(const std::string& what) {
  run_collective(what, 0, [&](State& s) {
    gloo::BarrierOptions opts(s.context);
    opts.setTimeout(millis(s.options.timeout_s));
    gloo::barrier(opts);
  });
}

}  // namespace lazyscope::distributed
