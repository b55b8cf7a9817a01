// dtypes: PyTorch's result_type over tensors, 0-d tensors and Python numbers,
// the cast kernels (16-bit float rounding included) and the casts ops.cpp
// inserts for mixed operands, on both devices.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "tensor/ops.h"
#include "test_util.h"

namespace lazyscope {
namespace {

using testing::make;
using Tier = PromotionTier;

// Expected values from torch.result_type.
TEST(DTypeResultType, WrappedNumbersAndZeroDimTensorsPromoteOnlyAcrossCategories) {
  const auto dim = [](DType t) { return PromotionOperand{t, Tier::kDimensioned}; };
  const auto zero = [](DType t) { return PromotionOperand{t, Tier::kZeroDim}; };
  const auto num = [](DType t) { return PromotionOperand{t, Tier::kWrappedNumber}; };
  EXPECT_EQ(result_type({dim(DType::kInt32), num(DType::kInt64)}), DType::kInt32);      // int32 + 5
  EXPECT_EQ(result_type({dim(DType::kInt64), num(DType::kFloat64)}), DType::kFloat32);  // int64 * 2.5
  EXPECT_EQ(result_type({dim(DType::kFloat64), num(DType::kFloat64)}), DType::kFloat64);
  EXPECT_EQ(result_type({dim(DType::kFloat16), num(DType::kFloat64)}), DType::kFloat16);
  EXPECT_EQ(result_type({dim(DType::kBool), num(DType::kInt64)}), DType::kInt64);  // bool + 1
  EXPECT_EQ(result_type({dim(DType::kBool), num(DType::kBool)}), DType::kBool);
  EXPECT_EQ(result_type({dim(DType::kUInt8), num(DType::kFloat64)}), DType::kFloat32);
  EXPECT_EQ(result_type({dim(DType::kInt32), zero(DType::kInt64)}), DType::kInt32);
  EXPECT_EQ(result_type({dim(DType::kFloat32), zero(DType::kFloat64)}), DType::kFloat32);
  EXPECT_EQ(result_type({dim(DType::kInt32), zero(DType::kFloat64)}), DType::kFloat64);
  EXPECT_EQ(result_type({zero(DType::kInt32), num(DType::kFloat64)}), DType::kFloat32);
  EXPECT_EQ(result_type({zero(DType::kInt32), zero(DType::kInt64)}), DType::kInt64);
  EXPECT_EQ(result_type({dim(DType::kInt32), dim(DType::kFloat16)}), DType::kFloat16);
  EXPECT_EQ(result_type({dim(DType::kUInt8), dim(DType::kInt32), num(DType::kFloat64)}), DType::kFloat32);
}

float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(DTypeCast, BFloat16RoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa.
  EXPECT_EQ(cpu::float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(cpu::float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  // Just above a tie rounds up.
  EXPECT_EQ(cpu::float_to_bfloat16(bits_to_float(0x3f808001u)), 0x3f81);
  EXPECT_EQ(cpu::float_to_bfloat16(-2.0f), 0xc000);
  EXPECT_EQ(cpu::float_to_bfloat16(bits_to_float(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_TRUE(std::isnan(cpu::bfloat16_to_float(cpu::float_to_bfloat16(NAN))));
  EXPECT_EQ(cpu::bfloat16_to_float(0x3f81), 1.0f + std::ldexp(1.0f, -7));
}

TEST(DTypeCast, HalfRoundsToNearestEvenWithSubnormalsAndOverflow) {
  EXPECT_EQ(cpu::float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(cpu::float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(cpu::float_to_half(65504.0f), 0x7bff);                          // largest half
  EXPECT_EQ(cpu::float_to_half(65519.0f), 0x7bff);                          // below the midpoint to 2^16
  EXPECT_EQ(cpu::float_to_half(65520.0f), 0x7c00);                          // the midpoint: ties to even = inf
  EXPECT_EQ(cpu::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie, to even
  EXPECT_EQ(cpu::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, to even
  EXPECT_EQ(cpu::float_to_half(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(cpu::float_to_half(std::ldexp(1.0f, -25)), 0x0000);             // tie to even: zero
  EXPECT_EQ(cpu::float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(cpu::float_to_half(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(cpu::half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(cpu::half_to_float(0x8400), -std::ldexp(1.0f, -14));
  EXPECT_EQ(cpu::half_to_float(0x7c00), INFINITY);
  EXPECT_TRUE(std::isnan(cpu::half_to_float(cpu::float_to_half(NAN))));
}

template <typename T> Tensor make_typed(const std::vector<T>& v, DType dtype, Shape shape, Device device) {
  BufferPtr b = Buffer::allocate(dtype, std::move(shape));
  std::memcpy(b->data(), v.data(), v.size() * sizeof(T));
  return Tensor::wrap(std::move(b), Device{}).to(device);
}

template <typename T> std::vector<T> typed_values(const Tensor& t) {
  BufferPtr b = t.host_buffer(pb::SYNC_CAUSE_TO_HOST);
  return {b->as<T>(), b->as<T>() + b->numel()};
}

class OpsPromotion : public ::testing::TestWithParam<Device> {};

TEST_P(OpsPromotion, CastsBetweenIntegerFloatAndBool) {
  Tensor f = make({-2.75f, -0.5f, 0.0f, 1.5f, 3e9f}, {5}, GetParam());
  EXPECT_EQ(typed_values<int32_t>(ops::cast(f, DType::kInt32)).front(), -2);  // truncation toward zero
  EXPECT_EQ(typed_values<int64_t>(ops::cast(f, DType::kInt64)), (std::vector<int64_t>{-2, 0, 0, 1, 3000000000}));
  EXPECT_EQ(typed_values<uint8_t>(ops::cast(f, DType::kBool)), (std::vector<uint8_t>{1, 1, 0, 1, 1}));
  Tensor i = make_typed<int64_t>({-3, 0, 7}, DType::kInt64, {3}, GetParam());
  EXPECT_EQ(typed_values<double>(ops::cast(i, DType::kFloat64)), (std::vector<double>{-3, 0, 7}));
  EXPECT_EQ(typed_values<uint8_t>(ops::cast(i, DType::kBool)), (std::vector<uint8_t>{1, 0, 1}));
  Tensor h = ops::cast(make({1.0f + std::ldexp(1.0f, -8), 1e-8f}, {2}, GetParam()), DType::kBFloat16);
  EXPECT_EQ(h.dtype(), DType::kBFloat16);
  EXPECT_EQ(testing::values(ops::cast(h, DType::kFloat32)), (std::vector<float>{1.0f, bits_to_float(0x322c0000u)}));
}

TEST_P(OpsPromotion, MixedTensorOperandsPromote) {
  Tensor i = make_typed<int32_t>({1, 2, 3}, DType::kInt32, {3}, GetParam());
  Tensor f = make({0.5f, 0.25f, 0.125f}, {3}, GetParam());
  Tensor sum = ops::add(i, f);
  EXPECT_EQ(sum.dtype(), DType::kFloat32);
  EXPECT_EQ(testing::values(sum), (std::vector<float>{1.5f, 2.25f, 3.125f}));
  Tensor l = make_typed<int64_t>({10, 20, 30}, DType::kInt64, {3}, GetParam());
  Tensor il = ops::mul(i, l);
  EXPECT_EQ(il.dtype(), DType::kInt64);
  EXPECT_EQ(typed_values<int64_t>(il), (std::vector<int64_t>{10, 40, 90}));
}

TEST_P(OpsPromotion, WrappedNumbersKeepTheTensorsTypeUnlessTheyBringFloat) {
  Tensor i = make_typed<int32_t>({1, 2, 3}, DType::kInt32, {3}, GetParam());
  Tensor plus = ops::add(i, ops::wrapped_int(5, GetParam()));
  EXPECT_EQ(plus.dtype(), DType::kInt32);
  EXPECT_EQ(typed_values<int32_t>(plus), (std::vector<int32_t>{6, 7, 8}));
  Tensor times = ops::mul(i, ops::wrapped_float(2.5, GetParam()));
  EXPECT_EQ(times.dtype(), DType::kFloat32);
  EXPECT_EQ(testing::values(times), (std::vector<float>{2.5f, 5.0f, 7.5f}));
  Tensor d = make_typed<double>({0.1, 0.2}, DType::kFloat64, {2}, GetParam());
  // The number keeps double precision when the tensor is float64.
  EXPECT_EQ(typed_values<double>(ops::mul(d, ops::wrapped_float(0.1, GetParam()))),
            (std::vector<double>{0.1 * 0.1, 0.2 * 0.1}));
}

INSTANTIATE_TEST_SUITE_P(Devices, OpsPromotion,
                         ::testing::Values(Device{DeviceKind::kCpu, 0}, Device{DeviceKind::kLazy, 0}),
                         [](const auto& p) { return p.param.is_lazy() ? std::string("lazy") : std::string("cpu"); });

TEST(OpsPromotionLazy, AWrappedNumberIsConvertedOnTheHostNotByACastNode) {
  Tensor i = make_typed<int32_t>({1, 2}, DType::kInt32, {2}, testing::lazy0());
  Tensor out = ops::mul(i, ops::wrapped_float(2.5, testing::lazy0()));
  // The number is a float32 graph input; only the int32 tensor gets a cast.
  ASSERT_EQ(out.impl()->ir->operands().size(), 2u);
  EXPECT_EQ(out.impl()->ir->operands()[0]->op(), OpKind::kCast);
  EXPECT_TRUE(out.impl()->ir->operands()[1]->is_leaf());
  EXPECT_EQ(out.impl()->ir->operands()[1]->dtype(), DType::kFloat32);
}

}  // namespace
}  // namespace lazyscope
