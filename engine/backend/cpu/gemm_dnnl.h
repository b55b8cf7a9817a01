// oneDNN's SGEMM (dnnl_sgemm) for the engine's float products, beside
// OpenBLAS: on this AVX-512 machine ~5-15% faster per thread, and one call
// on two OpenMP threads packs each operand once for both (the pool's split
// packs the shared operand once per part). kernels_layout.cpp chooses
// between them per LAZYSCOPE_GEMM_SPLIT. Internal to backend/cpu.
#pragma once

#include <cstdint>
#include <vector>

namespace lazyscope::cpu {

// out[m, n] (row stride ldc) = op(a) op(b), row-major, op a transpose where
// ta/tb say so (a then stored [k, m], b [n, k]), on `threads` OpenMP
// threads: 1 runs on the calling thread and starts no OpenMP team (from a
// pool worker, whose own OpenMP setting would otherwise start a team of
// its own). The calling thread's OpenMP thread count is restored after.
void dnnl_gemm(const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb, float* out, int64_t ldc,
               int64_t m, int64_t k, int64_t n, int threads);

// Whether oneDNN's sgemm runs its AVX-512 kernels here: the CPU has them,
// DNNL_MAX_CPU_ISA (oneDNN's own limit) allows them, and so does
// LAZYSCOPE_CPU_ISA (the engine's). Limited to AVX2 on this machine,
// oneDNN's sgemm lost to OpenBLAS's on half the models' products (up to
// 1.6x slower, benchmarks/README.md), so the default split keeps OpenBLAS there.
bool dnnl_gemm_avx512();

// A batch of products on the calling thread by one oneDNN matmul primitive
// (its brgemm kernels, created once per geometry and cached):
// out[i] = a[i] b[i] for every index i of `batch` (row-major batch dims),
// each operand addressed through element strides, one per dim of
// [batch..., rows, cols] as the product reads it: a [m, k], b [k, n], out
// [m, n] (a transposed operand is the same memory with its last two strides
// swapped). Returns false, having written nothing, where oneDNN has no
// brgemm kernel for these layouts (its fallbacks are slower than OpenBLAS).
// With `out` null it only makes (or finds) the primitive: whether a call
// with these strides and batch would be taken.
bool dnnl_batched_gemm(const float* a, const std::vector<int64_t>& a_strides, const float* b,
                       const std::vector<int64_t>& b_strides, float* out, const std::vector<int64_t>& out_strides,
                       const std::vector<int64_t>& batch, int64_t m, int64_t k, int64_t n);

}  // namespace lazyscope::cpu
