// The op table: for each op its name, arity and output shape/dtype rule.
// Adding an op is one row here plus one kernel row in each backend that lowers
// it; ops a backend does not lower fall back to the host.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/shape.h"
#include "ir/attrs.h"

namespace lazyscope {

enum class OpKind : uint16_t {
  kDeviceData,  // graph input: a materialized buffer, a Python scalar, RNG state
  kCast,        // attr dtype (a DType as int)
  // Elementwise, broadcasting.
  kAdd,
  kSub,
  kMul,
  kDiv,  // true division
  kPow,
  kMaximum,
  kMinimum,
  kEq,  // comparisons give bool
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kLogicalAnd,
  kLogicalOr,
  kLogicalNot,
  kWhere,  // (condition, x, y)
  kNeg,
  kAbs,
  kExp,
  kLog,
  kLog1p,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTanh,
  kErf,
  kSigmoid,
  kRelu,
  kLeakyRelu,  // attr negative_slope
  kGelu,       // erf form
  kSilu,
  kSoftplus,  // attrs beta, threshold
  kClamp,     // attrs min, max (+-inf when absent)
  kMatmul,    // [..., m, k] x [..., k, n], batch dims broadcast (1-D operands: see ops::matmul)
  // Convolution, pooling, normalization, dropout. NCHW, 4-D operands (ops.h
  // adds and drops the batch dim of unbatched inputs); spatial attrs are
  // [h, w] pairs. The backward ops are IR ops too, so a lazy backward pass is
  // traced, hashed and cached like the forward.
  kConv2d,                     // (input [N,C,H,W], weight [O,C/groups,kH,kW]), attrs stride, padding, dilation, groups
  kConv2dBackwardInput,        // (grad [N,O,oH,oW], weight), conv2d's attrs + input_size [H, W]
  kConv2dBackwardWeight,       // (input, grad), conv2d's attrs + kernel_size [kH, kW]
  kMaxPool2d,                  // attrs kernel_size, stride, padding, dilation, ceil_mode
  kMaxPool2dBackward,          // (grad, input), max_pool2d's attrs: grad to the first max of each window
  kAvgPool2d,                  // attrs kernel_size, stride, padding, ceil_mode, count_include_pad, divisor (0: none)
  kAvgPool2dBackward,          // (grad), avg_pool2d's attrs + input_size [H, W]
  kAdaptiveAvgPool2d,          // attr output_size [oH, oW]
  kAdaptiveAvgPool2dBackward,  // (grad), attr input_size [H, W]
  // (rng state int64 [2]: seed, offset) -> attrs shape, dtype, p: each element
  // 0 with probability p, else 1/(1-p). The state is a graph input, so every
  // step's mask differs while the graph (and its compile) stays the same.
  kDropoutMask,
  // Layout. On a lazy device these are nodes like any other; the CPU backend copies.
  kReshape,  // attr shape (one -1 allowed); view, squeeze, unsqueeze and flatten are reshapes
  kPermute,  // attr dims; transpose and t are permutes
  kExpand,   // attr shape (-1 keeps a size): broadcasts size-1 dims and adds leading ones
  // Reductions: attrs dims (empty = all) and keepdim.
  kSum,
  kMean,
  kProd,
  kAmax,  // max values (NaN propagates)
  kAmin,
  kArgmax,  // int64 indices; at most one dim (none = over the flattened tensor)
  kArgmin,
  kVar,  // attr correction (1 = unbiased)
  kLogsumexp,
  kAny,
  kAll,
  // Normalizations along one dim (attr dim), numerically stable (max subtracted).
  kSoftmax,
  kLogSoftmax,
  // Integer class values -> int64 [..., num_classes] (attr num_classes).
  // Values outside [0, num_classes) are an IndexError when the kernel runs.
  kOneHot,
  // (log-probs [N, C], int64 targets [N]) -> [N] or [] (attrs reduction:
  // 0 none, 1 mean, 2 sum; ignore_index). Targets outside [0, C) (other than
  // ignore_index) are an IndexError when the kernel runs: at the call on the
  // cpu device, at the sync that executes the graph on a lazy one.
  kNllLoss,
  // Joins, slices and gathers.
  kCat,            // any number of operands (arity -1), attr dim; operands promoted to their common type
  kSlice,          // attrs starts, ends, steps: one each per dim, normalized (0 <= start <= end <= size, step >= 1)
  kSliceBackward,  // attrs shape, starts, ends, steps: zeros of `shape` with the operand at the slice
  kIndexSelect,    // (input, int64 index [K]), attr dim: input's shape with dim of size K
  kIndexAdd,       // (self, int64 index [K], source), attr dim: self with source's slices added at index
  // Gathers and scatters along a dim, advanced indexing, sorting, scans and
  // triangles. Indices are int64; an index out of range is an IndexError
  // naming the op and the value when the kernel runs.
  kGather,        // (input, index) attr dim: index's shape; index.size(d) <= input.size(d) for d != dim
  kScatter,       // (self, index, src) attr dim: self with src[p] written at p with p[dim] = index[p]
  kScatterAdd,    // as kScatter, adding (repeated indices add up)
  kSliceScatter,  // (self, src) attrs starts, ends, steps (as kSlice): self with src written at the slice
  // (self, idx_0 .. idx_{k-1}), idx all of one shape B: self[idx_0, .., idx_{k-1}] over self's first k
  // dims, shape B + self.shape[k:]; negative indices count from the end. Attr dims: the user's dim of
  // each index, for messages.
  kIndex,
  // (self, values, idx_0 .. idx_{k-1}): self with values (of kIndex's output shape) written at the
  // indices, or added when attr accumulate; attr dims as kIndex.
  kIndexPut,
  kArgsort,  // attrs dim, descending: the int64 order along dim, stable; NaN sorts as the largest value
  kCumsum,   // attr dim
  kCumprod,  // attr dim
  kTril,     // attr diagonal: the last two dims, zero above the diagonal
  kTriu,     // attr diagonal: zero below
  // Collectives between replicas (threads of this process, one lazy device
  // each; see backend/collective.h). Appended last: op codes are part of
  // graph hashes and recorded graphs.
  // attrs reduce (collective::ReduceKind: sum, mul, min, max, and, or),
  // scale (applied after the reduction; floats only), group (the key of a
  // registered replica group). Output: the operand's shape; bool for and/or.
  kAllReduce,
  // Rounding and integer division (appended: op codes are stored). Operands
  // keep their dtype: an integer rounds to itself. Integer floor_divide,
  // remainder and fmod by zero are an EngineError "ZeroDivisionError" when
  // the kernel runs, as PyTorch's CPU kernels raise; floats give inf/nan.
  kSign,
  kFloor,
  kCeil,
  kRound,  // half to even, as PyTorch (and NumPy)
  kTrunc,
  kFloorDivide,  // Python's //: the quotient rounded toward -inf
  kRemainder,    // Python's %: the result has the divisor's sign
  kFmod,         // C's fmod: the result has the dividend's sign
  // Inverse trigonometry (appended). atan2(y, x): the angle of (x, y), in
  // (-pi, pi], with C's atan2 at zeros and infinities.
  kAtan,
  kAsin,
  kAcos,
  kAtan2,
  // Bitwise ops on bool and integer operands (floats are an error, as in
  // PyTorch). Shifts: a count outside [0, bits) gives 0 (left) or the sign
  // fill (right), as NumPy; a right shift of a signed value is arithmetic.
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
  kShiftLeft,
  kShiftRight,
  // nll_loss's gradient in one kernel (appended: op codes are stored):
  // (grad [N] for reduction none, [] otherwise; int64 targets [N]) ->
  // [N, classes] of grad's dtype, attrs reduction, ignore_index, classes:
  // -[c == target_i] * grad_i (mean: grad / the count of targets kept; an
  // ignored target's row is -(0 * scale)). It was ten ops (ne, where,
  // one_hot, casts, sum, div, mul, neg), five kernels in a step.
  kNllLossBackward,
  // layer_norm as one op (x [, weight] [, bias]) -> x's shape and dtype,
  // attrs dims (how many trailing dims are normalized), eps, weight, bias
  // (whether each operand is there): each row's mean and biased variance in
  // double, then (x - mean) * rsqrt(var + eps) * weight + bias. It was a
  // mean, a var and a fused kernel forward, and eight kernels backward.
  kLayerNorm,
  // Its input gradient: (grad, x [, weight]) -> x's shape, attrs dims, eps,
  // weight: rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, g =
  // grad * weight, the statistics recomputed from x.
  kLayerNormBackward,
  // Its weight's and bias's gradients in one pass: (grad, x) -> [2, *the
  // normalized dims] of x's dtype, attrs dims, eps: row 0 the sum over rows
  // of grad * xhat, row 1 of grad. It was layer_norm again (xhat), a mul
  // and two column sums, each reading the [rows, C] values.
  kLayerNormParamGrads,
  // Scaled dot-product attention in one kernel (appended: op codes are
  // stored). (q [N, Lq, H, D], k [N, Lk, H, D], v [N, Lk, H, Dv][, mask]),
  // or (qkv [N, L, 3, H, D][, mask]) (q, k, v the heads of one
  // self-attention projection) -> flat [O | P]: O [N, Lq, H, Dv] =
  // softmax(q k^T * scale + mask) v per (n, h), heads interleaved as a
  // projection's output is laid out (no permute), then the probabilities
  // P [N, H, Lq, Lk] the gradient reads (one output: the front end slices
  // O out, a view). attrs scale, causal (1: key j > query i masked out,
  // PyTorch's is_causal). mask: broadcastable to [N, H, Lq, Lk]; bool
  // (true = attend) or of q's dtype (added to the scores). Kernels in
  // kernels_layout.cpp.
  kAttention,
  // Its gradient: (q, k, v, O's grad, forward output) or (qkv, O's grad,
  // forward output), the forward output [O | P] flat -> [dq | dk | dv]
  // flat (gradients.cpp slices and reshapes them, views), or qkv's
  // gradient [N, L, 3, H, D].
  kAttentionBackward,
  // Linear algebra (torch.linalg), LAPACK kernels in kernels_linalg.cpp,
  // each over a batch [..., rows, cols] of float32 or float64 matrices,
  // batch dims already equal (the front end broadcasts). Appended: op codes
  // are stored. A singular or indefinite matrix is an error at the sync,
  // before any parameter is written (cpu_backend.cpp: may_fail_on_values).
  // (A [..., n, n], B [..., n, k]) -> X with op(A) X = B; attr transpose
  // (op(A) = A^T: the gradient's solve, no transposed copy of A).
  kLinalgSolve,
  // A [..., n, n] -> A^-1.
  kLinalgInv,
  // A [..., n, n] -> [..., 2]: sign(det A) and log|det A| ((0, -inf) when
  // singular); det and logdet are composed from it.
  kLinalgSlogdet,
  // A [..., n, n] (lower triangle read) -> L with A = L L^T, or U = L^T
  // (attr upper).
  kLinalgCholesky,
  // (A [..., n, n] triangular, B [..., n, k]) -> X with op(A) X = B; attrs
  // upper, transpose, unitriangular.
  kLinalgSolveTriangular,
  // A [..., n, n] symmetric (attr upper: which triangle is read) ->
  // [..., n + n*n]: eigenvalues ascending, then the eigenvectors as the
  // columns of an [n, n] matrix (one output: the front end slices both).
  kLinalgEigh,
  // A [..., m, n] -> [..., m*q + q*n]: Q [m, q] then R [q, n], q = min(m, n),
  // or m with attr complete.
  kLinalgQr,
  // A [..., m, n] -> [..., m*u + q + v*n]: U [m, u], S [q] descending, Vh
  // [v, n]; q = min(m, n), u = v = q, or u = m and v = n with attr full.
  kLinalgSvd,
  // The 3-D convolution and pools: conv2d's and the 2-D pools' rows with a
  // depth dim. NCDHW, 5-D operands (ops.h adds and drops the batch dim of
  // unbatched [C, D, H, W] inputs); spatial attrs are [d, h, w] triples.
  kConv3d,                     // (input [N,C,D,H,W], weight [O,C/groups,kD,kH,kW]), conv2d's attrs
  kConv3dBackwardInput,        // (grad, weight), conv3d's attrs + input_size [D, H, W]
  kConv3dBackwardWeight,       // (input, grad), conv3d's attrs + kernel_size [kD, kH, kW]
  kMaxPool3d,                  // max_pool2d's attrs
  kMaxPool3dBackward,          // (grad, input), max_pool3d's attrs
  kAvgPool3d,                  // avg_pool2d's attrs
  kAvgPool3dBackward,          // (grad), avg_pool3d's attrs + input_size [D, H, W]
  kAdaptiveAvgPool3d,          // attr output_size [oD, oH, oW]
  kAdaptiveAvgPool3dBackward,  // (grad), attr input_size [D, H, W]
  // Integer and float elementwise math (appended: op codes are stored).
  // gcd(a, b) of integers, non-negative as PyTorch's (Euclid on |a| and |b|;
  // gcd(0, 0) = 0; the magnitude of the most negative value wraps, as there).
  kGcd,
  // nextafter(x, y): the next representable float after x toward y (C's).
  kNextafter,
  // frexp's two parts, x = m * 2^e with 0.5 <= |m| < 1 (m = x and e = 0 at
  // zero, infinities and NaN, as C's frexp there). The exponent comes in
  // x's float dtype (exactly: a small integer); the front end casts it to int32.
  kFrexpMantissa,
  kFrexpExponent,
  kNumOps
};

// all_reduce's `reduce` attribute. Values are stored in graphs (attrs,
// hashes): append, never renumber.
enum class ReduceKind : int64_t { kSum = 0, kMul = 1, kMin = 2, kMax = 3, kAnd = 4, kOr = 5 };
inline constexpr int64_t kNumReduceKinds = 6;
std::string_view reduce_name(ReduceKind kind);                      // "sum", as torch_xla's REDUCE_* constants
std::optional<ReduceKind> reduce_from_name(std::string_view name);  // nullopt for an unknown name
std::string reduce_names();                                         // "sum, mul, min, max, and, or": for messages
// and/or give bool; the others keep the operand's dtype.
inline bool is_logical(ReduceKind kind) { return kind == ReduceKind::kAnd || kind == ReduceKind::kOr; }

struct TensorSpec {
  Shape shape;
  DType dtype;
};

// The operands' specs an InferFn reads, by pointer: apply() hands over the
// tensors' own specs instead of copying their shapes into an array per op.
class SpecList {
 public:
  SpecList(std::span<const TensorSpec* const> specs) : specs_(specs) {}  // NOLINT: converts implicitly
  const TensorSpec& operator[](size_t i) const { return *specs_[i]; }
  size_t size() const { return specs_.size(); }
  bool empty() const { return specs_.empty(); }

