#include "launch.h"
#include "run_command.h"
#include "run_info.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <pybind11/embed.h>

#include "db/history_file.h"
#include "distributed/tcp_store.h"
#include "recorder/recorder.h"

namespace fs = std::filesystem;
namespace py = pybind11;

namespace lazyscope::runner {

const char* const kLaunchHelp = R"(multi-process and multi-host runs (like torchrun; see README):
  --nproc-per-node N    start N worker processes on this node, each with one lazy
                        device and its rank; they meet in a Gloo process group
                        (lazyscope.distributed.init_process_group()) and the run
                        records every rank's events as one run
  --nnodes M            nodes taking part (default 1); ranks are node-rank * N + local
  --node-rank R         this node's index, 0 .. M-1 (default 0)
  --master-addr HOST    node 0's address (default 127.0.0.1)
  --master-port PORT    where node 0's launcher waits for the other nodes and
                        serves the workers' rendezvous store (needed with --nnodes
                        above 1; without it one node's workers meet in a file
                        store under LAZYSCOPE_RDZV_DIR)
  Each worker's thread pool gets its share of this node's cores (cores / N, at
  least 1) unless LAZYSCOPE_NUM_THREADS is set.
  A worker that fails stops the job: the others get SIGTERM, and SIGKILL after
  LAZYSCOPE_WORKER_TIMEOUT_S (default 30) seconds.
)";

namespace {

// LAZYSCOPE_NUM_THREADS for each of `workers` processes on this node: the
// user's setting if any, else the cores this launcher may use shared out
// (at least 1 each). Each engine otherwise sizes its pool to every core, and
// N processes' pools oversubscribe the node N times over.
std::string worker_threads(int workers) {
  if (const char* set = std::getenv("LAZYSCOPE_NUM_THREADS"); set != nullptr && *set != '\0') return set;
  cpu_set_t cores;
  int count = sched_getaffinity(0, sizeof(cores), &cores) == 0 ? CPU_COUNT(&cores) : 0;
  if (count <= 0) count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::to_string(std::max(1, count / std::max(1, workers)));
}

constexpr const char* kEventFdVariable = "LAZYSCOPE_WORKER_EVENT_FD";

int positive_number(const std::string& option, const std::string& v, int minimum) {
  size_t used = 0;
  int n = -1;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    n = -1;
  }
  if (n < minimum || used != v.size()) {
    throw std::invalid_argument(option + " needs a whole number of at least " + std::to_string(minimum) + ", got '" +
                                v + "'");
  }
  return n;
}

double worker_timeout_s() {
  const char* v = std::getenv("LAZYSCOPE_WORKER_TIMEOUT_S");
  if (v == nullptr || *v == '\0') return 30;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s > 0)) {
    throw std::invalid_argument(std::string("LAZYSCOPE_WORKER_TIMEOUT_S=") + v + " is not a number of seconds above 0");
  }
  return s;
}

double rendezvous_timeout_s() {
  const char* v = std::getenv("LAZYSCOPE_COLLECTIVE_TIMEOUT_S");
  if (v == nullptr || *v == '\0') return 60;
  const double s = std::strtod(v, nullptr);
  return s > 0 ? s : 60;
}

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot locate the lazyscope executable");
  buf[n] = '\0';
  return buf;
}

std::string random_id() {
  std::random_device rd;
  std::ostringstream s;
  s << std::hex << rd() << rd();
  return s.str();
}

std::atomic<int> g_stop_signal{0};
void on_stop_signal(int sig) { g_stop_signal.store(sig); }

// ---- node 0 and the other nodes: agreeing on the job -------------------

struct NodeJob {
  std::string job_id;
  std::string error;  // set instead of job_id
};

// Node 0 listens on the master port for the whole job (the port also keeps a
// second job from joining this one).
int listen_on(const std::string& addr, int port, std::string& error) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    // A host name: the address it resolves to here (the one the other nodes reach).
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo* found = nullptr;
    if (::getaddrinfo(addr.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
      error = "--master-addr " + addr + " does not resolve to an IPv4 address on this machine";
      ::close(fd);
      return -1;
    }
    sa.sin_addr = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
    ::freeaddrinfo(found);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 64) != 0) {
    error = "--master-port " + std::to_string(port) + " on " + addr + " is not free (" + std::strerror(errno) +
            "): another job (or program) uses it; pick another port";
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string read_line(int fd, double timeout_s) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char c = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) break;
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return;
    }
    done += static_cast<size_t>(n);
  }
}

