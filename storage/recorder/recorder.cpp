#include "recorder/recorder.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "db/history_file.h"
#include "db/run_liveness.h"
#include "recorder/batch_writer.h"
#include "recorder/pending_record.h"
#include "recorder/run_row.h"

namespace lazyscope::storage {
namespace {

// The writer waits this long after the first record of a batch for more to
// arrive: one transaction per ~50 ms instead of one per event.
constexpr auto kBatchDelay = std::chrono::milliseconds(50);
// ...unless this many records are already waiting (a burst of events).
constexpr size_t kLargeBatch = 4096;
// Refreshing the heartbeat on every batch would be one more row write per 50 ms
// for nothing: the reader only needs it within kHeartbeatStaleAfter.
constexpr int64_t kHeartbeatMinGapMs = 1000;

}  // namespace

struct Recorder::Impl {
  Impl(const std::string& path, const pb::RunInfo& info)
      : file(path, OpenMode::kRecord),
        run_id(insert_running_run(file, info)),
        writer(file, run_id),
        last_heartbeat_ms(unix_now_ms()),
        owner_pid(getpid()) {}

  // Appends with `mutex` held; true when the writer should be woken.
  bool push_locked(PendingRecord record);
  void enqueue(PendingRecord record);
  void flush();
  void stop_writer();
  void writer_loop();
  void write_batch(std::span<const PendingRecord> batch);
  void note_error(const std::string& message);

  // Set up by the constructor, then used by the writer thread only.
  HistoryFile file;
  const int64_t run_id;
  BatchWriter writer;
  int64_t last_heartbeat_ms;

  const pid_t owner_pid;  // a forked child must not touch the parent's thread or connection
  std::thread writer_thread;

  mutable std::mutex mutex;               // guards everything below
  std::condition_variable wake_writer;    // records waiting, a flush, or stop
  std::condition_variable batch_written;  // written_count advanced
  std::vector<PendingRecord> queue;
  uint64_t enqueued_count = 0;  // records ever enqueued
  uint64_t written_count = 0;   // of those, how many the writer has dealt with
  int flush_waiters = 0;        // a flush skips the batching delay
  int64_t next_output_seq = 0;
  bool finished = false;  // finish() called: later records are ignored
  bool stopping = false;  // the writer drains the queue and exits
  bool writer_exited = false;
  std::string first_error;
};

bool Recorder::Impl::push_locked(PendingRecord record) {
  if (auto* chunk = std::get_if<OutputChunk>(&record)) chunk->seq = next_output_seq++;
  queue.push_back(std::move(record));
  ++enqueued_count;
  // Waking the writer per event would cost a context switch each; it only
  // needs to know that a batch has begun, or has grown large.
  return queue.size() == 1 || queue.size() == kLargeBatch;
}

void Recorder::Impl::enqueue(PendingRecord record) {
  bool wake = false;
  {
    std::lock_guard lock(mutex);
    if (finished) return;
    wake = push_locked(std::move(record));
  }
  if (wake) wake_writer.notify_one();
}

void Recorder::Impl::flush() {
  std::unique_lock lock(mutex);
  const uint64_t target = enqueued_count;
  ++flush_waiters;
  wake_writer.notify_one();
  batch_written.wait(lock, [&] { return written_count >= target || writer_exited; });
  --flush_waiters;
}

void Recorder::Impl::stop_writer() {
  {
    std::lock_guard lock(mutex);
    stopping = true;
  }
  wake_writer.notify_one();
  if (writer_thread.joinable()) writer_thread.join();
}

void Recorder::Impl::writer_loop() {
  std::vector<PendingRecord> batch;
  std::unique_lock lock(mutex);
  for (;;) {
    // Idle: wake for records, or after a heartbeat interval to show we live.
    wake_writer.wait_for(lock, kHeartbeatInterval, [&] { return stopping || !queue.empty(); });
    const auto urgent = [&] { return stopping || flush_waiters > 0 || queue.size() >= kLargeBatch; };
    if (!queue.empty() && !urgent()) wake_writer.wait_for(lock, kBatchDelay, urgent);

    batch.swap(queue);
    const uint64_t batch_end = enqueued_count;
    const bool stop_after_batch = stopping;
    lock.unlock();
    write_batch(batch);
    batch.clear();
    lock.lock();

    written_count = batch_end;
    batch_written.notify_all();
    if (stop_after_batch && queue.empty()) break;
  }
  writer_exited = true;
  batch_written.notify_all();
}

void Recorder::Impl::write_batch(std::span<const PendingRecord> batch) {
  const int64_t now = unix_now_ms();
  const bool heartbeat_due = now - last_heartbeat_ms >= kHeartbeatMinGapMs;
  if (batch.empty() && !heartbeat_due) return;
  try {
    writer.write(batch, heartbeat_due ? std::optional<int64_t>(now) : std::nullopt);
    if (heartbeat_due) last_heartbeat_ms = now;
  } catch (const std::exception& error) {
    // The batch is lost, the training run is not: keep going with the next.
    note_error(error.what());
  }
}

void Recorder::Impl::note_error(const std::string& message) {
  std::lock_guard lock(mutex);
  if (!first_error.empty()) return;
  first_error = message;
  std::fprintf(stderr, "lazyscope: recording into the history failed, some events are lost: %s\n", message.c_str());
}

Recorder::Recorder(const std::string& path, const pb::RunInfo& info) : impl_(std::make_unique<Impl>(path, info)) {
  impl_->writer_thread = std::thread([impl = impl_.get()] { impl->writer_loop(); });
}

Recorder::~Recorder() {
  if (getpid() != impl_->owner_pid) {
    // A fork()ed child (a data-loader worker) has a copy of this object but
    // neither the writer thread nor a usable SQLite connection: leave both be.
    static_cast<void>(impl_.release());
    return;
  }
  impl_->stop_writer();
}

int64_t Recorder::run_id() const { return impl_->run_id; }

void Recorder::record(pb::Event event) { impl_->enqueue(std::move(event)); }

void Recorder::record_output(const std::string& stream, std::string text) {
  impl_->enqueue(OutputChunk{0, stream, std::move(text)});  // seq is assigned in arrival order
}

void Recorder::flush() { impl_->flush(); }

void Recorder::finish(pb::RunStatus status, int exit_code, const std::string& error, const std::string& traceback) {
  Impl& impl = *impl_;
  if (getpid() != impl.owner_pid) return;
  {
    std::lock_guard lock(impl.mutex);
    if (impl.finished) return;
    impl.push_locked(RunEnd{status, exit_code, error, traceback, unix_now_ms()});
    impl.finished = true;
  }
  // Stopping drains the queue, the run's end included, before the thread exits.
  impl.stop_writer();
}

std::string Recorder::first_write_error() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->first_error;
}

}  // namespace lazyscope::storage
