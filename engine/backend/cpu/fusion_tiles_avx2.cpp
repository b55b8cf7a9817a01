// The fused elementwise tile functions compiled for avx2; fusion.cpp picks
// the widest set the CPU supports at run time (never -march=native: the
// binary runs on any x86-64).
#include <math.h>

#include <cstdint>

#include "backend/cpu/fusion.h"

#pragma GCC target("avx2")
#define LAZYSCOPE_FUSED_TILE_NAMESPACE tiles_avx2
#include "backend/cpu/fusion_rows.inc"

namespace lazyscope::cpu {
const TileFn* tile_functions_avx2() { return tiles_avx2::kTileFunctions; }
SoftmaxRowsFn softmax_rows_avx2() { return tiles_avx2::softmax_rows; }
SoftmaxColumnsFn softmax_columns_avx2() { return tiles_avx2::softmax_columns; }
LogsumexpRowsFn logsumexp_rows_avx2() { return tiles_avx2::logsumexp_rows; }
}  // namespace lazyscope::cpu
