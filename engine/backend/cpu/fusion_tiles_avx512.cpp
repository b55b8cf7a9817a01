// The fused elementwise tile functions compiled for avx512; fusion.cpp picks
// the widest set the CPU supports at run time (never -march=native: the
// binary runs on any x86-64).
#include <math.h>

#include <cstdint>

#include "backend/cpu/fusion.h"

#pragma GCC target("avx512f")
#define LAZYSCOPE_FUSED_TILE_NAMESPACE tiles_avx512
#include "backend/cpu/fusion_rows.inc"

namespace lazyscope::cpu {
const TileFn* tile_functions_avx512() { return tiles_avx512::kTileFunctions; }
SoftmaxRowsFn softmax_rows_avx512() { return tiles_avx512::softmax_rows; }
SoftmaxColumnsFn softmax_columns_avx512() { return tiles_avx512::softmax_columns; }
LogsumexpRowsFn logsumexp_rows_avx512() { return tiles_avx512::logsumexp_rows; }
}  // namespace lazyscope::cpu
