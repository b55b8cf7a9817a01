// The ops users call. Each checks its operands' devices, infers the output
// spec at the call (so shape errors name the user's line), then runs at once
// on the cpu device or records an IR node on a lazy device.
#pragma once

#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace lazyscope::ops {

// Elementwise ops promote mixed operand dtypes as PyTorch does, inserting
// cast ops; see Promote in ir/op_table.h.
Tensor cast(const Tensor& a, DType dtype);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give float32
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Comparisons and logical ops give bool.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);
// Elements of x where cond is true, of y elsewhere; all three broadcast.
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);

Tensor neg(const Tensor& a);
Tensor abs(const Tensor& a);
// Rounding keeps the dtype (an integer is its own rounding); round is half to even.
Tensor sign(const Tensor& a);
Tensor floor(const Tensor& a);
Tensor ceil(const Tensor& a);
Tensor round(const Tensor& a);
Tensor trunc(const Tensor& a);
// Python's // and %, and C's fmod, with PyTorch's promotion (integers stay
// integers). Integer division by zero is an error; floats give inf/nan.
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor atan(const Tensor& a);
Tensor asin(const Tensor& a);
Tensor acos(const Tensor& a);
Tensor atan2(const Tensor& y, const Tensor& x);
// Bool and integer operands only (an EngineError names a float operand).
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
// gcd of integers (non-negative); nextafter of floats; frexp's mantissa and
// its exponent (in the operand's float dtype). The package checks dtypes.
Tensor gcd(const Tensor& a, const Tensor& b);
Tensor nextafter(const Tensor& a, const Tensor& b);
Tensor frexp_mantissa(const Tensor& a);
Tensor frexp_exponent(const Tensor& a);
// div(a, b, rounding_mode): "trunc" or "floor"; integers stay integers.
Tensor div_rounded(const Tensor& a, const Tensor& b, const std::string& rounding_mode);
// Floating ops: integer inputs are computed in float32, as in PyTorch.
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor log1p(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor rsqrt(const Tensor& a);
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor erf(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor gelu(const Tensor& a);  // exact: x * Phi(x)
Tensor silu(const Tensor& a);
Tensor softplus(const Tensor& a, double beta = 1.0, double threshold = 20.0);
Tensor leaky_relu(const Tensor& a, double negative_slope = 0.01);
// An absent bound is nullopt. An integer tensor with a non-integral bound is
// clamped in float32.
Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max);

// PyTorch's matmul: 1-D operands are a row (left) or column (right) vector
// whose dim is dropped from the result; batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);

// Convolution, pooling, normalization, dropout: torch.nn.functional's, in
// tensor/ops_nn.cpp. Image ops take NCHW [N, C, H, W] inputs or unbatched
// [C, H, W] ones (the result is then unbatched too); spatial arguments are
// [h, w] pairs. Float32 and float64.
using Size2 = std::array<int64_t, 2>;
// weight [O, C/groups, kH, kW]; bias [O] or undefined.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), Size2 stride = {1, 1},
              Size2 padding = {0, 0}, Size2 dilation = {1, 1}, int64_t groups = 1);
// The transposed convolution (the gradient of conv2d with respect to its
// input, as a layer): weight [C, O/groups, kH, kW] for an input of C
// channels; the output is [N, O, H', W'] with H' = (H - 1) * stride -
// 2 * padding + dilation * (kH - 1) + output_padding + 1. output_padding
// (smaller than stride or dilation) picks among the output sizes a
// strided conv2d maps to the same input size.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), Size2 stride = {1, 1},
                        Size2 padding = {0, 0}, Size2 output_padding = {0, 0}, int64_t groups = 1,
                        Size2 dilation = {1, 1});
