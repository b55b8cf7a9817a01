#include "backend/cpu/fusion_jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "core/settings.h"
#include "events/event_bus.h"
#include "metrics/metrics.h"

extern char** environ;

namespace lazyscope::cpu {
namespace {

// -O3 vectorises the loop at the width the source's #pragma names (as
// fusion_tiles_*.cpp, never -march=native); -fno-math-errno lets GCC call
// libmvec's vector expf/erff/... as the tile files do; -fno-trapping-math
// lets it compute a NaN-guarded comparison in every lane and select: with
// trapping math GCC left the benchmark's chain (relu, maximum, ...) scalar
// on AVX2 and SSE ("control flow in loop"); values are unchanged, only FP
// exception flags, which nothing reads, may differ. -ffp-contract=off keeps
// a multiply followed by an add two roundings: an FMA across two steps
// would change the bits the standalone kernels compute.
const std::vector<std::string> kFlags = {
    "-O3", "-fPIC", "-shared", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-w"};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

struct Job {
  uint64_t key;
  std::string source;
  std::shared_ptr<PendingKernel> kernel;
};

// Everything the compiles share, under `mu`. The compiler runs without the
// lock: a cache hit asked for meanwhile is answered at once.
struct Jit {
  std::mutex mu;
  std::condition_variable cv;                                  // a job queued or finished, a compiler reaped
  std::map<uint64_t, std::shared_ptr<PendingKernel>> kernels;  // every source asked for, done or not
  std::deque<Job> queue;                                       // for the background thread
  std::map<uint64_t, Job> running;                             // compiling now (that thread, or a synchronous caller)
  std::set<pid_t> compilers;                                   // their processes (each its own process group)
  bool worker = false;                                         // the background thread exists
  bool compiler_failed = false;
  bool exiting = false;
};
// Set in a forked child that inherited queued or running jobs: its
// background thread did not come along and starts again on the next use.
std::atomic<bool> restart_after_fork{false};

void on_exit();
void prepare_fork();
void parent_after_fork();
void child_after_fork();

Jit& jit() {
  static Jit* j = [] {
    auto* made = new Jit;  // never destroyed: kernels may run during exit
    pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
    std::atexit(on_exit);
    return made;
  }();
  return *j;
}

// At exit, a compiler still running would go on as an orphan and leave its
// temporary files: its process group is stopped and the thread that ran it
// (cleaning up) is waited for a little. Nothing half-written is ever in the
// cache: an object only gets its name by a rename once complete.
void on_exit() {
  Jit& j = jit();
  std::unique_lock lock(j.mu);
  j.exiting = true;
  j.queue.clear();
  for (pid_t pid : j.compilers) kill(-pid, SIGTERM);
  j.cv.wait_for(lock, std::chrono::seconds(5), [&] { return j.compilers.empty(); });
}

void prepare_fork() { jit().mu.lock(); }
void parent_after_fork() { jit().mu.unlock(); }
// The child has only the forking thread: the lock and condition may be held
// or waited on by threads it lacks, so they are made anew; compiles that
// were running go back to the queue (their compilers are the parent's).
void child_after_fork() {
  Jit& j = jit();
  new (&j.mu) std::mutex;
  new (&j.cv) std::condition_variable;
  for (auto& [key, job] : j.running) j.queue.push_front(std::move(job));
  j.running.clear();
  j.compilers.clear();
  j.worker = false;
  restart_after_fork.store(!j.queue.empty(), std::memory_order_relaxed);
}

double ms_since(int64_t t0) { return static_cast<double>(events::now_ns() - t0) / 1e6; }

CompiledKernelFn load(const std::string& path) {
  // RTLD_LOCAL: each kernel's symbol is found through its own handle; the
  // handle is kept for the process's life (kernels are few and small).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return nullptr;
  return reinterpret_cast<CompiledKernelFn>(dlsym(handle, "lazyscope_fused"));
}

// Runs the compiler on `source_path` into `so_path`; its messages go to
// `log_path`. Returns an empty string, or why it failed. The compiler gets
// a process group of its own, for on_exit() to stop it with its children;
// `spawned` is its id (0: none ran), for compiler_done() once its files are gone.
std::string run_compiler(const std::string& source_path, const std::string& so_path, const std::string& log_path,
                         pid_t& spawned) {
  const std::string cxx = settings::kernel_compiler();
  std::vector<std::string> args = {cxx};
  args.insert(args.end(), kFlags.begin(), kFlags.end());
  for (const char* a : {"-o", so_path.c_str(), source_path.c_str(), "-lm"}) args.emplace_back(a);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // Not the process's stdin: in a process group of its own, a compiler
  // reading a terminal would be stopped (SIGTTIN).
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  Jit& j = jit();
  pid_t& pid = spawned;
  int rc = 0;
  {
    // Spawned under the lock: on_exit() either sees it or stops it starting.
    std::lock_guard lock(j.mu);
    rc = j.exiting ? ECANCELED : posix_spawnp(&pid, cxx.c_str(), &actions, &attr, argv.data(), environ);
    if (rc == 0) j.compilers.insert(pid);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return "cannot run '" + cxx + "': " + std::strerror(rc);
  int status = 0;
  std::string wait_error;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      wait_error = "waitpid: " + std::string(std::strerror(errno));
      break;
    }
  }
  if (!wait_error.empty()) return wait_error;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::ifstream log(log_path);
  std::stringstream text;
  text << log.rdbuf();
  std::string tail = text.str();
  while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back()))) tail.pop_back();
  if (tail.size() > 400) tail = "..." + tail.substr(tail.size() - 400);
  if (tail.empty() && WIFEXITED(status) && WEXITSTATUS(status) == 127) tail = "'" + cxx + "' not found";
  return "'" + cxx + "' exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
         (tail.empty() ? std::string() : ": " + tail);
}

