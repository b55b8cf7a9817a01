// Compiled graphs keyed by graph hash, least recently used evicted first
// (bound: settings::compile_cache_size()). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "backend/backend.h"

namespace lazyscope::executor {

struct CompiledGraph {
  uint64_t hash = 0;
  std::unique_ptr<Executable> executable;
  int node_count = 0;
  // Sampled executions already published as a KernelProfileEvent.
  std::atomic<int64_t> profiled_samples{0};
};

class CompileCache {
 public:
  std::shared_ptr<CompiledGraph> get(uint64_t hash);
  void put(std::shared_ptr<CompiledGraph> graph);
  // Whether `hash` was compiled once and evicted since.
  bool was_evicted(uint64_t hash) const;
  size_t size() const;
  void clear();

 private:
  using Entry = std::pair<uint64_t, std::shared_ptr<CompiledGraph>>;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;
  std::unordered_set<uint64_t> evicted_;
};

CompileCache& compile_cache();

}  // namespace lazyscope::executor