// Node 0: waits for nodes 1 .. M-1 ("node R NNODES NPROC"), answers each
// "ok JOB" or "error TEXT".
NodeJob host_nodes(int listen_fd, const RunOptions& o) {
  NodeJob job{random_id(), ""};
  std::map<int, int> joined;  // node rank -> socket
  const double timeout = rendezvous_timeout_s();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  while (static_cast<int>(joined.size()) < o.nnodes - 1 && job.error.empty()) {
    if (g_stop_signal.load() != 0) {
      job.error = "interrupted while waiting for the other nodes";
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::string missing;
      for (int n = 1; n < o.nnodes; ++n) {
        if (!joined.contains(n)) missing += (missing.empty() ? "" : ", ") + std::to_string(n);
      }
      job.error = "node(s) " + missing + " never arrived within " + std::to_string(static_cast<int>(timeout)) +
                  " s (LAZYSCOPE_COLLECTIVE_TIMEOUT_S) at " + o.master_addr + ":" + std::to_string(o.master_port);
      break;
    }
    pollfd p{listen_fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::istringstream hello(read_line(c, 5));
    std::string word;
    int node = -1, nnodes = -1, nproc = -1;
    hello >> word >> node >> nnodes >> nproc;
    if (word != "node" || node < 1) {
      ::close(c);  // not one of ours
      continue;
    }
    if (nnodes != o.nnodes || nproc != o.nproc_per_node) {
      job.error = "mismatched world sizes: node " + std::to_string(node) + " was started with --nnodes " +
                  std::to_string(nnodes) + " --nproc-per-node " + std::to_string(nproc) + ", node 0 with --nnodes " +
                  std::to_string(o.nnodes) + " --nproc-per-node " + std::to_string(o.nproc_per_node);
      write_all(c, "error " + job.error + "\n");
      ::close(c);
      break;
    }
    if (node >= o.nnodes || joined.contains(node)) {
      const std::string e = "node rank " + std::to_string(node) +
                            (node >= o.nnodes ? " is out of range" : " joined twice");
      write_all(c, "error " + e + "\n");
      ::close(c);
      job.error = e;
      break;
    }
    joined[node] = c;
  }
  for (auto& [node, c] : joined) {
    write_all(c, job.error.empty() ? "ok " + job.job_id + "\n" : "error " + job.error + "\n");
    ::close(c);
  }
  return job;
}

// Node R > 0: connects to node 0 (retrying until the timeout) and gets the job.
NodeJob join_nodes(const RunOptions& o) {
  const double timeout = rendezvous_timeout_s();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  while (std::chrono::steady_clock::now() < deadline && g_stop_signal.load() == 0) {
    addrinfo* found = nullptr;
    if (::getaddrinfo(o.master_addr.c_str(), std::to_string(o.master_port).c_str(), &hints, &found) == 0) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      const bool connected = ::connect(fd, found->ai_addr, found->ai_addrlen) == 0;
      ::freeaddrinfo(found);
      if (connected) {
        write_all(fd, "node " + std::to_string(o.node_rank) + " " + std::to_string(o.nnodes) + " " +
                          std::to_string(o.nproc_per_node) + "\n");
        const std::string answer = read_line(fd, timeout);
        ::close(fd);
        if (answer.starts_with("ok ")) return {answer.substr(3), ""};
        if (answer.starts_with("error ")) return {"", "node 0 refused this node: " + answer.substr(6)};
        return {"", "node 0 at " + o.master_addr + ":" + std::to_string(o.master_port) +
                        " closed the connection without an answer (it gave up on the job)"};
      }
      ::close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return {"", "node 0 never answered at " + o.master_addr + ":" + std::to_string(o.master_port) + " within " +
                  std::to_string(static_cast<int>(timeout)) + " s (LAZYSCOPE_COLLECTIVE_TIMEOUT_S)"};
}

// ---- the workers ----------------------------------------------------------

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1, event_fd = -1;  // read ends; -1 at EOF
  std::string out_partial, err_partial, events;
  std::string last_line;
  bool exited = false;
  int status = 0;
};

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "status " + std::to_string(status);
}

bool failed(int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 0); }

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