// The compiler `pid` is reaped and its files are gone: on_exit() may go on.
void compiler_done(pid_t pid) {
  Jit& j = jit();
  std::lock_guard lock(j.mu);
  j.compilers.erase(pid);
  j.cv.notify_all();
}

// Empty, or why `dir` may not hold code this process loads: it must be
// this user's and writable by nobody else.
std::string private_directory_error(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return "cannot create " + dir + ": " + std::strerror(errno);
  if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return dir + " is not private to this user (LAZYSCOPE_KERNEL_CACHE_DIR names another)";
  }
  return "";
}

// Removes what compiles of dead processes left in `dir`: a process killed
// outright (SIGKILL, the OOM killer) runs no exit handler, so its
// temporary source, log and object (named <key>.<pid>.<thread>.<ext> by
// compile()) stay. Done once per directory per process, before its first
// compile; a file whose process still runs (another training process
// compiling now) is kept, and so is every finished object (<key>.so).
void sweep_orphans(const std::string& dir) {
  static std::mutex mu;
  static std::set<std::string> swept;
  {
    std::lock_guard lock(mu);
    if (!swept.insert(dir).second) return;
  }
  std::error_code ec;
  std::vector<std::filesystem::path> orphans;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // <16 hex digits>.<pid>.<thread id>.<cpp|so|log>
    const size_t first = name.find('.');
    if (first != 16) continue;
    const size_t second = name.find('.', first + 1);
    if (second == std::string::npos || second == first + 1) continue;
    const std::string pid_text = name.substr(first + 1, second - first - 1);
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".so" && ext != ".log") continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == getpid() || pid <= 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to tell (EPERM): kept
    orphans.push_back(entry.path());
  }
  for (const auto& path : orphans) std::filesystem::remove(path, ec);
}

std::string object_name(uint64_t key) {
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(key));
  return name;
}

// Compiles `job` (without the lock) into the cache and loads it; null and
// `error` where that fails.
CompiledKernelFn compile(const Job& job, std::string& error) {
  const std::string dir = settings::kernel_cache_dir();
  const std::string name = object_name(job.key);
  const std::string so_path = dir + "/" + name + ".so";
  // Written under names of this process and thread, then renamed into
  // place: another process compiling the same kernel at the same time
  // renames an identical file over it, and a compile cut short leaves no
  // object under the cache's name.
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  error = private_directory_error(dir);
  if (error.empty()) sweep_orphans(dir);
  std::ostringstream tmp;
  tmp << dir << "/" << name << "." << getpid() << "." << std::this_thread::get_id();
  const std::string src_path = tmp.str() + ".cpp", tmp_so = tmp.str() + ".so", log_path = tmp.str() + ".log";
  if (error.empty()) {
    std::ofstream out(src_path);
    out << job.source;
    if (!out.flush()) error = "cannot write " + src_path;
  }
  pid_t compiler = 0;
  if (error.empty()) error = run_compiler(src_path, tmp_so, log_path, compiler);
  CompiledKernelFn fn = nullptr;
  if (error.empty() && std::rename(tmp_so.c_str(), so_path.c_str()) != 0) error = "cannot write " + so_path;
  if (error.empty()) {
    fn = load(so_path);
    if (!fn) error = std::string("dlopen: ") + dlerror();
  }
  std::filesystem::remove(src_path, ec);
  std::filesystem::remove(log_path, ec);
  std::filesystem::remove(tmp_so, ec);
  if (compiler) compiler_done(compiler);
  return fn;
}