 private:
  std::span<const TensorSpec* const> specs_;
};

// Computes the output spec or throws ShapeError naming the op and shapes.
// `op` is the op's name, for messages.
using InferFn = TensorSpec (*)(const char* op, SpecList inputs, const Attrs& attrs);

// Which dtypes an op's operands are cast to before it runs (ops.cpp inserts
// the casts, so kernels see operands of one dtype). "Common" is PyTorch's
// result type over the operands, Python scalars and 0-d tensors included.
enum class Promote : uint8_t {
  kNone,         // operands as they are
  kCommon,       // every operand to the common type (add, maximum, eq, ...)
  kCommonFloat,  // the common type, integers and bools then to float32 (div, exp)
  kFloatOnly,    // floating operands only; an integer one is an error (mean, var)
  kToBool,       // every operand to bool (logical_and, any)
  kWhere,        // operand 0 to bool, the others to their common type
  kIntToLong,    // integers and bools to int64, floats kept (sum, prod)
  kIntegral,     // the common type, which must be an integer or bool (bitwise ops)
};

struct OpInfo {
  const char* name;
  int arity;  // number of tensor operands; -1: any number (cat)
  InferFn infer;
  Promote promote;
};

// What kind of work an op does, for the workbench (the graph viewer's
// colours and legend). Values are pb::OpCategory's (proto/lazyscope/ir.proto).
enum class OpCategory : uint8_t {
  kOther = 0,
  kElementwise = 1,
  kMatmulConv = 2,  // matrix products, convolutions and pooling
  kReduction = 3,   // reductions, softmax, losses, scans
  kLayout = 4,      // reshapes, permutes, broadcasts, joins and slices
  kData = 5,        // graph inputs and generated data (RNG masks, one-hot)
  kIndexing = 6,    // gathers, scatters, advanced indexing, sorting
  kCollective = 7,  // all_reduce between replicas
};
OpCategory op_category(OpKind op);

const OpInfo& op_info(OpKind op);
inline std::string_view op_name(OpKind op) { return op_info(op).name; }
inline TensorSpec infer_spec(OpKind op, SpecList inputs, const Attrs& attrs) {
  const OpInfo& info = op_info(op);
  return info.infer(info.name, inputs, attrs);
}
// infer_spec into `out`, whose shape's storage (taken from pool's stash by
// the tracer) is reused where the rule keeps its operands' shape: the
// elementwise ops, most of a trace. True when the shape is operand 0's.
bool infer_spec_into(OpKind op, SpecList inputs, const Attrs& attrs, TensorSpec& out);

}  // namespace lazyscope
