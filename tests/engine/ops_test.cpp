// Every op against a plain-loop reference written in the test, on the eager
// cpu device and on lazy:0.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "tensor/ops.h"
#include "test_util.h"

namespace lazyscope {
namespace {

using testing::make;
using testing::values;

class OpsOnDevice : public ::testing::TestWithParam<Device> {};

TEST_P(OpsOnDevice, AddBroadcastsRowAgainstColumn) {
  Tensor a = make({1, 2, 3}, {3, 1}, GetParam());
  Tensor b = make({10, 20}, {1, 2}, GetParam());
  EXPECT_EQ(values(ops::add(a, b)), (std::vector<float>{11, 21, 12, 22, 13, 23}));
}

TEST_P(OpsOnDevice, MulByScalarInput) {
  Tensor a = make({1, -2, 3, -4}, {2, 2}, GetParam());
  Tensor s = ops::scalar(0.5, DType::kFloat32, GetParam());
  EXPECT_EQ(values(ops::mul(a, s)), (std::vector<float>{0.5f, -1, 1.5f, -2}));
}

TEST_P(OpsOnDevice, MatmulMatchesLoopReference) {
  const int m = 5, k = 7, n = 3;
  std::vector<float> av(m * k), bv(k * n), expected(m * n, 0);
  for (int i = 0; i < m * k; ++i) av[i] = static_cast<float>((i * 37 % 11) - 5) / 4;
  for (int i = 0; i < k * n; ++i) bv[i] = static_cast<float>((i * 13 % 7) - 3) / 2;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) expected[i * n + j] += av[i * k + p] * bv[p * n + j];
  auto got = values(ops::matmul(make(av, {m, k}, GetParam()), make(bv, {k, n}, GetParam())));
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-4) << i;
}

TEST_P(OpsOnDevice, SubBroadcastsAndTransposeSwapsDims) {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, GetParam());
  EXPECT_EQ(values(ops::sub(a, make({1, 1, 1}, {3}, GetParam()))), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  Tensor at = ops::t(a);
  EXPECT_EQ(at.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(at), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values(ops::t(make({1, 2}, {2}, GetParam()))), (std::vector<float>{1, 2}));  // 1-D: itself
  EXPECT_THROW(ops::t(make({1, 2}, {1, 1, 2}, GetParam())), ShapeError);
}

TEST_P(OpsOnDevice, ReluClampsNegatives) {
  EXPECT_EQ(values(ops::relu(make({-1, 0, 2, -3}, {4}, GetParam()))), (std::vector<float>{0, 0, 2, 0}));
}

TEST_P(OpsOnDevice, SumOverAllAndOverDims) {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, GetParam());
  EXPECT_EQ(values(ops::sum(a)), (std::vector<float>{21}));
  EXPECT_EQ(values(ops::sum(a, {0})), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(values(ops::sum(a, {-1})), (std::vector<float>{6, 15}));
  Tensor kept = ops::sum(a, {1}, /*keepdim=*/true);
  EXPECT_EQ(kept.shape(), (Shape{2, 1}));
  EXPECT_EQ(values(kept), (std::vector<float>{6, 15}));
}

TEST_P(OpsOnDevice, ShapeErrorRaisedAtTheCall) {
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, GetParam());
  EXPECT_THROW(ops::matmul(a, a), ShapeError);
  EXPECT_THROW(ops::add(a, make({1, 2}, {2}, GetParam())), ShapeError);
  EXPECT_THROW(ops::sum(a, {2}), ShapeError);
}

TEST_P(OpsOnDevice, WhereBroadcastsThreeOperands) {
  Tensor cond = ops::gt(make({1, -1, 2}, {3, 1}, GetParam()), ops::wrapped_int(0, GetParam()));
  EXPECT_EQ(cond.dtype(), DType::kBool);
  Tensor out = ops::where(cond, make({10, 20}, {2}, GetParam()), make({-1}, {1}, GetParam()));
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(out), (std::vector<float>{10, 20, -1, -1, 10, 20}));
}

TEST_P(OpsOnDevice, UnaryMathAgainstLibm) {
  const std::vector<float> x = {-1.5f, -0.25f, 0.0f, 0.75f, 2.0f};
  Tensor t = make(x, {5}, GetParam());
  const auto check = [&](const Tensor& got, float (*ref)(float)) {
    const auto v = values(got);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(v[i], ref(x[i]), 1e-6f * (1 + std::fabs(ref(x[i])))) << i;
  };
  check(ops::exp(t), [](float v) { return std::exp(v); });
  check(ops::tanh(t), [](float v) { return std::tanh(v); });
  check(ops::sigmoid(t), [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
  check(ops::gelu(t), [](float v) { return 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f))); });
  check(ops::leaky_relu(t, 0.1), [](float v) { return v > 0 ? v : 0.1f * v; });
  check(ops::clamp(t, -0.5, std::nullopt), [](float v) { return std::max(v, -0.5f); });
}

