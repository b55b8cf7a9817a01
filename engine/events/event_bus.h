// The engine publishes what it does (compiles, executions, steps, ...) as
// protobuf events to whoever subscribed: the runner's recorder, tests. With
// no subscriber, enabled() is false and callers skip building the event.
#pragma once

#include <cstdint>
#include <functional>

#include "lazyscope/events.pb.h"

namespace lazyscope::events {

using Subscriber = std::function<void(const pb::Event&)>;
// A subscriber that keeps the event (the recorder queues it for its writer
// thread): it is handed the publisher's event to move from, instead of
// copying it on the training thread (issue 15).
using TakingSubscriber = std::function<void(pb::Event&&)>;

// Returns an id for unsubscribe(). Subscribers are called on the thread that
// emits the event and must be quick (the recorder only enqueues).
int subscribe(Subscriber subscriber);
int subscribe_taking(TakingSubscriber subscriber);
void unsubscribe(int id);
bool enabled();
// Calls every subscriber: the plain ones first, then the taking ones, the
// last of which gets `event` itself (the others a copy each). Callers
// publish a local they are done with: afterwards `event` is unspecified.
void publish(pb::Event& event);
// How many events were ever published, subscribers or not: lets a test prove
// that with no subscriber no path builds and publishes an event.
int64_t published_count();

// Nanoseconds on the steady clock since the engine's epoch (first call).
int64_t now_ns();

}  // namespace lazyscope::events
