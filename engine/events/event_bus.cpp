#include "events/event_bus.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

namespace lazyscope::events {
namespace {

struct Bus {
  std::mutex mu;
  int next_id = 1;
  std::vector<std::pair<int, std::shared_ptr<Subscriber>>> subscribers;
  std::atomic<bool> enabled{false};
  std::atomic<int64_t> published{0};
};

Bus& bus() {
  static auto* b = new Bus();
  return *b;
}

}  // namespace

int subscribe(Subscriber subscriber) {
  Bus& b = bus();
  std::lock_guard lock(b.mu);
  const int id = b.next_id++;
  b.subscribers.emplace_back(id, std::make_shared<Subscriber>(std::move(subscriber)));
  b.enabled.store(true);
  return id;
}

void unsubscribe(int id) {
  Bus& b = bus();
  std::lock_guard lock(b.mu);
  std::erase_if(b.subscribers, [id](const auto& s) { return s.first == id; });
  b.enabled.store(!b.subscribers.empty());
}

bool enabled() { return bus().enabled.load(std::memory_order_relaxed); }

void publish(const pb::Event& event) {
  Bus& b = bus();
  b.published.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::shared_ptr<Subscriber>> targets;
  {
    std::lock_guard lock(b.mu);
    for (auto& [id, s] : b.subscribers) targets.push_back(s);
  }
  for (auto& s : targets) (*s)(event);
}

int64_t published_count() { return bus().published.load(std::memory_order_relaxed); }

int64_t now_ns() {
  using clock = std::chrono::steady_clock;
  static const clock::time_point epoch = clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - epoch).count();
}

}  // namespace lazyscope::events
