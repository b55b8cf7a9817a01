// Random kernels. They are counter-based: element i of a draw is a pure
// function of (seed, offset, i), so the rng state can be an ordinary graph
// input (an int64 [2] tensor) rather than hidden kernel state. The eager and
// lazy devices therefore give the same masks for the same state, and a
// compiled graph is reused across steps that only change the state.
#include <cstdint>

#include "backend/cpu/kernel_util.h"

namespace lazyscope::cpu {
namespace {

// SplitMix64's finalizer: a bijective 64-bit mixer with full avalanche.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 53 random bits.
double uniform(uint64_t stream, int64_t i) {
  return static_cast<double>(mix64(stream + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull) >> 11) * 0x1p-53;
}

// Each element is 0 with probability p, else 1/(1-p) (the dropout scale).
template <typename T> void dropout_mask_kernel(const KernelArgs& k) {
  const int64_t* state = k.inputs[0]->as<int64_t>();
  const uint64_t stream = mix64(static_cast<uint64_t>(state[0]) ^ mix64(static_cast<uint64_t>(state[1])));
  const double p = k.attrs.get_double("p");
  const T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
  T* out = k.out.as<T>();
  const int64_t n = k.out.numel();
  for (int64_t i = 0; i < n; ++i) out[i] = uniform(stream, i) >= p ? scale : T(0);
}

}  // namespace

void add_random_kernels(Table& t) {
  rows<float, double>(t, OpKind::kDropoutMask, LAZYSCOPE_KERNEL(dropout_mask_kernel));
}

}  // namespace lazyscope::cpu
