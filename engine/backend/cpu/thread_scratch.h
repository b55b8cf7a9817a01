// Per-thread scratch for kernels that need a buffer per call: a block that
// only grows and stays the calling thread's until its next request with the
// same id, so a warm step allocates nothing. Defined with the oneDNN
// plumbing (onednn.cpp, whose header declares the same function), without
// oneDNN's headers for kernels that do not use it. A thread_local vector
// per kernel would not do: the engine has initial-exec TLS (core/pool.h),
// which puts the library's whole TLS block in glibc's small static TLS
// surplus, and a dozen more vectors overflowed it ("cannot allocate memory
// in static TLS block" at import).
#pragma once

#include <cstddef>

namespace lazyscope::cpu {

// Ids of the scratch blocks, one per use that may be live at once on a
// thread. kernels_conv.cpp uses 16-20.
enum ScratchId : int {
  kScratchReduceParts = 40,     // kernels_reduce.cpp: per-chunk partial results
  kScratchSortPairs = 41,       // kernels_index.cpp: (key, index) pairs of one line
  kScratchLayerNormParts = 42,  // kernels_nn.cpp: layer_norm_param_grads' per-chunk column sums
};

namespace onednn {
void* thread_buffer(int which, size_t bytes);
}  // namespace onednn

template <typename T> T* thread_scratch(ScratchId id, size_t count) {
  return static_cast<T*>(onednn::thread_buffer(id, count * sizeof(T)));
}

}  // namespace lazyscope::cpu
