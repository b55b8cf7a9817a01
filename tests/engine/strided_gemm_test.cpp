// matmul_strided (kernels_layout.cpp) given a layout whose leading dimension
// is shorter than its rows: BLAS would report it through xerbla (a printed
// line, or a Python error set from inside the engine when NumPy's xerbla is
// loaded) and leave the product unwritten. It must be refused by name.
#include <gtest/gtest.h>

#include <string>

#include "backend/cpu/kernels.h"
#include "core/buffer.h"
#include "core/error.h"

namespace lazyscope {
namespace {

TEST(StridedGemm, ALeadingDimensionShorterThanItsRowIsRefusedByName) {
  auto a = Buffer::allocate(DType::kFloat32, {2, 3, 4});
  auto b = Buffer::allocate(DType::kFloat32, {2, 4, 5});
  auto out = Buffer::allocate(DType::kFloat32, {2, 3, 5});
  for (auto* buf : {a.get(), b.get()}) {
    for (int64_t i = 0; i < buf->numel(); ++i) buf->as<float>()[i] = 1.0f;
  }
  // Rows of 4 one element apart: every address lies in a's buffer, but
  // lda = 1 < 4.
  const cpu::MatrixLayout la{{2, 3, 4}, {12, 1, 1}};
  const cpu::MatrixLayout lb{{2, 4, 5}, {20, 5, 1}};
  const cpu::MatrixLayout lo{{2, 3, 5}, {15, 5, 1}};
  try {
    cpu::matmul_strided(*a, la, false, *b, lb, false, *out, lo);
    FAIL() << "a leading dimension of 1 for rows of 4 was accepted";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("leading dimensions 1, 5, 5 shorter than the rows of a 3x4x5 product"),
              std::string::npos)
        << e.what();
  }
}

TEST(StridedGemm, ALegalLayoutStillMultiplies) {
  auto a = Buffer::allocate(DType::kFloat32, {2, 3, 4});
  auto b = Buffer::allocate(DType::kFloat32, {2, 4, 5});
  auto out = Buffer::allocate(DType::kFloat32, {2, 3, 5});
  for (int64_t i = 0; i < a->numel(); ++i) a->as<float>()[i] = static_cast<float>(i % 5);
  for (int64_t i = 0; i < b->numel(); ++i) b->as<float>()[i] = static_cast<float>(i % 3) - 1.0f;
  cpu::matmul_strided(*a, {{2, 3, 4}, {12, 4, 1}}, false, *b, {{2, 4, 5}, {20, 5, 1}}, false, *out,
                      {{2, 3, 5}, {15, 5, 1}});
  for (int64_t batch = 0; batch < 2; ++batch) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        double want = 0;  // the sum written out: an oracle independent of BLAS
        for (int64_t p = 0; p < 4; ++p) {
          want += static_cast<double>(a->as<float>()[batch * 12 + i * 4 + p]) * b->as<float>()[batch * 20 + p * 5 + j];
        }
        EXPECT_FLOAT_EQ(out->as<float>()[batch * 15 + i * 5 + j], static_cast<float>(want));
      }
    }
  }
}

}  // namespace
}  // namespace lazyscope
