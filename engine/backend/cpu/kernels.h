// CPU kernels: one table from (op, output dtype) to a function. The eager
// cpu device and the CPU backend's compiled programs call the same kernels,
// so lazy and eager results agree by construction.
#pragma once

#include <span>
#include <string>

#include "core/buffer.h"
#include "ir/attrs.h"
#include "ir/op_table.h"

namespace lazyscope::cpu {

struct KernelArgs {
  std::span<const Buffer* const> inputs;  // already cast to the kernel's dtype where the op needs it
  Buffer& out;                            // allocated with the inferred shape and dtype
  const Attrs& attrs;
};

using KernelFn = void (*)(const KernelArgs&);

// nullptr when the CPU has no kernel for this op and dtype.
KernelFn find_kernel(OpKind op, DType dtype);

// out = op(a) x op(b), op a transpose of the last two dims where asked (a
// then stored [..., k, m], b [..., n, k]); batch dims broadcast. The CPU
// program calls it for a matmul whose operand is a transpose, reading the
// untransposed buffer instead of copying it.
//
// `epilogue`, when given, is called on element ranges [begin, end) of `out`
// once they are final, on the thread that computed them while they are
// still in its cache (a fused bias + activation applied to the rows a GEMM
// part just wrote; a product split by columns: after all its parts, over
// flat ranges on the pool); every element is covered exactly once.
struct Epilogue {
  template <typename F>
  explicit Epilogue(F& f)
      : object(&f), call([](void* o, int64_t begin, int64_t end) { (*static_cast<F*>(o))(begin, end); }) {}
  void operator()(int64_t begin, int64_t end) const { call(object, begin, end); }
  void* object;
  void (*call)(void*, int64_t, int64_t);
};
void matmul_into(const Buffer& a, bool transpose_a, const Buffer& b, bool transpose_b, Buffer& out,
                 const Epilogue* epilogue = nullptr);

// A batch of matrices read or written in place through element strides: a
// permute of a contiguous value (an attention's heads [B, S, H, D] read as
// [B, H, S, D]), so no copy is made. `shape` is the batch as stored
// ([..., rows, cols]: a transposed operand is stored [..., k, m]);
// strides[d] steps dim d; the last is 1 (rows are contiguous runs, the
// second last their leading dimension).
struct MatrixLayout {
  Shape shape;
  std::vector<int64_t> strides;
};
// out = op(a) x op(b) per batch, every operand at its layout; batch dims
// equal (no broadcast). `epilogue` only with a contiguous out.
void matmul_strided(const Buffer& a, const MatrixLayout& la, bool transpose_a, const Buffer& b, const MatrixLayout& lb,
                    bool transpose_b, Buffer& out, const MatrixLayout& lo, const Epilogue* epilogue = nullptr);

// out [K, N] (any shape of K*N elements) = a^T b with a [..., K] read as
// [R, K] and b [..., N] as [R, N], R the rest of their elements (equal):
// the sum over a batch of products a_i^T b_i as one GEMM (a weight's
// gradient over a [B, S, C] activation); `epilogue` as matmul_into's (float32:
// the weight's optimizer update).
void matmul_stacked_rows(const Buffer& a, const Buffer& b, Buffer& out, const Epilogue* epilogue = nullptr);
// Parts each thread's share of a product is split into (1-16, claimed
// dynamically; LAZYSCOPE_GEMM_PARTS_PER_THREAD); returns the previous value.
// For benchmarks/vs_pytorch.py's side-by-side comparison.
int set_gemm_parts_per_thread(int parts);
// Whether batches of small float products with B transposed (an attention's
// q k^T) run as oneDNN matmul primitives over parts of the batch instead of
// one OpenBLAS call per product (LAZYSCOPE_GEMM_BATCHED_DNNL; default on,
// in the auto split where oneDNN runs AVX-512); returns the previous choice.
bool set_gemm_batched_dnnl(bool on);
// How a single product is shared by the threads (LAZYSCOPE_GEMM_SPLIT):
// auto (rows unless too few; a batch of rows times one matrix stacked into
// one product; each part single-threaded oneDNN where it is large on every
// side, else OpenBLAS), rows, columns (that split, each part as auto's),
// blas (OpenBLAS's own threads on the whole product, the pool parked), legacy (before this: no stacking, and
// OpenBLAS's thread count left as another library set it), dnnl (oneDNN's
// sgemm: one call on the pool's count of OpenMP threads for a large
// product, the pool parked; single-threaded oneDNN in the pool's parts
// otherwise), dnnl-rows (auto's split, each part single-threaded oneDNN),
// openblas (auto's split, each part OpenBLAS: auto before oneDNN's parts).
// For benchmarks comparing them in one process; returns the previous mode.
enum class GemmSplit { kAuto, kRows, kColumns, kBlas, kLegacy, kDnnl, kDnnlRows, kOpenBlas };
GemmSplit set_gemm_split(GemmSplit mode);
GemmSplit gemm_split_from_name(const std::string& name);  // throws on an unknown name
const char* gemm_split_name(GemmSplit mode);

// Whether float32 convolutions with stride 1, no dilation, one group and
// fewer than 16 channels on a side run on the direct kernels of
// kernels_conv.cpp (forward; both gradients where there is no padding and
// output rows are whole 8-float vectors) instead of oneDNN or im2col
// (default: yes); returns the previous choice. For benchmarks comparing them
// in one process.
bool set_direct_conv(bool on);
// Whether the convolutions and max pools left to oneDNN run split over the
// pool, each part a single-threaded primitive (default: yes), or as one
// primitive on oneDNN's OpenMP team; returns the previous choice. For
// benchmarks comparing them in one process.
bool set_onednn_on_pool(bool on);

// Whether max_pool2d_backward (grad, input) may write its result over the
// input's bytes (the memory plan's in place): plain 2x2 windows, stride 2,
// no padding, which do not overlap, and the kernel reads each window's
// four inputs before writing its four results.
bool max_pool2d_backward_in_place_ok(const Shape& input, const Shape& grad, const Attrs& attrs);

// Host kernels of the data-dependent ops (kernels_host.cpp): no table rows,
// since their output shapes depend on the values.
// Positions of the non-zero elements in the flattened input: int64 [K].
BufferPtr flat_nonzero_indices(const Buffer& in);
// Their multi-indices, row-major order: int64 [K, rank].
BufferPtr nonzero_indices(const Buffer& in);
// Distinct values ascending (NaNs last, each its own), the index of each
// input element's value among them (input's shape), and each value's count.
struct UniqueResult {
  BufferPtr values, inverse, counts;
};
UniqueResult unique_values(const Buffer& in);

// The 16-bit float conversions the cast kernels use (round to nearest even).
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace lazyscope::cpu