pid_t start_worker(const std::string& exe, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env, int out_w, int err_w, int event_w,
                   const std::vector<int>& close_in_child) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  // Child: only async-signal-safe calls until exec, plus setenv (single-threaded copy).
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  // A launcher killed outright (SIGKILL) takes its workers down too.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ::dup2(out_w, STDOUT_FILENO);
  ::dup2(err_w, STDERR_FILENO);
  for (int fd : close_in_child) ::close(fd);
  for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
  ::setenv(kEventFdVariable, std::to_string(event_w).c_str(), 1);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(exe.c_str(), argv.data());
  const std::string msg = "lazyscope run: cannot start a worker: " + std::string(std::strerror(errno)) + "\n";
  (void)!::write(STDERR_FILENO, msg.data(), msg.size());
  ::_exit(127);
}

// The worker's arguments: `run` and the user's arguments without the
// launcher's options (a worker is one process of the job).
std::vector<std::string> worker_args(const std::vector<std::string>& run_args) {
  static const char* launcher_options[] = {"--nproc-per-node", "--nnodes", "--node-rank", "--master-addr",
                                           "--master-port"};
  std::vector<std::string> out{"run"};
  bool script_args = false;
  for (size_t i = 0; i < run_args.size(); ++i) {
    if (run_args[i] == "--") script_args = true;
    bool ours = false;
    for (const char* name : launcher_options) ours = ours || (!script_args && run_args[i] == name);
    if (ours) {
      ++i;  // and its value
      continue;
    }
    out.push_back(run_args[i]);
  }
  return out;
}

}  // namespace

bool take_launch_option(const std::vector<std::string>& args, size_t& i, RunOptions& o) {
  const std::string& a = args[i];
  auto value = [&]() -> std::string {
    if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
    return args[++i];
  };
  if (a == "--nproc-per-node") {
    o.nproc_per_node = positive_number(a, value(), 1);
  } else if (a == "--nnodes") {
    o.nnodes = positive_number(a, value(), 1);
  } else if (a == "--node-rank") {
    o.node_rank = positive_number(a, value(), 0);
  } else if (a == "--master-addr") {
    o.master_addr = value();
  } else if (a == "--master-port") {
    o.master_port = positive_number(a, value(), 1);
    if (o.master_port > 65535) throw std::invalid_argument("--master-port needs a port number up to 65535");
  } else {
    return false;
  }
  return true;
}

int worker_event_fd() {
  const char* v = std::getenv(kEventFdVariable);
  if (v == nullptr || *v == '\0') return -1;
  return std::atoi(v);
}

WorkerEventStream::WorkerEventStream(int fd) : fd_(fd), rank_(0) {
  if (const char* r = std::getenv("LAZYSCOPE_RANK")) rank_ = std::atoi(r);
  ::unsetenv(kEventFdVariable);  // not inherited by what the script starts
}

WorkerEventStream::~WorkerEventStream() { ::close(fd_); }

void WorkerEventStream::write(const pb::Event& event) {
  static std::mutex mu;
  pb::Event copy = event;
  copy.set_replica(rank_);  // the global rank: one lane per rank in the one run
  std::string bytes;
  copy.SerializeToString(&bytes);
  const auto size = static_cast<uint32_t>(bytes.size());
  std::string frame(reinterpret_cast<const char*>(&size), sizeof size);
  frame += bytes;
  std::lock_guard lock(mu);
  if (broken_) return;
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = ::write(fd_, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken_ = true;  // the launcher is gone; the worker goes on (its SIGTERM follows)
      return;
    }
    done += static_cast<size_t>(n);
  }
}