// Publishes a finished job (under the lock): its kernel is done, with `fn`
// or null. A failure is said once, and no compiler runs again in this
// process: the queued jobs are done too, on the interpreter.
void finish(Jit& j, const Job& job, CompiledKernelFn fn, const std::string& error, int64_t t0) {
  job.kernel->fn.store(fn, std::memory_order_release);
  job.kernel->done.store(true, std::memory_order_release);
  j.running.erase(job.key);
  if (fn) {
    metrics::counter("FusionJitCompiles")->add(1);
    metrics::metric("FusionJitCompileTime")->add(ms_since(t0));
  } else if (!j.exiting && !j.compiler_failed) {
    // Said once; the process keeps the interpreter for every chain rather
    // than paying a failing compiler run per kernel.
    j.compiler_failed = true;
    metrics::counter("FusionJitFailures")->add(1);
    std::cerr << "lazyscope: fused kernels stay on the interpreter: compiling one failed (" << error
              << "); LAZYSCOPE_CXX names the compiler, LAZYSCOPE_FUSION_JIT=0 turns this off\n";
  }
  if (j.compiler_failed) {
    for (Job& queued : j.queue) queued.kernel->done.store(true, std::memory_order_release);
    j.queue.clear();
  }
  j.cv.notify_all();
}

// The background thread: one compile at a time, at a low priority
// (settings::fusion_jit_nice). Linux's nice value is per thread and
// inherited by the processes it spawns, so the compilers run niced too and
// the step's threads keep the cores; the compiler gets what they leave
// (the step's single-threaded stretches: tracing, Python). Measured on the
// transformer's first 30 steps, load average ~5 from others: at nice 19 11
// of its 14 kernels were compiled by then, and the 30 steps took 6.2 s
// (5.8 s compiling 2 kernels before the first step, as before); at nice 10
// and 0 10-14 were, in 8.0 and 8.9 s.
void worker_main() {
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), static_cast<int>(settings::fusion_jit_nice()));
  Jit& j = jit();
  std::unique_lock lock(j.mu);
  for (;;) {
    j.cv.wait(lock, [&] { return !j.queue.empty() || j.exiting; });
    if (j.exiting) return;
    Job job = std::move(j.queue.front());
    j.queue.pop_front();
    j.running.emplace(job.key, job);
    lock.unlock();
    const int64_t t0 = events::now_ns();
    std::string error;
    const CompiledKernelFn fn = compile(job, error);
    lock.lock();
    finish(j, job, fn, error, t0);
  }
}

// Starts the background thread if it is not running (under the lock).
void start_worker(Jit& j) {
  restart_after_fork.store(false, std::memory_order_relaxed);
  if (j.worker) return;
  j.worker = true;
  std::thread(worker_main).detach();
}

}  // namespace

std::shared_ptr<const PendingKernel> request_kernel(const std::string& source) {
  // The key covers what makes the object: the source (which names its
  // instruction set), the compiler and its flags.
  std::string identity = source + "\n" + settings::kernel_compiler();
  for (const std::string& f : kFlags) identity += " " + f;
  const uint64_t key = fnv1a(identity);
  Jit& j = jit();
  std::unique_lock lock(j.mu);
  if (restart_after_fork.load(std::memory_order_relaxed)) start_worker(j);
  std::shared_ptr<PendingKernel>& kernel = j.kernels[key];
  const bool sync = settings::fusion_jit_sync();
  if (kernel) {
    const std::shared_ptr<PendingKernel> found = kernel;
    if (sync) j.cv.wait(lock, [&] { return found->done.load(std::memory_order_acquire); });
    return found;
  }
  kernel = std::make_shared<PendingKernel>();
  const std::shared_ptr<PendingKernel> made = kernel;
  // A cache hit is loaded at once (~0.1 ms), under the lock: only from a
  // directory nobody else may write, as a shared object found there is
  // code this process runs.
  const std::string dir = settings::kernel_cache_dir();
  const std::string so_path = dir + "/" + object_name(key) + ".so";
  const int64_t t0 = events::now_ns();
  if (std::filesystem::exists(so_path) && private_directory_error(dir).empty()) {
    if (CompiledKernelFn fn = load(so_path)) {
      metrics::counter("FusionJitCacheHits")->add(1);
      metrics::metric("FusionJitLoadTime")->add(ms_since(t0));
      made->fn.store(fn, std::memory_order_release);
    }
  }
  if (made->fn.load(std::memory_order_relaxed) || j.compiler_failed || j.exiting) {
    made->done.store(true, std::memory_order_release);
    return made;
  }
  Job job{key, source, made};
  if (!sync) {
    j.queue.push_back(std::move(job));
    start_worker(j);
    j.cv.notify_all();
    return made;
  }
  // Synchronous: compiled on this thread (not niced) before the step runs.
  j.running.emplace(key, job);
  lock.unlock();
  std::string error;
  const CompiledKernelFn fn = compile(job, error);
  lock.lock();
  finish(j, job, fn, error, t0);
  return made;
}

void resume_kernel_compiles() {
  if (!restart_after_fork.load(std::memory_order_relaxed)) return;
  Jit& j = jit();
  std::lock_guard lock(j.mu);
  if (restart_after_fork.load(std::memory_order_relaxed)) start_worker(j);
}

}  // namespace lazyscope::cpu