TEST_P(OpsOnDevice, IntegerPowerToANegativeExponentIsRefused) {
  Tensor i = ops::cast(make({2, 3}, {2}, GetParam()), DType::kInt64);
  EXPECT_THROW(values(ops::cast(ops::pow(i, ops::wrapped_int(-1, GetParam())), DType::kFloat32)), EngineError);
}

TEST_P(OpsOnDevice, ReductionsOverNonAdjacentDims) {
  // x[i][j][k] = 100 i + 10 j + k, shape [2, 3, 2]; reduce dims 0 and 2.
  std::vector<float> x;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) x.push_back(static_cast<float>(100 * i + 10 * j + k));
  Tensor a = make(x, {2, 3, 2}, GetParam());
  EXPECT_EQ(values(ops::sum(a, {0, -1})), (std::vector<float>{202, 242, 282}));
  EXPECT_EQ(values(ops::mean(a, {2, 0}, true)), (std::vector<float>{50.5f, 60.5f, 70.5f}));
  EXPECT_EQ(ops::mean(a, {2, 0}, true).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(values(ops::amax(a, {0, 2})), (std::vector<float>{101, 111, 121}));
  // Each output reduces {v, v+1, v+100, v+101}: deviations from the mean are +-50.5 and +-49.5.
  const float ss = 2 * 50.5f * 50.5f + 2 * 49.5f * 49.5f;
  EXPECT_FLOAT_EQ(values(ops::var(a, {0, 2}))[0], ss / 3);
  EXPECT_FLOAT_EQ(values(ops::var(a, {0, 2}, 0.0))[1], ss / 4);
  Tensor ties = make({3, 1, 3, 2}, {4}, GetParam());
  BufferPtr idx = ops::argmax(ties).host_buffer(pb::SYNC_CAUSE_TO_HOST);
  EXPECT_EQ(idx->dtype(), DType::kInt64);
  EXPECT_EQ(*idx->as<int64_t>(), 0);  // the first of the tied maxima
}

TEST_P(OpsOnDevice, PermuteExpandReshape) {
  // a[i][j][k] = 100 i + 10 j + k, shape [2, 3, 2].
  std::vector<float> x;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) x.push_back(static_cast<float>(100 * i + 10 * j + k));
  Tensor a = make(x, {2, 3, 2}, GetParam());
  Tensor p = ops::permute(a, {2, 0, 1});  // p[k][i][j] = a[i][j][k]
  EXPECT_EQ(p.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(values(p), (std::vector<float>{0, 10, 20, 100, 110, 120, 1, 11, 21, 101, 111, 121}));
  Tensor e = ops::expand(make({1, 2}, {2, 1}, GetParam()), {2, 2, 3});
  EXPECT_EQ(values(e), (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  Tensor r = ops::reshape(a, {-1, 4});
  EXPECT_EQ(r.shape(), (Shape{3, 4}));
  EXPECT_EQ(values(r), x);
  EXPECT_THROW(ops::reshape(a, {5, -1}), ShapeError);
  EXPECT_THROW(ops::expand(a, {2, 4, 2}), ShapeError);
  EXPECT_EQ(ops::flatten(a, 1).shape(), (Shape{2, 6}));
  EXPECT_EQ(ops::squeeze(ops::unsqueeze(a, -1)).shape(), (Shape{2, 3, 2}));
}

TEST_P(OpsOnDevice, BatchedMatmulBroadcastsBatchDims) {
  // a: [2, 1, 2] batches of [1, 2]; b: [3, 2, 1] batches of [2, 1] -> [2, 3, 1, 1].
  Tensor a = make({1, 2, 3, 4}, {2, 1, 1, 2}, GetParam());
  Tensor b = make({1, 1, 0, 1, 2, -1}, {3, 2, 1}, GetParam());
  Tensor out = ops::matmul(a, b);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 1, 1}));
  EXPECT_EQ(values(out), (std::vector<float>{3, 2, 0, 7, 4, 2}));
  Tensor v = make({1, 2}, {2}, GetParam());
  EXPECT_EQ(ops::matmul(v, v).shape(), Shape{});
  EXPECT_EQ(values(ops::matmul(v, v)), (std::vector<float>{5}));
  EXPECT_EQ(values(ops::matmul(make({1, 2, 3, 4}, {2, 2}, GetParam()), v)), (std::vector<float>{5, 11}));
}