// stride nullopt: the kernel size. The gradient goes to the first maximum of each window.
Tensor max_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = {0, 0}, Size2 dilation = {1, 1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride = std::nullopt,
                  Size2 padding = {0, 0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size);
// The 3-D versions: NCDHW [N, C, D, H, W] inputs or unbatched [C, D, H, W]
// ones; spatial arguments are [d, h, w] triples; weight [O, C/groups, kD,
// kH, kW] (conv_transpose3d: [C, O/groups, kD, kH, kW]).
using Size3 = std::array<int64_t, 3>;
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), Size3 stride = {1, 1, 1},
              Size3 padding = {0, 0, 0}, Size3 dilation = {1, 1, 1}, int64_t groups = 1);
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        Size3 stride = {1, 1, 1}, Size3 padding = {0, 0, 0}, Size3 output_padding = {0, 0, 0},
                        int64_t groups = 1, Size3 dilation = {1, 1, 1});
Tensor max_pool3d(const Tensor& input, Size3 kernel_size, std::optional<Size3> stride = std::nullopt,
                  Size3 padding = {0, 0, 0}, Size3 dilation = {1, 1, 1}, bool ceil_mode = false);
Tensor avg_pool3d(const Tensor& input, Size3 kernel_size, std::optional<Size3> stride = std::nullopt,
                  Size3 padding = {0, 0, 0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool3d(const Tensor& input, Size3 output_size);
// Normalizes over the last dims (normalized_shape), biased variance; weight
// and bias (of normalized_shape) may be undefined.
Tensor layer_norm(const Tensor& input, const std::vector<int64_t>& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// input [N, C, ...]; running stats, weight and bias [C], each may be
// undefined. Training (or no running stats): batch statistics, normalized
// with the biased variance; the running stats, when given, are updated in
// place with momentum (the variance unbiased). On a lazy device "in place"
// rebinds the running-stat tensors to the new IR value. Eval: running stats.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
// Zeroes each element with probability p and scales the others by 1/(1-p);
// the identity when not training. The mask comes from a dropout_mask op fed
// the engine's rng state (seed, offset) as a graph input, so each call draws
// anew without changing the graph. dropout2d zeroes whole channels.
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true);
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true);
// Resets the rng state behind dropout: the same seed gives the same masks.
void manual_seed(uint64_t seed);
// The engine's rng (seed, draws since): what get_rng_state saves and
// set_rng_state puts back, so the same masks come again.
std::array<uint64_t, 2> rng_state();
void set_rng_state(uint64_t seed, uint64_t offset);

// Layout. Buffers never alias: a view on the eager device is a copy, and
// on a lazy device a node; without in-place ops the difference is invisible.
Tensor reshape(const Tensor& a, std::vector<int64_t> shape);  // one -1 allowed
Tensor permute(const Tensor& a, std::vector<int64_t> dims);
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& a);  // transpose of a tensor of at most 2 dims
// Broadcasts size-1 dims (and adds leading ones); -1 keeps a size.
Tensor expand(const Tensor& a, std::vector<int64_t> shape);
Tensor squeeze(const Tensor& a, std::optional<int64_t> dim = std::nullopt);
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor flatten(const Tensor& a, int64_t start_dim = 0, int64_t end_dim = -1);
// Sums `a` down to `shape`, which `a`'s shape must broadcast from: the
// reverse of broadcasting, for gradients. The same tensor when shapes match.
Tensor sum_to_size(const Tensor& a, const Shape& shape);
Tensor relu(const Tensor& a);
// Reductions: dims empty = all dims; negative dims count from the end.
// Integer sums and products give int64; mean/var/std need floating input.
Tensor sum(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor prod(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amax(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
// Index of the first extreme; no dim = into the flattened tensor.
Tensor argmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// Divides by (n - correction): 1 is the unbiased estimate, 0 the population one.
Tensor var(const Tensor& a, std::vector<int64_t> dims = {}, double correction = 1.0, bool keepdim = false);
Tensor std(const Tensor& a, std::vector<int64_t> dims = {}, double correction = 1.0, bool keepdim = false);
Tensor logsumexp(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor any(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor all(const Tensor& a, std::vector<int64_t> dims = {}, bool keepdim = false);
// Along one dim, numerically stable; integer inputs are computed in float32.
Tensor softmax(const Tensor& a, int64_t dim);
Tensor log_softmax(const Tensor& a, int64_t dim);

// Joins and splits. cat promotes its operands to their common type.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Pieces along dim of the given sizes (which must sum to the dim's size).
std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& sizes, int64_t dim = 0);
// Pieces of split_size (the last may be smaller), as PyTorch's split(int).
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim = 0);
// ceil(size / chunks) per piece, so possibly fewer than `chunks` pieces.
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);
// A strided slice: per dim, normalized start <= end <= size and step >= 1.
Tensor slice(const Tensor& a, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> steps);
// [start, start + length) of one dim.
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);
// Basic indexing, as Python's t[...]: ints (negative from the end) drop a
// dim, slices keep it (positive steps, bounds clamped as Python's), None adds
// a dim of size 1, one Ellipsis stands for the dims not named. The result is
// a slice node and a reshape, both differentiable. An int out of range is an
// IndexError naming the index, the dim, its size and the user's line.
//
// Advanced indexing: integer index tensors (kTensor) index their dims as
// PyTorch's (NumPy's) do: they broadcast together to a shape B that replaces
// the indexed dims — in place when those dims are adjacent, at the front
// otherwise; ints are applied first, as plain selects. The result is a copy
// (kIndex), differentiable into the indexed tensor. A bool tensor (a mask)
// is data dependent: index() refuses it.
struct IndexItem {
  enum class Kind { kInt, kSlice, kNone, kEllipsis, kTensor };
  Kind kind = Kind::kNone;
  int64_t value = 0;                         // kInt
  std::optional<int64_t> start, stop, step;  // kSlice
  Tensor tensor;                             // kTensor: integer indices or a bool mask
};
Tensor index(const Tensor& a, const std::vector<IndexItem>& items);
// The value of `self` with the elements `items` select (as in index())
// replaced by `values` (broadcast to the selection's shape, cast to self's
// dtype), or increased by them when `accumulate` (repeated indices add up).
// A single bool mask of self's leading shape is allowed here: its
// assignment is a where(), not data dependent, if `values` broadcast to the
// unmasked trailing dims. Functional: the caller rebinds (see views.h).
Tensor index_put(const Tensor& self, const std::vector<IndexItem>& items, const Tensor& values,
                 bool accumulate = false);

// Gathers and their scatter-adds. Indices are integer tensors of at most one
// dim, each in [0, size); out of range is an IndexError when the kernel runs.
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source);
// Rows of weight [V, D] for indices of any shape: [..., D]. The gradient is
// scatter-added into the weight; the row padding_idx (if any) gets none.
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);

