#include "executor/compile_cache.h"

#include "core/settings.h"
#include "metrics/metrics.h"

namespace lazyscope::executor {

std::shared_ptr<CompiledGraph> CompileCache::get(uint64_t hash) {
  std::lock_guard lock(mu_);
  auto it = index_.find(hash);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void CompileCache::put(std::shared_ptr<CompiledGraph> graph) {
  std::lock_guard lock(mu_);
  const uint64_t hash = graph->hash;
  if (auto it = index_.find(hash); it != index_.end()) lru_.erase(it->second);
  lru_.emplace_front(hash, std::move(graph));
  index_[hash] = lru_.begin();
  evicted_.erase(hash);
  const auto limit = static_cast<size_t>(settings::compile_cache_size());
  while (lru_.size() > limit) {
    evicted_.insert(lru_.back().first);
    index_.erase(lru_.back().first);
    lru_.pop_back();
    LAZYSCOPE_COUNTER("CompileCacheEvictions")->add(1);
  }
}

bool CompileCache::was_evicted(uint64_t hash) const {
  std::lock_guard lock(mu_);
  return evicted_.contains(hash);
}

size_t CompileCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

void CompileCache::clear() {
  std::lock_guard lock(mu_);
  lru_.clear();
  index_.clear();
  evicted_.clear();
}

CompileCache& compile_cache() {
  static auto* cache = new CompileCache();
  return *cache;
}

}  // namespace lazyscope::executor
