#include "backend/cpu/fusion_jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
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

struct Cache {
  std::mutex mu;
  std::map<uint64_t, CompiledKernelFn> loaded;  // null: failed to load
  bool compiler_failed = false;
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: kernels may run during exit
  return *c;
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
// `log_path`. Returns an empty string, or why it failed.
std::string run_compiler(const std::string& source_path, const std::string& so_path, const std::string& log_path) {
  const std::string cxx = settings::kernel_compiler();
  std::vector<std::string> args = {cxx};
  args.insert(args.end(), kFlags.begin(), kFlags.end());
  for (const char* a : {"-o", so_path.c_str(), source_path.c_str(), "-lm"}) args.emplace_back(a);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, cxx.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return "cannot run '" + cxx + "': " + std::strerror(rc);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return "waitpid: " + std::string(std::strerror(errno));
  }
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

}  // namespace

CompiledKernelFn compile_kernel(const std::string& source) {
  // The key covers what makes the object: the source (which names its
  // instruction set), the compiler and its flags.
  std::string identity = source + "\n" + settings::kernel_compiler();
  for (const std::string& f : kFlags) identity += " " + f;
  const uint64_t key = fnv1a(identity);
  Cache& c = cache();
  // One lock for lookups and compiles: two threads wanting one kernel
  // compile it once, and compiles are rare (once per kernel per machine).
  std::lock_guard lock(c.mu);
  if (auto it = c.loaded.find(key); it != c.loaded.end()) return it->second;
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(key));
  const std::string dir = settings::kernel_cache_dir();
  const std::string so_path = dir + "/" + name + ".so";
  const int64_t t0 = events::now_ns();
  CompiledKernelFn fn = nullptr;
  // Only from a directory nobody else may write: a shared object found
  // there is code this process runs.
  if (std::filesystem::exists(so_path) && private_directory_error(dir).empty()) fn = load(so_path);
  if (fn) {
    metrics::counter("FusionJitCacheHits")->add(1);
    metrics::metric("FusionJitLoadTime")->add(ms_since(t0));
  } else if (!c.compiler_failed) {
    // Written under names of this process and thread, then renamed into
    // place: another process compiling the same kernel at the same time
    // renames an identical file over it.
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::string error = private_directory_error(dir);
    std::ostringstream tmp;
    tmp << dir << "/" << name << "." << getpid() << "." << std::this_thread::get_id();
    const std::string src_path = tmp.str() + ".cpp", tmp_so = tmp.str() + ".so", log_path = tmp.str() + ".log";
    if (error.empty()) {
      std::ofstream out(src_path);
      out << source;
      if (!out.flush()) error = "cannot write " + src_path;
    }
    if (error.empty()) error = run_compiler(src_path, tmp_so, log_path);
    if (error.empty() && std::rename(tmp_so.c_str(), so_path.c_str()) != 0) error = "cannot write " + so_path;
    if (error.empty()) {
      fn = load(so_path);
      if (!fn) error = std::string("dlopen: ") + dlerror();
    }
    std::filesystem::remove(src_path, ec);
    std::filesystem::remove(log_path, ec);
    std::filesystem::remove(tmp_so, ec);
    if (fn) {
      metrics::counter("FusionJitCompiles")->add(1);
      metrics::metric("FusionJitCompileTime")->add(ms_since(t0));
    } else {
      // Said once; the process keeps the interpreter for every chain rather
      // than paying a failing compiler run per kernel.
      c.compiler_failed = true;
      metrics::counter("FusionJitFailures")->add(1);
      std::cerr << "lazyscope: fused kernels stay on the interpreter: compiling one failed (" << error
                << "); LAZYSCOPE_CXX names the compiler, LAZYSCOPE_FUSION_JIT=0 turns this off\n";
    }
  }
  c.loaded[key] = fn;
  return fn;
}

}  // namespace lazyscope::cpu