// Data-dependent ops: their output shape depends on the values, so they
// never enter a graph. On a lazy device they run on the host: the operands'
// pending graph is executed (cut), downloaded, computed, and the results
// uploaded — a fallback counted as Fallback.<op> with reason DATA_DEPENDENT.
// Indices of the non-zero elements: int64 [K, rank], row-major order.
Tensor nonzero(const Tensor& a);
// The same as one int64 [K] tensor per dim (nonzero(as_tuple=True)).
std::vector<Tensor> nonzero_tuple(const Tensor& a);
// The elements of `a` where the bool `mask` is true (both broadcast), as a
// 1-D tensor in row-major order. Differentiable in `a`: the gradient is
// scattered back to the selected positions (an index_select underneath).
Tensor masked_select(const Tensor& a, const Tensor& mask);
// a[mask] for a bool mask over a's leading dims (mask.shape == a.shape[:k]):
// [K, *a.shape[k:]]. Differentiable in `a`, as masked_select.
Tensor boolean_mask_index(const Tensor& a, const Tensor& mask);
// Distinct values ascending (torch.unique sorts on the CPU whatever `sorted`
// says), the index of each element's value (a's shape), and the counts.
struct UniqueResult {
  Tensor values, inverse, counts;
};
UniqueResult unique(const Tensor& a);

