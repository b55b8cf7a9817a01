#include "query/step_median.h"

#include <gtest/gtest.h>

namespace lazyscope::storage {
namespace {

TEST(StepMedian, OddEvenAndEmpty) {
  EXPECT_DOUBLE_EQ(median_ms({}), 0.0);
  EXPECT_DOUBLE_EQ(median_ms({7'000'000}), 7.0);
  EXPECT_DOUBLE_EQ(median_ms({9'000'000, 1'000'000, 5'000'000}), 5.0);
  EXPECT_DOUBLE_EQ(median_ms({8'000'000, 2'000'000, 4'000'000, 6'000'000}), 5.0);
  EXPECT_DOUBLE_EQ(median_ms({3, 3, 3, 1'000'000'000}), 3e-6);
}

}  // namespace
}  // namespace lazyscope::storage
