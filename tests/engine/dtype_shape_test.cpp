#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/buffer.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "ir/attrs.h"
#include "ir/op_table.h"

namespace lazyscope {
namespace {

// Buffers are aligned by hand (core/buffer.cpp): every size, small and past
// malloc's mmap threshold, is 64-byte aligned, holds its bytes apart from
// its neighbours' and is freed whole (ASan/valgrind would flag a bad free).
TEST(Buffer, SixtyFourByteAlignedAndDistinct) {
  std::vector<BufferPtr> live;
  std::vector<unsigned char> fill;
  for (int64_t n : {1, 3, 15, 16, 17, 1000, 50192, 300000}) {
    for (int rep = 0; rep < 3; ++rep) {
      BufferPtr b = Buffer::allocate(DType::kFloat32, {n});
      ASSERT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u) << n;
      ASSERT_EQ(b->bytes(), static_cast<size_t>(n) * 4);
      fill.push_back(static_cast<unsigned char>(live.size() + 1));
      std::memset(b->data(), fill.back(), b->bytes());
      live.push_back(b);
    }
  }
  for (size_t i = 0; i < live.size(); ++i) {  // no neighbour (or the stored pointer) wrote over a byte
    const auto* bytes = static_cast<const unsigned char*>(live[i]->data());
    for (size_t j = 0; j < live[i]->bytes(); ++j) ASSERT_EQ(bytes[j], fill[i]) << i << " " << j;
  }
  EXPECT_EQ(Buffer::allocate(DType::kFloat32, {0})->data(), nullptr);
}

TEST(DType, PromotionFollowsPyTorch) {
  // Expected values from torch.promote_types.
  EXPECT_EQ(promote_types(DType::kInt64, DType::kFloat32), DType::kFloat32);
  EXPECT_EQ(promote_types(DType::kFloat32, DType::kFloat64), DType::kFloat64);
  EXPECT_EQ(promote_types(DType::kBool, DType::kUInt8), DType::kUInt8);
  EXPECT_EQ(promote_types(DType::kInt32, DType::kInt64), DType::kInt64);
  EXPECT_EQ(promote_types(DType::kFloat16, DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(promote_types(DType::kBFloat16, DType::kFloat32), DType::kFloat32);
  EXPECT_EQ(promote_types(DType::kUInt8, DType::kFloat16), DType::kFloat16);
}

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto t = static_cast<DType>(i);
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  }
  EXPECT_EQ(parse_dtype("torch.float"), DType::kFloat32);
  EXPECT_THROW(parse_dtype("complex64"), EngineError);
}

TEST(Shape, Broadcasting) {
  EXPECT_EQ(broadcast_shapes({3, 1}, {1, 4}, "add"), (Shape{3, 4}));
  EXPECT_EQ(broadcast_shapes({5, 3, 4}, {4}, "add"), (Shape{5, 3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {2, 2}, "add"), (Shape{2, 2}));
  try {
    broadcast_shapes({3, 2}, {4, 2}, "add");
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 2] and [4, 2]"), std::string::npos) << e.what();
  }
}

TEST(DTypeOpTable, EveryOpHasARow) {
  for (int i = 0; i < static_cast<int>(OpKind::kNumOps); ++i) {
    const OpInfo& info = op_info(static_cast<OpKind>(i));
    ASSERT_NE(info.name, nullptr) << "op " << i << " has no row in the op table";
    EXPECT_NE(info.infer, nullptr) << info.name;
  }
  EXPECT_EQ(op_name(OpKind::kMatmul), "matmul");
  EXPECT_EQ(op_name(OpKind::kAll), "all");
}

TEST(DTypeOpTable, EveryOpHasACategoryForTheWorkbench) {
  for (int i = 0; i < static_cast<int>(OpKind::kNumOps); ++i) {
    const auto op = static_cast<OpKind>(i);
    EXPECT_NE(op_category(op), OpCategory::kOther) << op_name(op) << " has no category";
  }
  EXPECT_EQ(op_category(OpKind::kAdd), OpCategory::kElementwise);
  EXPECT_EQ(op_category(OpKind::kFloorDivide), OpCategory::kElementwise);
  EXPECT_EQ(op_category(OpKind::kConv2dBackwardWeight), OpCategory::kMatmulConv);
  EXPECT_EQ(op_category(OpKind::kMaxPool2d), OpCategory::kMatmulConv);
  EXPECT_EQ(op_category(OpKind::kLogSoftmax), OpCategory::kReduction);
  EXPECT_EQ(op_category(OpKind::kPermute), OpCategory::kLayout);
  EXPECT_EQ(op_category(OpKind::kDeviceData), OpCategory::kData);
  EXPECT_EQ(op_category(OpKind::kScatterAdd), OpCategory::kIndexing);
  EXPECT_EQ(op_category(OpKind::kAllReduce), OpCategory::kCollective);
}

TEST(Device, ParsesNamesAndRefusesUnknownOnes) {
  EXPECT_EQ(parse_device("cpu"), (Device{DeviceKind::kCpu, 0}));
  EXPECT_EQ(parse_device("lazy:0"), (Device{DeviceKind::kLazy, 0}));
  EXPECT_EQ(parse_device("xla"), (Device{DeviceKind::kLazy, 0}));
  EXPECT_EQ(parse_device("lazy:0").str(), "lazy:0");
  EXPECT_THROW(parse_device("cuda:0"), EngineError);
  EXPECT_THROW(parse_device("lazy:99"), EngineError);
  EXPECT_THROW(parse_device("lazy:x"), EngineError);
}

// Equality agrees with the hash: a double attribute by its bits.
TEST(Attrs, EqualityAgreesWithTheHashOnSignedZerosAndNaN) {
  const Attrs pos{{"min", 0.0}}, neg{{"min", -0.0}};
  EXPECT_FALSE(pos == neg);
  EXPECT_NE(pos.hash(), neg.hash());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Attrs a{{"slope", nan}}, b{{"slope", nan}};
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_TRUE((Attrs{{"dims", std::vector<int64_t>{0, 2}}, {"keepdim", true}} ==
               Attrs{{"dims", std::vector<int64_t>{0, 2}}, {"keepdim", true}}));
  EXPECT_FALSE((Attrs{{"dim", int64_t{1}}} == Attrs{{"dim", 1.0}}));  // another type, same number
}

}  // namespace
}  // namespace lazyscope