// Losses (torch.nn.functional's). kMean averages over the elements, or for
// nll_loss/cross_entropy over the targets that are not ignore_index (all
// ignored: NaN, as in PyTorch).
enum class Reduction { kNone = 0, kMean = 1, kSum = 2 };
// Integer class values -> int64 [..., num_classes]. Out-of-range values are an
// IndexError when the kernel runs (at the call on cpu, at the sync on lazy).
Tensor one_hot(const Tensor& a, int64_t num_classes);
// input [N, C] (or [C] with a 0-d target) of log-probabilities, integer
// targets [N]. A target outside [0, C) other than ignore_index is an
// IndexError naming the value: at the call on the cpu device; on a lazy
// device at the sync that executes the step's graph (the values are not
// known before), naming the op and the value but not the line.
// `weight` (optional, [C]) scales each sample's loss by its class's weight;
// kMean then divides by the sum of the weights of the targets not ignored
// (PyTorch's weighted mean).
Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::kMean,
                int64_t ignore_index = -100, const Tensor& weight = Tensor());
// log_softmax over dim 1 then nll_loss, with PyTorch's label smoothing.
// A floating target of the input's shape is class probabilities instead.
// With `weight`, the smoothing term weighs each class too and kMean divides
// by the weights of the targets (class probabilities: by the batch size).
Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::kMean,
                     int64_t ignore_index = -100, double label_smoothing = 0.0, const Tensor& weight = Tensor());
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::kMean);
// input probabilities in [0, 1]; the logs are clamped at -100, as PyTorch's.
// `weight` may be undefined.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                            Reduction reduction = Reduction::kMean);
// Stable in the logits: (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                                        Reduction reduction = Reduction::kMean, const Tensor& pos_weight = Tensor());

// Gathers and scatters along a dim, as PyTorch's: index has the input's
// rank and is no larger than it (nor than src) along the other dims; src has
// self's dtype. Out-of-range indices are an IndexError when the kernel runs.
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// self with src written at the normalized slice (see slice()).
Tensor slice_scatter(const Tensor& self, const Tensor& src, std::vector<int64_t> starts, std::vector<int64_t> ends,
                     std::vector<int64_t> steps);
// self where the bool mask (broadcast to self's shape) is false, value (a
// 0-d tensor, cast to self's dtype) where it is true.
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);
// Sorting along dim: stable, NaN sorts as the largest value. sort and topk
// give (values, int64 indices); topk's are always sorted.
Tensor argsort(const Tensor& a, int64_t dim = -1, bool descending = false);
std::pair<Tensor, Tensor> sort(const Tensor& a, int64_t dim = -1, bool descending = false);
std::pair<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim = -1, bool largest = true);
// Inclusive scans; integer inputs give int64, as in PyTorch.
Tensor cumsum(const Tensor& a, int64_t dim);
Tensor cumprod(const Tensor& a, int64_t dim);
// The lower (upper) triangle of the last two dims: elements with
// col - row <= diagonal (>= diagonal) kept, the others zero.
Tensor tril(const Tensor& a, int64_t diagonal = 0);
Tensor triu(const Tensor& a, int64_t diagonal = 0);

// Cross-replica reduction (see backend/collective.h): a node of the step's
// graph on a lazy device that is a replica of the registered group `group`;
// each replica gets reduce(all replicas' values) * scale. No host sync.
Tensor all_reduce(const Tensor& a, ReduceKind kind, double scale, int64_t group);
// A constant bool/int64/... tensor built on the host and entered as a graph
// input (so it is never baked into the graph), e.g. a triangular mask.
Tensor constant(BufferPtr buffer, const Device& device);

// A Python scalar as a 0-d tensor of `dtype` on `device`. On a lazy device it
// becomes a graph input, not a constant, so a changing learning rate does not
// recompile.
Tensor scalar(double value, DType dtype, const Device& device);
// A Python number as a "wrapped number": a 0-d float64, int64 or bool tensor
// that promotes like a scalar (int32 tensor + 5 is int32, int tensor * 2.5 is
// float32) and is converted on the host, never by a cast node.
Tensor wrapped_float(double value, const Device& device);
Tensor wrapped_int(int64_t value, const Device& device);
Tensor wrapped_bool(bool value, const Device& device);

// Generic entry used by the named ops above.
Tensor apply(OpKind op, std::vector<Tensor> inputs, Attrs attrs = {});
// The same for operands listed in braces (`apply(op, {a, b})`, most calls):
// they go into a per-thread scratch vector instead of a new one per op.
Tensor apply(OpKind op, std::initializer_list<Tensor> inputs, Attrs attrs = {});

}  // namespace lazyscope::ops