int launch(const RunOptions& o, const std::vector<std::string>& run_args) {
  if (!fs::is_regular_file(o.script)) {
    std::cerr << "lazyscope run: no such script: " << o.script << "\n";
    return 2;
  }
  double kill_after_s = 30;
  try {
    kill_after_s = worker_timeout_s();
    if (o.node_rank >= o.nnodes) {
      throw std::invalid_argument("--node-rank " + std::to_string(o.node_rank) + " is not below --nnodes " +
                                  std::to_string(o.nnodes));
    }
    if (o.nnodes > 1 && o.master_port == 0) throw std::invalid_argument("--nnodes above 1 needs --master-port");
  } catch (const std::invalid_argument& e) {
    std::cerr << "lazyscope run: " << e.what() << "\n";
    return 2;
  }
  const int world = o.nnodes * o.nproc_per_node;
  const std::string master_addr = o.master_addr.empty() ? "127.0.0.1" : o.master_addr;
  RunOptions opts = o;
  opts.master_addr = master_addr;

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // The run first, so that a job that cannot start is recorded with why.
  const std::string history = o.history_path.empty() ? storage::default_history_path() : o.history_path;
  pb::RunInfo info;
  {
    // The interpreter (for hashlib's SHA-256) ends before any worker is forked.
    py::scoped_interpreter interpreter;
    info = new_run_info(o, read_file(o.script), engine_settings(o), world);
  }
  (*info.mutable_settings())["LAZYSCOPE_WORLD_SIZE"] = std::to_string(world);
  (*info.mutable_settings())["LAZYSCOPE_NPROC_PER_NODE"] = std::to_string(o.nproc_per_node);
  (*info.mutable_settings())["LAZYSCOPE_NNODES"] = std::to_string(o.nnodes);
  (*info.mutable_settings())["LAZYSCOPE_NODE_RANK"] = std::to_string(o.node_rank);
  std::unique_ptr<storage::Recorder> recorder;
  try {
    recorder = std::make_unique<storage::Recorder>(history, info);
  } catch (const storage::HistoryError& e) {
    std::cerr << "lazyscope run: cannot record into the history: " << e.what() << "\n";
    return 2;
  }
  auto give_up = [&](const std::string& error) {
    std::cerr << "lazyscope run: " << error << "\n";
    recorder->record_output("stderr", "lazyscope run: " + error + "\n");
    recorder->finish(pb::RUN_STATUS_FAILED, 2, error, "");
    return 2;
  };

  // The job's id (the Gloo store's prefix) and rendezvous directory.
  std::string job_id = random_id();
  int listen_fd = -1;
  if (o.master_port != 0 && o.node_rank == 0) {
    std::string error;
    listen_fd = listen_on(master_addr, o.master_port, error);
    if (listen_fd < 0) return give_up(error);
  }
  if (o.nnodes > 1) {
    const NodeJob job = o.node_rank == 0 ? host_nodes(listen_fd, opts) : join_nodes(opts);
    if (!job.error.empty()) {
      if (listen_fd >= 0) ::close(listen_fd);
      return give_up(job.error);
    }
    job_id = job.job_id;
  }
  // Where the workers meet: with --master-port, the store node 0's launcher
  // serves on that port (no shared folder across machines); else a Gloo
  // file store under LAZYSCOPE_RDZV_DIR.
  const char* rdzv_env = std::getenv("LAZYSCOPE_RDZV_DIR");
  const bool tcp_store = o.master_port != 0;
  const std::string rdzv_dir = tcp_store               ? distributed::tcp_rendezvous(master_addr, o.master_port)
                               : rdzv_env && *rdzv_env ? rdzv_env
                                                       : "/tmp/lazyscope-rdzv";
  std::unique_ptr<distributed::StoreServer> store_server;
  if (listen_fd >= 0) store_server = std::make_unique<distributed::StoreServer>(listen_fd);

  // The address the workers' Gloo transport binds: loopback for one node (or
  // a job whose node 0 is this machine's loopback), else
  // LAZYSCOPE_GLOO_HOST, else this machine's host name, which the other
  // nodes must be able to resolve.
  std::string gloo_host = "127.0.0.1";
  if (o.nnodes > 1 && master_addr != "localhost" && !master_addr.starts_with("127.")) {
    const char* configured = std::getenv("LAZYSCOPE_GLOO_HOST");
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    gloo_host = configured && *configured ? configured : name;
  }

  // Start the workers.
  const std::string exe = self_exe();
  const std::vector<std::string> args = worker_args(run_args);
  std::vector<Worker> workers(static_cast<size_t>(o.nproc_per_node));
  std::vector<int> parent_ends;
  const std::string threads = worker_threads(o.nproc_per_node);
  for (int local = 0; local < o.nproc_per_node; ++local) {
    Worker& w = workers[static_cast<size_t>(local)];
    w.rank = o.node_rank * o.nproc_per_node + local;
    int out[2], err[2], ev[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(ev, O_CLOEXEC) != 0) {
      return give_up(std::string("cannot create pipes for the workers: ") + std::strerror(errno));
    }
    // The event pipe's write end must survive exec in the child.
    const int event_w = ::fcntl(ev[1], F_DUPFD, 10);
    std::map<std::string, std::string> env = {
        {"LAZYSCOPE_RANK", std::to_string(w.rank)},
        {"LAZYSCOPE_LOCAL_RANK", std::to_string(local)},
        {"LAZYSCOPE_WORLD_SIZE", std::to_string(world)},
        {"LAZYSCOPE_RDZV_DIR", rdzv_dir},
        {"LAZYSCOPE_RDZV_ID", job_id},
        {"LAZYSCOPE_GLOO_HOST", gloo_host},
        {"LAZYSCOPE_DEVICE_COUNT", "1"},
        {"LAZYSCOPE_NUM_THREADS", threads},
        {"RANK", std::to_string(w.rank)},
        {"LOCAL_RANK", std::to_string(local)},
        {"WORLD_SIZE", std::to_string(world)},
        {"MASTER_ADDR", master_addr},
        {"MASTER_PORT", std::to_string(o.master_port)},
    };
    std::vector<int> close_in_child = parent_ends;
    close_in_child.insert(close_in_child.end(), {out[0], err[0], ev[0], ev[1]});
    if (listen_fd >= 0) close_in_child.push_back(listen_fd);
    w.pid = start_worker(exe, args, env, out[1], err[1], event_w, close_in_child);
    ::close(out[1]);
    ::close(err[1]);
    ::close(ev[1]);
    ::close(event_w);
    w.out_fd = out[0];
    w.err_fd = err[0];
    w.event_fd = ev[0];
    for (int fd : {w.out_fd, w.err_fd, w.event_fd}) {
      set_nonblocking(fd);
      parent_ends.push_back(fd);
    }
  }
  std::cerr << "lazyscope run: started " << o.nproc_per_node << " worker(s), ranks " << o.node_rank * o.nproc_per_node
            << ".." << (o.node_rank + 1) * o.nproc_per_node - 1 << " of " << world << ", " << threads
            << " thread(s) each\n";

  // One loop: output and events from every worker, their exits, signals.
  auto pass_output = [&](Worker& w, bool is_err, std::string& partial, const char* data, size_t n, bool at_eof) {
    partial.append(data, n);
    size_t start = 0;
    while (true) {
      const size_t nl = partial.find('\n', start);
      if (nl == std::string::npos) break;
      const std::string line = partial.substr(start, nl - start);
      const std::string shown = "[rank " + std::to_string(w.rank) + "] " + line + "\n";
      (is_err ? std::cerr : std::cout) << shown << std::flush;
      recorder->record_output(is_err ? "stderr" : "stdout", shown);
      if (!line.empty()) w.last_line = line;
      start = nl + 1;
    }
    partial.erase(0, start);
    if (at_eof && !partial.empty()) {
      const std::string shown = "[rank " + std::to_string(w.rank) + "] " + partial + "\n";
      (is_err ? std::cerr : std::cout) << shown << std::flush;
      recorder->record_output(is_err ? "stderr" : "stdout", shown);
      w.last_line = partial;
      partial.clear();
    }
  };
  auto pass_events = [&](Worker& w) {
    while (w.events.size() >= 4) {
      uint32_t size = 0;
      std::memcpy(&size, w.events.data(), 4);
      if (w.events.size() < 4 + size) break;
      pb::Event e;
      if (e.ParseFromArray(w.events.data() + 4, static_cast<int>(size))) recorder->record(std::move(e));
      w.events.erase(0, 4 + size);
    }
  };

  std::string failure;  // the first failed worker, for the run's error
  int exit_code = 0;
  bool interrupted = false;
  std::chrono::steady_clock::time_point kill_at{};
  bool terminating = false;
  auto terminate_all = [&](double grace_s) {
    if (terminating) return;
    terminating = true;
    for (Worker& w : workers) {
      if (!w.exited) ::kill(w.pid, SIGTERM);
    }
    kill_at = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(grace_s));
  };

  char buf[65536];
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Worker*, int>> owners;  // worker, which (0 out, 1 err, 2 events)
    for (Worker& w : workers) {
      const int ends[] = {w.out_fd, w.err_fd, w.event_fd};
      for (int k = 0; k < 3; ++k) {
        if (ends[k] >= 0) {
          fds.push_back({ends[k], POLLIN, 0});
          owners.emplace_back(&w, k);
        }
      }
    }
    bool all_exited = true;
    for (const Worker& w : workers) all_exited = all_exited && w.exited;
    if (all_exited && fds.empty()) break;
    ::poll(fds.data(), fds.size(), 100);
    for (size_t i = 0; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      auto [w, which] = owners[i];
      int& fd = which == 0 ? w->out_fd : which == 1 ? w->err_fd : w->event_fd;
      while (true) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
          if (which == 2) {
            w->events.append(buf, static_cast<size_t>(n));
            pass_events(*w);
          } else {
            pass_output(*w, which == 1, which == 1 ? w->err_partial : w->out_partial, buf, static_cast<size_t>(n),
                        false);
          }
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
        // EOF (or an error): the worker closed it.
        if (which != 2) pass_output(*w, which == 1, which == 1 ? w->err_partial : w->out_partial, nullptr, 0, true);
        ::close(fd);
        fd = -1;
        break;
      }
    }
    for (Worker& w : workers) {
      if (w.exited) continue;
      int status = 0;
      if (::waitpid(w.pid, &status, WNOHANG) != w.pid) continue;
      w.exited = true;
      w.status = status;
      // Ctrl-C on a terminal reaches the workers too: one that ended as
      // interrupted (130, 143) interrupts the job rather than failing it.
      const int code = exit_code_of(status);
      if ((code == 128 + SIGINT || code == 128 + SIGTERM) && failure.empty() && !interrupted) {
        interrupted = true;
        exit_code = 128 + SIGINT;
        std::cerr << "lazyscope run: rank " << w.rank << " was interrupted: stopping every worker\n";
        terminate_all(kill_after_s);
        continue;
      }
      if (failed(status) && failure.empty() && !interrupted) {
        // Let its last output arrive before naming its last line.
        for (int* fd : {&w.out_fd, &w.err_fd}) {
          while (*fd >= 0) {
            const ssize_t n = ::read(*fd, buf, sizeof buf);
            if (n > 0) {
              pass_output(w, fd == &w.err_fd, fd == &w.err_fd ? w.err_partial : w.out_partial, buf,
                          static_cast<size_t>(n), false);
              continue;
            }
            if (n < 0 && errno == EINTR) continue;
            pass_output(w, fd == &w.err_fd, fd == &w.err_fd ? w.err_partial : w.out_partial, nullptr, 0, true);
            ::close(*fd);
            *fd = -1;
          }
        }
        failure = "rank " + std::to_string(w.rank) + " (pid " + std::to_string(w.pid) + ") failed with " +
                  describe_status(status) + "; its last line: " + (w.last_line.empty() ? "(none)" : w.last_line);
        exit_code = exit_code_of(status);
        std::cerr << "lazyscope run: " << failure << "; stopping the other workers\n";
        recorder->record_output("stderr", "lazyscope run: " + failure + "; stopping the other workers\n");
        terminate_all(kill_after_s);
      }
    }
    if (const int sig = g_stop_signal.exchange(0); sig != 0 && !interrupted) {
      interrupted = failure.empty();
      if (interrupted) exit_code = 128 + sig;
      std::cerr << "lazyscope run: " << (sig == SIGINT ? "Ctrl-C" : "SIGTERM") << ": stopping every worker\n";
      terminate_all(kill_after_s);
    }
    if (terminating && std::chrono::steady_clock::now() > kill_at) {
      for (Worker& w : workers) {
        if (!w.exited) {
          std::cerr << "lazyscope run: rank " << w.rank << " did not stop within " << kill_after_s
                    << " s (LAZYSCOPE_WORKER_TIMEOUT_S): killed\n";
          ::kill(w.pid, SIGKILL);
        }
      }
      kill_at = std::chrono::steady_clock::now() + std::chrono::hours(1);
    }
  }
  if (store_server) store_server->stop();
  if (listen_fd >= 0) ::close(listen_fd);
  if (o.node_rank == 0 && !tcp_store) {
    // The job's keys in the store; nobody reads them once every worker ended.
    std::error_code ignored;
    fs::remove_all(fs::path(rdzv_dir) / job_id, ignored);
  }

  pb::RunStatus status = pb::RUN_STATUS_SUCCEEDED;
  std::string error;
  if (!failure.empty()) {
    status = pb::RUN_STATUS_FAILED;
    error = failure;
  } else if (interrupted) {
    status = pb::RUN_STATUS_INTERRUPTED;
    error = "interrupted: every worker was stopped";
  }
  recorder->finish(status, exit_code, error, "");
  const int64_t run_id = recorder->run_id();
  recorder.reset();
  // The same summary, per-rank block and diagnosis as a one-process run; a
  // node of a multi-node job holds only its own ranks until they are merged.
  const std::string note = o.nnodes > 1
                               ? "  node         " + std::to_string(o.node_rank) + " of " + std::to_string(o.nnodes) +
                                     ", ranks " + std::to_string(o.node_rank * o.nproc_per_node) + ".." +
                                     std::to_string((o.node_rank + 1) * o.nproc_per_node - 1) + " of " +
                                     std::to_string(world) +
                                     " (merge the other nodes' bundles: lazyscope import FILE --into RUN)\n"
                               : "";
  print_finished_run(history, run_id, note);
  return exit_code;
}

}  // namespace lazyscope::runner
