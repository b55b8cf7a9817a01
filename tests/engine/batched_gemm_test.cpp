// Batches of small float products with B transposed (an attention's q k^T
// and do v^T) run as oneDNN matmul primitives over parts of the batch
// (kernels_layout.cpp, batched_dnnl; gemm_dnnl.cpp). Each case against a
// float64 sum written out (an oracle independent of both libraries), with
// the oneDNN path on and off, on two threads and one: odd sizes, uneven
// parts, heads read and written through strides, an epilogue, NaN and
// infinity, and a batch too short to split.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/gemm_dnnl.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/onednn.h"
#include "backend/cpu/thread_pool.h"
#include "core/buffer.h"

namespace lazyscope {
namespace {

// [B, H, rows, cols] as stored: heads of a [B, rows, H, cols] value read
// through strides when `split`, else contiguous.
cpu::MatrixLayout heads(int64_t b, int64_t h, int64_t rows, int64_t cols, bool split) {
  if (split) return {{b, h, rows, cols}, {rows * h * cols, cols, h * cols, 1}};
  return {{b, h, rows, cols}, {h * rows * cols, rows * cols, cols, 1}};
}

int64_t at(const cpu::MatrixLayout& l, int64_t bi, int64_t hi, int64_t r, int64_t c) {
  return bi * l.strides[0] + hi * l.strides[1] + r * l.strides[2] + c * l.strides[3];
}

struct Case {
  int64_t b, h, m, k, n;
  bool a_split, b_split, out_split;
};

// out = a b^T per (batch, head); a stored [m, k], b stored [n, k].
void check(const Case& c, bool with_epilogue, bool with_nan) {
  const auto la = heads(c.b, c.h, c.m, c.k, c.a_split), lb = heads(c.b, c.h, c.n, c.k, c.b_split);
  const auto lo = heads(c.b, c.h, c.m, c.n, c.out_split);
  auto a = Buffer::allocate(DType::kFloat32, {c.b * c.h * c.m * c.k});
  auto b = Buffer::allocate(DType::kFloat32, {c.b * c.h * c.n * c.k});
  auto out = Buffer::allocate(DType::kFloat32, {c.b * c.h * c.m * c.n});
  std::mt19937 rng(static_cast<unsigned>(c.b * 131 + c.m * 7 + c.n));
  std::normal_distribution<float> dist;
  for (auto* buf : {a.get(), b.get()}) {
    for (int64_t i = 0; i < buf->numel(); ++i) buf->as<float>()[i] = dist(rng);
  }
  if (with_nan) {
    a->as<float>()[at(la, 0, 0, 1, 0)] = std::numeric_limits<float>::quiet_NaN();             // row 1 of product (0, 0)
    b->as<float>()[at(lb, c.b - 1, c.h - 1, 0, 0)] = std::numeric_limits<float>::infinity();  // column 0 of the last
  }
  std::fill(out->as<float>(), out->as<float>() + out->numel(), -7.0f);
  std::vector<int> seen(static_cast<size_t>(out->numel()), 0);
  auto add_one = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out->as<float>()[i] += 1.0f;
      ++seen[static_cast<size_t>(i)];
    }
  };
  const cpu::Epilogue epilogue(add_one);
  cpu::matmul_strided(*a, la, false, *b, lb, true, *out, lo, with_epilogue ? &epilogue : nullptr);
  for (int64_t bi = 0; bi < c.b; ++bi) {
    for (int64_t hi = 0; hi < c.h; ++hi) {
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          double want = 0;
          for (int64_t p = 0; p < c.k; ++p) {
            want += static_cast<double>(a->as<float>()[at(la, bi, hi, i, p)]) * b->as<float>()[at(lb, bi, hi, j, p)];
          }
          if (with_epilogue) want += 1.0;
          const float got = out->as<float>()[at(lo, bi, hi, i, j)];
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << bi << " " << hi << " " << i << " " << j;
          } else if (std::isinf(want)) {
            EXPECT_EQ(got, static_cast<float>(want)) << bi << " " << hi << " " << i << " " << j;
          } else {
            ASSERT_NEAR(got, want, 1e-4 * (1 + std::abs(want))) << bi << " " << hi << " " << i << " " << j;
          }
        }
      }
    }
  }
  if (with_epilogue) {
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "element " << i;
  }
}

const Case kCases[] = {
    {16, 4, 64, 64, 64, true, true, false},  // the transformer's q k^T (its do v^T: the same layouts)
    {5, 3, 7, 9, 11, true, true, false},     // odd sizes; 5 sequences in uneven parts
    {3, 2, 13, 5, 6, false, false, false},   // contiguous heads
    {4, 3, 8, 16, 5, true, false, true},     // the product written into heads through strides
    {1, 4, 9, 8, 7, true, true, false},      // one sequence: fewer than the threads, OpenBLAS's calls
};

class BatchedGemm : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    previous_threads_ = cpu::set_active_threads(GetParam());
    previous_dnnl_ = cpu::set_gemm_batched_dnnl(true);
  }
  void TearDown() override {
    cpu::set_active_threads(previous_threads_);
    cpu::set_gemm_batched_dnnl(previous_dnnl_);
  }
  int previous_threads_ = 1;
  bool previous_dnnl_ = true;
};

TEST_P(BatchedGemm, MatchesAFloat64SumOnAndOff) {
  for (bool dnnl : {true, false}) {
    cpu::set_gemm_batched_dnnl(dnnl);
    for (const Case& c : kCases) {
      SCOPED_TRACE(testing::Message() << (dnnl ? "oneDNN " : "OpenBLAS ") << c.b << "x" << c.h << " " << c.m << " "
                                      << c.k << " " << c.n);
      check(c, /*with_epilogue=*/false, /*with_nan=*/false);
    }
  }
}

TEST_P(BatchedGemm, RunsTheEpilogueOnceOnEveryElement) {
  for (const Case& c : kCases) {
    if (c.out_split) continue;  // an epilogue needs a contiguous product
    SCOPED_TRACE(testing::Message() << c.b << "x" << c.h << " " << c.m << " " << c.k << " " << c.n);
    check(c, /*with_epilogue=*/true, /*with_nan=*/false);
  }
}

TEST_P(BatchedGemm, PropagatesNanAndInfinity) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(testing::Message() << c.b << "x" << c.h << " " << c.m << " " << c.k << " " << c.n);
    check(c, /*with_epilogue=*/false, /*with_nan=*/true);
  }
}

TEST_P(BatchedGemm, TakesTheOneDnnPathWhereItRunsAvx512) {
  if (!cpu::dnnl_gemm_avx512()) GTEST_SKIP() << "oneDNN does not run AVX-512 kernels here: OpenBLAS keeps every call";
  // A geometry no other test (nor the other thread count) makes: its
  // primitives are created on the first call (one per part size) and found
  // in the cache on the second.
  const Case c{6, 2, 10, 12, 13 + 2 * GetParam(), true, true, false};
  const int64_t before = cpu::onednn::primitives_created();
  check(c, false, false);
  const int64_t made = cpu::onednn::primitives_created() - before;
  EXPECT_GE(made, 1);
  check(c, false, false);
  EXPECT_EQ(cpu::onednn::primitives_created() - before, made);
  cpu::set_gemm_batched_dnnl(false);
  const Case d{6, 2, 10, 12, 20 + 2 * GetParam(), true, true, false};
  check(d, false, false);
  EXPECT_EQ(cpu::onednn::primitives_created() - before, made);
}

INSTANTIATE_TEST_SUITE_P(Threads, BatchedGemm, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "_threads"; });

}  // namespace
}  // namespace lazyscope
