// The pool's wake-up at a sync's start (thread_pool.cpp, wake_workers):
// sleeping workers wake and spin for the time asked, then sleep again; a
// call after no parallel region since the last one wakes nobody.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "backend/cpu/thread_pool.h"

namespace lazyscope {
namespace {

using std::chrono::milliseconds;

// Polls `done` every millisecond for up to `limit`: what the scheduler of a
// loaded machine may take to run a woken thread.
template <typename F> bool eventually(F done, milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

void run_a_region() {
  auto body = [](int, int) {};
  cpu::parallel_region(cpu::pool_size(), cpu::RegionBody(body));
}

TEST(ThreadPool, WokenWorkersSpinForTheTimeAskedThenSleepAgain) {
  const int workers = cpu::pool_size() - 1;
  if (workers < 1) GTEST_SKIP() << "a pool of one thread has no workers to wake";
  run_a_region();
  // After a region, ~100 us of spinning, then asleep.
  ASSERT_TRUE(eventually([&] { return cpu::sleeping_workers() == workers; }, milliseconds(10000)));
  cpu::wake_workers(300000);  // 300 ms
  EXPECT_TRUE(eventually([&] { return cpu::sleeping_workers() == 0; }, milliseconds(250)))
      << "no worker woke within 250 ms of wake_workers";
  // Back to sleep once the 300 ms are over: an idle process spins no core.
  EXPECT_TRUE(eventually([&] { return cpu::sleeping_workers() == workers; }, milliseconds(10000)));
}

TEST(ThreadPool, AWakeAfterNoParallelRegionWakesNobody) {
  const int workers = cpu::pool_size() - 1;
  if (workers < 1) GTEST_SKIP() << "a pool of one thread has no workers to wake";
  run_a_region();
  cpu::wake_workers(1000);  // takes the region's mark
  ASSERT_TRUE(eventually([&] { return cpu::sleeping_workers() == workers; }, milliseconds(10000)));
  // No region since that call (a program on one thread, a loop of small
  // syncs): the workers stay asleep.
  cpu::wake_workers(300000);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(cpu::sleeping_workers(), workers);
  // A region, then a wake: woken again.
  run_a_region();
  ASSERT_TRUE(eventually([&] { return cpu::sleeping_workers() == workers; }, milliseconds(10000)));
  cpu::wake_workers(300000);
  EXPECT_TRUE(eventually([&] { return cpu::sleeping_workers() == 0; }, milliseconds(250)));
  EXPECT_TRUE(eventually([&] { return cpu::sleeping_workers() == workers; }, milliseconds(10000)));
}

TEST(ThreadPool, ARegionRightAfterAWakeStillRunsEveryPart) {
  if (cpu::pool_size() < 2) GTEST_SKIP() << "one thread";
  run_a_region();
  for (int round = 0; round < 200; ++round) {
    cpu::wake_workers(round % 2 ? 0 : 200);
    std::atomic<int> parts{0};
    auto body = [&](int, int) { parts.fetch_add(1); };
    cpu::parallel_region(8, cpu::RegionBody(body));
    ASSERT_EQ(parts.load(), 8) << "round " << round;
  }
}

}  // namespace
}  // namespace lazyscope
