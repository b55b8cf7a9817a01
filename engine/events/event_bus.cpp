#include "events/event_bus.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace lazyscope::events {
namespace {

struct Subscribers {
  std::vector<std::pair<int, Subscriber>> plain;
  std::vector<std::pair<int, TakingSubscriber>> taking;
};

struct Bus {
  std::mutex mu;
  int next_id = 1;
  // Copy on write: publish() takes the current list under the lock (one
  // reference count, no allocation per event); subscribe and unsubscribe
  // replace it. A publish already under way keeps calling the list it took.
  std::shared_ptr<const Subscribers> subscribers = std::make_shared<const Subscribers>();
  std::atomic<bool> enabled{false};
  std::atomic<int64_t> published{0};
};

Bus& bus() {
  static auto* b = new Bus();
  return *b;
}

// Applies `change` to a copy of the list and installs it; the lock is held.
template <class Change> void replace_subscribers(Bus& b, Change change) {
  auto next = std::make_shared<Subscribers>(*b.subscribers);
  change(*next);
  b.enabled.store(!next->plain.empty() || !next->taking.empty());
  b.subscribers = std::move(next);
}

}  // namespace

int subscribe(Subscriber subscriber) {
  Bus& b = bus();
  std::lock_guard lock(b.mu);
  const int id = b.next_id++;
  replace_subscribers(b, [&](Subscribers& s) { s.plain.emplace_back(id, std::move(subscriber)); });
  return id;
}

int subscribe_taking(TakingSubscriber subscriber) {
  Bus& b = bus();
  std::lock_guard lock(b.mu);
  const int id = b.next_id++;
  replace_subscribers(b, [&](Subscribers& s) { s.taking.emplace_back(id, std::move(subscriber)); });
  return id;
}

void unsubscribe(int id) {
  Bus& b = bus();
  std::lock_guard lock(b.mu);
  replace_subscribers(b, [id](Subscribers& s) {
    std::erase_if(s.plain, [id](const auto& e) { return e.first == id; });
    std::erase_if(s.taking, [id](const auto& e) { return e.first == id; });
  });
}

bool enabled() { return bus().enabled.load(std::memory_order_relaxed); }

void publish(pb::Event& event) {
  Bus& b = bus();
  b.published.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const Subscribers> targets;
  {
    std::lock_guard lock(b.mu);
    targets = b.subscribers;
  }
  for (const auto& [id, s] : targets->plain) s(event);
  const size_t taking = targets->taking.size();
  for (size_t i = 0; i < taking; ++i) {
    if (i + 1 < taking) {
      pb::Event copy = event;
      targets->taking[i].second(std::move(copy));
    } else {
      targets->taking[i].second(std::move(event));
    }
  }
}

int64_t published_count() { return bus().published.load(std::memory_order_relaxed); }

int64_t now_ns() {
  using clock = std::chrono::steady_clock;
  static const clock::time_point epoch = clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - epoch).count();
}

}  // namespace lazyscope::events
