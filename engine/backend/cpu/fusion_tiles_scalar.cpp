// The fused elementwise tile functions compiled for scalar; fusion.cpp picks
// the widest set the CPU supports at run time (never -march=native: the
// binary runs on any x86-64).
#include <math.h>

#include <cstdint>

#include "backend/cpu/fusion.h"

#define LAZYSCOPE_FUSED_TILE_NAMESPACE tiles_scalar
#include "backend/cpu/fusion_rows.inc"

namespace lazyscope::cpu {
const TileFn* tile_functions_scalar() { return tiles_scalar::kTileFunctions; }
SoftmaxRowsFn softmax_rows_scalar() { return tiles_scalar::softmax_rows; }
SoftmaxColumnsFn softmax_columns_scalar() { return tiles_scalar::softmax_columns; }
LogsumexpRowsFn logsumexp_rows_scalar() { return tiles_scalar::logsumexp_rows; }
}  // namespace lazyscope::cpu