TEST_P(OpsOnDevice, SoftmaxRowsSumToOneAndLogSoftmaxIsItsLog) {
  Tensor a = make({1000, 1001, 1002, -3, 0, 3}, {2, 3}, GetParam());
  const auto p = values(ops::softmax(a, 1));
  const auto lp = values(ops::log_softmax(a, -1));
  for (int r = 0; r < 2; ++r) EXPECT_NEAR(p[r * 3] + p[r * 3 + 1] + p[r * 3 + 2], 1.0f, 1e-6f);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(std::log(p[i]), lp[i], 1e-5f);
}

TEST_P(OpsOnDevice, CatOfSplitPiecesIsTheInput) {
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i);
  Tensor a = make(v, {3, 4}, GetParam());
  auto pieces = ops::split(a, std::vector<int64_t>{1, 3}, 1);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].shape(), (Shape{3, 1}));
  EXPECT_EQ(values(ops::cat({pieces[0], pieces[1]}, 1)), v);
  EXPECT_EQ(values(ops::slice(a, {0, 1}, {3, 4}, {2, 2})), (std::vector<float>{1, 3, 9, 11}));
}

TEST_P(OpsOnDevice, NllLossPicksTheTargetsLogProbability) {
  Tensor logp = make({-1, -2, -3, -4, -5, -6}, {2, 3}, GetParam());
  Tensor target = ops::cast(make({2, 0}, {2}, GetParam()), DType::kInt64);
  EXPECT_EQ(values(ops::nll_loss(logp, target, ops::Reduction::kNone)), (std::vector<float>{3, 4}));
  EXPECT_EQ(values(ops::nll_loss(logp, target, ops::Reduction::kMean)), (std::vector<float>{3.5f}));
  EXPECT_EQ(values(ops::nll_loss(logp, target, ops::Reduction::kSum, /*ignore_index=*/2)), (std::vector<float>{4}));
}

TEST_P(OpsOnDevice, OutOfRangeTargetIsAnIndexErrorNamingTheValue) {
  Tensor logp = make({-1, -2, -3, -4, -5, -6}, {2, 3}, GetParam());
  Tensor target = ops::cast(make({1, 3}, {2}, GetParam()), DType::kInt64);
  try {
    values(ops::nll_loss(logp, target));  // raised at the call on cpu, at the sync on lazy
    FAIL() << "expected an IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("nll_loss: target 3 is out of bounds for 3 classes"), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, OpsOnDevice,
                         ::testing::Values(Device{DeviceKind::kCpu, 0}, Device{DeviceKind::kLazy, 0}),
                         [](const auto& param_info) {
                           return param_info.param.is_lazy() ? std::string("lazy") : std::string("cpu");
                         });

TEST(Ops, MixingDevicesNamesBoth) {
  Tensor a = make({1}, {1});
  Tensor b = make({1}, {1}, testing::lazy0());
  try {
    ops::add(a, b);
    FAIL() << "expected DeviceMismatchError";
  } catch (const DeviceMismatchError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
    EXPECT_NE(msg.find("lazy:0"), std::string::npos) << msg;
  }
}

TEST(Ops, ALazyReshapeIsANodeOverItsInput) {
  Tensor a = make({1, 2, 3, 4}, {2, 2}, testing::lazy0());
  Tensor r = ops::reshape(a, {4});
  ASSERT_TRUE(r.impl()->pending());
  EXPECT_EQ(r.impl()->ir->op(), OpKind::kReshape);
  EXPECT_EQ(r.impl()->ir->operands()[0], a.impl()->ir);
  EXPECT_EQ(ops::reshape(a, {2, 2}).impl(), a.impl());  // the same shape: the same tensor
}

TEST(Ops, LazyOpsDoNotRunUntilNeeded) {
  Tensor a = make({1, 2}, {2}, testing::lazy0());
  Tensor b = ops::add(a, a);
  EXPECT_TRUE(b.impl()->pending());
  EXPECT_EQ(b.impl()->buffer, nullptr);
  EXPECT_EQ(values(b), (std::vector<float>{2, 4}));
  EXPECT_FALSE(b.impl()->pending());
}

}  // namespace
}  // namespace lazyscope
