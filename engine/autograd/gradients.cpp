// The gradient rules: one table, OpKind -> rule, each written in the
// engine's own ops so that it runs on either device (and is traced on a
// lazy one). A rule returns one gradient per input, of the output's shape
// or the input's; autograd.cpp sums broadcast dims down (sum_to_size).
#include <array>
#include <cmath>

#include "autograd/autograd.h"
#include "core/error.h"
#include "core/settings.h"
#include "ir/node.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace lazyscope::autograd {
namespace {

using Grads = std::vector<Tensor>;
using Ctx = SavedContext;

// A constant of `like`'s dtype on its device (a graph input, never baked in).
Tensor num(double v, const Tensor& like) { return ops::scalar(v, like.dtype(), like.device()); }
// A bool condition as 0/1 in `like`'s dtype.
Tensor as_mask(const Tensor& cond, const Tensor& like) { return ops::cast(cond, like.dtype()); }
Tensor zeros_where_not(const Tensor& cond, const Tensor& g) { return ops::where(cond, g, num(0, g)); }
const Tensor& in0(const Ctx& c) { return c.input(0); }
const Tensor& in1(const Ctx& c) { return c.input(1); }

// A reduction's output gradient brought back to the input's shape: the
// reduced dims restored as 1 (when not kept), then expanded.
Tensor unreduce(const Tensor& g, const Ctx& c) {
  const Shape& in_shape = c.shape(0);
  const auto reduced = reduced_dims(in_shape, c.attrs.get_ints("dims"), "backward");
  const Tensor kept = c.attrs.get_bool("keepdim") ? g : ops::reshape(g, reduced_shape(in_shape, reduced, true));
  return ops::expand(kept, in_shape);
}

double reduced_count(const Ctx& c) {
  const Shape& in_shape = c.shape(0);
  const auto reduced = reduced_dims(in_shape, c.attrs.get_ints("dims"), "backward");
  double n = 1;
  for (size_t i = 0; i < in_shape.size(); ++i) n *= reduced[i] ? static_cast<double>(in_shape[i]) : 1.0;
  return n;
}

// maximum/minimum: the gradient goes to the chosen operand, split on ties.
Grads extreme_pair(const Ctx& c, const Tensor& g, bool is_max) {
  const Tensor& a = in0(c);
  const Tensor& b = in1(c);
  const Tensor half = ops::mul(g, num(0.5, g));
  const Tensor a_wins = is_max ? ops::gt(a, b) : ops::lt(a, b);
  const Tensor b_wins = is_max ? ops::gt(b, a) : ops::lt(b, a);
  const Tensor tie = ops::eq(a, b);
  return {ops::where(tie, half, zeros_where_not(a_wins, g)), ops::where(tie, half, zeros_where_not(b_wins, g))};
}

// attention's output is [O | P] flat and the front end hands out O, a
// slice: O's gradient reaches the op as slice_backward(dO), dO written into
// zeros the size of both (a 3 MiB pass per layer of the transformer step).
// The gradient rule wants dO only: on a lazy device, when nothing else
// added to it, the slice_backward's operand is taken as it is (the
// slice_backward is then read by nothing and not computed); otherwise O's
// part of the gradient is sliced back out (a view in a compiled program).
Tensor output_head_gradient(const Tensor& g, const Ctx& c) {
  const Shape& q = c.shape(0);
  const bool packed = q.size() == 5;
  const Shape o = packed ? Shape{q[0], q[1], q[3], q[4]} : Shape{q[0], q[1], q[2], c.shape(2)[3]};
  const NodePtr& node = g.impl()->ir;
  if (node && node->op() == OpKind::kSliceBackward && node->operands().size() == 1 &&
      node->attrs().get_ints("starts") == std::vector<int64_t>{0} &&
      node->attrs().get_ints("steps") == std::vector<int64_t>{1} && numel(node->operands()[0]->shape()) == numel(o)) {
    return ops::reshape(Tensor::lazy(node->operands()[0], g.device()), o);
  }
  return ops::reshape(ops::narrow(g, 0, 0, numel(o)), o);
}

Grads amax_amin(const Ctx& c, const Tensor& g) {
  // Evenly among the elements equal to the extreme, as PyTorch's amax does.
  const Tensor mask = as_mask(ops::eq(in0(c), unreduce(c.output(), c)), in0(c));
  const Tensor count = ops::sum(mask, c.attrs.get_ints("dims"), /*keepdim=*/true);
  return {ops::div(ops::mul(unreduce(g, c), mask), count)};
}

// One row per op: its rule and the saved values the rule reads. The row is
// what backward checks for in-place changes, and SavedContext refuses a read
// the row does not declare, so the two cannot drift apart.
struct GradRow {
  GradRule rule = nullptr;
  SavedUse use{~0u, true};
};
using Table = std::array<GradRow, static_cast<size_t>(OpKind::kNumOps)>;

constexpr SavedUse kNothing{0, false};  // shapes and attrs only
constexpr SavedUse kOutput{0, true};
constexpr SavedUse kInput0{1u, false};
constexpr SavedUse kInput1{2u, false};
constexpr SavedUse kInputs{~0u, false};
constexpr SavedUse kInput0AndOutput{1u, true};
constexpr SavedUse kInput1AndOutput{2u, true};
constexpr SavedUse kInputsAndOutput{~0u, true};
constexpr SavedUse kIndices{~1u, false};       // index: every operand but self
constexpr SavedUse kIndicesOfPut{~3u, false};  // index_put: every operand but self and values

void set(Table& t, OpKind op, SavedUse use, GradRule rule) { t[static_cast<size_t>(op)] = GradRow{rule, use}; }

// Zeros of `shape` in g's dtype on its device (an expanded scalar: no buffer of that size until it runs).
Tensor zeros_of(const Shape& shape, const Tensor& g) { return ops::expand(num(0, g), shape); }

// A gradient of the index's shape brought to src's, which may be larger
// (gather and scatter read src only where the index reaches).
Tensor pad_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const std::vector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
  return ops::apply(OpKind::kSliceBackward, {g},
                    {{"shape", shape}, {"starts", starts}, {"ends", g.shape()}, {"steps", steps}});
}

// A bool constant [n, n] on `like`'s device: (i, j) set when j >= i (upper) or i == j.
Tensor square_mask(int64_t n, bool upper, const Tensor& like) {
  BufferPtr buffer = Buffer::allocate(DType::kBool, {n, n});
  bool* m = buffer->as<bool>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) m[i * n + j] = upper ? j >= i : j == i;
  return ops::constant(std::move(buffer), like.device());
}

std::vector<Tensor> index_tensors(const Ctx& c, size_t first) {
  std::vector<Tensor> out;
  for (size_t i = first; i < c.num_inputs(); ++i) out.push_back(c.input(i));
  return out;
}

void add_index_rules(Table& t) {
  set(t, OpKind::kGather, kInput1, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::scatter_add(zeros_of(c.shape(0), g), c.attrs.get_int("dim"), in1(c), g), Tensor()};
  });
  // Written elements take nothing from self; src gets the gradient where it was written.
  set(t, OpKind::kScatter, kInput1, [](const Ctx& c, const Tensor& g) -> Grads {
    const int64_t dim = c.attrs.get_int("dim");
    const Tensor& index = in1(c);
    return {c.needs(0) ? ops::scatter(g, dim, index, zeros_of(index.shape(), g)) : Tensor(), Tensor(),
            c.needs(2) ? pad_to(ops::gather(g, dim, index), c.shape(2)) : Tensor()};
  });
  set(t, OpKind::kScatterAdd, kInput1, [](const Ctx& c, const Tensor& g) -> Grads {
    return {g, Tensor(), c.needs(2) ? pad_to(ops::gather(g, c.attrs.get_int("dim"), in1(c)), c.shape(2)) : Tensor()};
  });
  set(t, OpKind::kSliceScatter, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    const auto& starts = c.attrs.get_ints("starts");
    const auto& ends = c.attrs.get_ints("ends");
    const auto& steps = c.attrs.get_ints("steps");
    return {c.needs(0) ? ops::slice_scatter(g, zeros_of(c.shape(1), g), starts, ends, steps) : Tensor(),
            c.needs(1) ? ops::slice(g, starts, ends, steps) : Tensor()};
  });
  // Repeated indices add up: an accumulating index_put into zeros.
  set(t, OpKind::kIndex, kIndices, [](const Ctx& c, const Tensor& g) -> Grads {
    std::vector<Tensor> operands{zeros_of(c.shape(0), g), g};
    for (const Tensor& i : index_tensors(c, 1)) operands.push_back(i);
    Grads out{ops::apply(OpKind::kIndexPut, operands, {{"dims", c.attrs.get_ints("dims")}, {"accumulate", true}})};
    out.resize(c.num_inputs());
    return out;
  });
  set(t, OpKind::kIndexPut, kIndicesOfPut, [](const Ctx& c, const Tensor& g) -> Grads {
    const std::vector<Tensor> indices = index_tensors(c, 2);
    const Attrs dims{{"dims", c.attrs.get_ints("dims")}};
    Grads out(c.num_inputs());
    if (c.needs(0)) {
      if (c.attrs.get_bool("accumulate")) {
        out[0] = g;
      } else {
        std::vector<Tensor> operands{g, zeros_of(c.shape(1), g)};
        operands.insert(operands.end(), indices.begin(), indices.end());
        out[0] = ops::apply(OpKind::kIndexPut, operands, {{"dims", c.attrs.get_ints("dims")}, {"accumulate", false}});
      }
    }
    if (c.needs(1)) {
      std::vector<Tensor> operands{g};
      operands.insert(operands.end(), indices.begin(), indices.end());
      out[1] = ops::apply(OpKind::kIndex, operands, dims);
    }
    return out;
  });
  // The reverse inclusive scan of g: sum over j >= i of g_j.
  set(t, OpKind::kCumsum, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    const int64_t dim = c.attrs.get_int("dim");
    return {ops::add(ops::sub(ops::sum(g, {dim}, /*keepdim=*/true), ops::cumsum(g, dim)), g)};
  });
  // Exact with zeros: d out_j / d x_i = prod over k <= j, k != i of x_k (j >= i).
  // Each row i of an [n, n] matrix holds x with x_i replaced by 1; its scan
  // gives those products for every j, masked to j >= i and weighted by g_j.
  set(t, OpKind::kCumprod, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const int64_t dim = c.attrs.get_int("dim");
    const Tensor x = ops::transpose(a, dim, -1);
    const Tensor gx = ops::transpose(g, dim, -1);
    const int64_t n = x.shape().back();
    Shape square = x.shape();
    square.push_back(n);
    const Tensor rows = ops::where(square_mask(n, false, a), num(1, a), ops::expand(ops::unsqueeze(x, -2), square));
    const Tensor scans = ops::cumprod(rows, -1);
    const Tensor weighted = ops::where(square_mask(n, true, a), ops::mul(scans, ops::unsqueeze(gx, -2)), num(0, a));
    return {ops::transpose(ops::sum(weighted, {-1}), dim, -1)};
  });
  set(t, OpKind::kTril, kNothing,
      [](const Ctx& c, const Tensor& g) -> Grads { return {ops::tril(g, c.attrs.get_int("diagonal"))}; });
  set(t, OpKind::kTriu, kNothing,
      [](const Ctx& c, const Tensor& g) -> Grads { return {ops::triu(g, c.attrs.get_int("diagonal"))}; });
}

// Linear algebra. Each rule is the textbook adjoint written in the
// engine's ops (so it runs on either device and traces on a lazy one), as
// PyTorch's FunctionsManual.cpp has them for real matrices.
Tensor mT(const Tensor& x) { return ops::transpose(x, -2, -1); }
Tensor mm(const Tensor& a, const Tensor& b) { return ops::matmul(a, b); }
Tensor linalg_solve(const Tensor& a, const Tensor& b, bool transpose) {
  return ops::apply(OpKind::kLinalgSolve, {a, b}, {{"transpose", transpose}});
}
Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool transpose, bool unit) {
  return ops::apply(OpKind::kLinalgSolveTriangular, {a, b},
                    {{"upper", upper}, {"transpose", transpose}, {"unitriangular", unit}});
}
// 1 on the diagonal of each [n, n] matrix of `like`'s shape, 0 elsewhere.
Tensor eye_mask(const Tensor& like) {
  const Tensor ones = ops::expand(num(1, like), like.shape());
  return ops::triu(ops::tril(ones));
}
// v [..., n] as the diagonals of [..., n, n] matrices.
Tensor diag_embed(const Tensor& v, const Tensor& like_matrix) {
  return ops::mul(ops::unsqueeze(v, -2), eye_mask(like_matrix));
}
// Part of a packed output's last dim from `start`: [..., rows, cols], or a
// vector [..., rows] when cols is 0.
Tensor unpack(const Tensor& packed, int64_t start, int64_t rows, int64_t cols) {
  Shape s = packed.shape();
  s.pop_back();
  const Tensor part = ops::narrow(packed, static_cast<int64_t>(packed.shape().size()) - 1, start,
                                  cols ? rows * cols : rows);
  if (cols == 0) return part;  // a vector part: kept [..., rows]
  s.push_back(rows);
  s.push_back(cols);
  return ops::reshape(part, s);
}
Tensor skew(const Tensor& x) { return ops::sub(x, mT(x)); }

void add_linalg_rules(Table& t) {
  // X = op(A)^-1 B: dB = op(A)^-T dX; dA = -dB X^T (or -X dB^T for op = ^T).
  set(t, OpKind::kLinalgSolve, kInputsAndOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const bool tr = c.attrs.get_bool("transpose");
    const Tensor gb = linalg_solve(in0(c), g, !tr);
    Tensor ga;
    if (c.needs(0)) ga = ops::neg(tr ? mm(c.output(), mT(gb)) : mm(gb, mT(c.output())));
    return {ga, gb};
  });
  // X = A^-1: dA = -X^T dX X^T.
  set(t, OpKind::kLinalgInv, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor xt = mT(c.output());
    return {ops::neg(mm(mm(xt, g), xt))};
  });
  // log|det A|: dA = g A^-T (the sign is piecewise constant). A singular A
  // fails here, in the solve, where PyTorch's SVD-based rule gives a value.
  set(t, OpKind::kLinalgSlogdet, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor g_log = unpack(g, 1, 1, 0);  // [..., 1]
    const Tensor eye = ops::expand(diag_embed(ops::expand(num(1, a), {a.shape().back()}), a), a.shape());
    const Tensor inv_t = linalg_solve(a, eye, /*transpose=*/true);  // A^-T
    return {ops::mul(ops::unsqueeze(g_log, -1), inv_t)};
  });
  // A = L L^T: dA = sym(L^-T Phi(L^T dL) L^-1), Phi the lower triangle with
  // its diagonal halved (Murray 2016); U = L^T for upper.
  set(t, OpKind::kLinalgCholesky, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const bool upper = c.attrs.get_bool("upper");
    const Tensor l = upper ? mT(c.output()) : c.output();
    const Tensor gl = upper ? mT(g) : g;
    const Tensor lower = ops::tril(mm(mT(l), gl));
    const Tensor phi = ops::sub(lower, ops::mul(num(0.5, g), ops::mul(lower, eye_mask(lower))));
    const Tensor y = solve_triangular(l, phi, /*upper=*/false, /*transpose=*/true, false);        // L^-T Phi
    const Tensor s = mT(solve_triangular(l, mT(y), /*upper=*/false, /*transpose=*/true, false));  // Y L^-1
    return {ops::mul(num(0.5, g), ops::add(s, mT(s)))};
  });
  // X = op(A)^-1 B, A triangular: dB = op(A)^-T dX; dA = -dB X^T (or -X
  // dB^T), kept to A's triangle (its strict part when unitriangular).
  set(t, OpKind::kLinalgSolveTriangular, kInputsAndOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const bool upper = c.attrs.get_bool("upper"), tr = c.attrs.get_bool("transpose"),
               unit = c.attrs.get_bool("unitriangular");
    const Tensor gb = solve_triangular(in0(c), g, upper, !tr, unit);
    Tensor ga;
    if (c.needs(0)) {
      const Tensor full = ops::neg(tr ? mm(c.output(), mT(gb)) : mm(gb, mT(c.output())));
      const int64_t off = unit ? 1 : 0;
      ga = upper ? ops::triu(full, off) : ops::tril(full, -off);
    }
    return {ga, gb};
  });
  // A = V diag(L) V^T: dA = V (diag(dL) + skew(V^T dV) / 2 / E) V^T, E_ij =
  // L_j - L_i off the diagonal (equal eigenvalues divide by zero, as in
  // PyTorch).
  set(t, OpKind::kLinalgEigh, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const int64_t n = c.shape(0).back();
    const Tensor vals = unpack(c.output(), 0, n, 0), v = unpack(c.output(), n, n, n);
    const Tensor gvals = unpack(g, 0, n, 0), gv = unpack(g, n, n, n);
    const Tensor eye = eye_mask(v);
    const Tensor e = ops::add(ops::sub(ops::unsqueeze(vals, -2), ops::unsqueeze(vals, -1)), eye);  // 1 on the diagonal
    const Tensor off = ops::div(ops::mul(num(0.5, g), skew(mm(mT(v), gv))), e);
    const Tensor inner = ops::add(ops::mul(off, ops::sub(num(1, g), eye)), diag_embed(gvals, v));
    return {mm(mm(v, inner), mT(v))};
  });
  // A = Q R, reduced with m >= n (R square): dA = [dQ + Q copyltu(M)] R^-T,
  // M = R dR^T - dQ^T Q (Walter & Lehmann; as BackwardsLinalg's qr_back).
  set(t, OpKind::kLinalgQr, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const Shape& as = c.shape(0);
    const int64_t m = as[as.size() - 2], n = as.back();
    if (m < n || c.attrs.get_bool("complete")) {
      throw EngineError(
          "linalg.qr: the gradient is supported for mode='reduced' with at least as many rows as "
          "columns (got " +
          std::to_string(m) + "x" + std::to_string(n) + (c.attrs.get_bool("complete") ? ", mode='complete'" : "") +
          "); differentiate the QR of the transpose, or detach Q and R");
    }
    const Tensor q = unpack(c.output(), 0, m, n), r = unpack(c.output(), m * n, n, n);
    const Tensor gq = unpack(g, 0, m, n), gr = unpack(g, m * n, n, n);
    const Tensor qdq = mm(mT(q), gq);
    const Tensor ut = ops::tril(ops::add(skew(qdq), skew(mm(r, mT(gr)))));
    // x R^-T = (R^-1 x^T)^T: a triangular solve, R upper.
    const auto times_r_inv_t = [&](const Tensor& x) { return mT(solve_triangular(r, mT(x), true, false, false)); };
    const Tensor ga = ops::add(mm(q, ops::add(gr, times_r_inv_t(ut))), times_r_inv_t(ops::sub(gq, mm(q, qdq))));
    return {ga};
  });
  // A = U diag(S) Vh (PyTorch's svd_backward for real matrices): the
  // diagonal part diag(dS), the rotations' parts (skew(U^T dU) S + S
  // skew(V^T dV)) / E with E_ij = S_j^2 - S_i^2, and, for a non-square A,
  // the parts of dU (or dV) outside U's (V's) span. Equal singular values
  // divide by zero, as in PyTorch.
  set(t, OpKind::kLinalgSvd, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const Shape& as = c.shape(0);
    const int64_t m = as[as.size() - 2], n = as.back(), k = std::min(m, n);
    if (c.attrs.get_bool("full") && m != n) {
      throw EngineError(
          "linalg.svd: the gradient with full_matrices=True of a non-square matrix is not "
          "defined (U or Vh is not unique); use full_matrices=False");
    }
    const Tensor u = unpack(c.output(), 0, m, k), s = unpack(c.output(), m * k, k, 0),
                 vh = unpack(c.output(), m * k + k, k, n);
    const Tensor gu = unpack(g, 0, m, k), gs = unpack(g, m * k, k, 0), gvh = unpack(g, m * k + k, k, n);
    const Tensor v = mT(vh), gv = mT(gvh);
    const Tensor uhgu = skew(mm(mT(u), gu)), vhgv = skew(mm(mT(v), gv));
    const Tensor s2 = ops::mul(s, s);
    const Tensor eye = eye_mask(uhgu);
    const Tensor e = ops::add(ops::sub(ops::unsqueeze(s2, -2), ops::unsqueeze(s2, -1)), eye);
    Tensor inner = ops::div(ops::add(ops::mul(uhgu, ops::unsqueeze(s, -2)), ops::mul(ops::unsqueeze(s, -1), vhgv)), e);
    inner = ops::add(ops::mul(inner, ops::sub(num(1, g), eye)), diag_embed(gs, uhgu));
    if (m > k) {
      const Tensor gu_sinv = ops::div(gu, ops::unsqueeze(s, -2));
      const Tensor left = ops::add(mm(u, inner), ops::sub(gu_sinv, mm(u, mm(mT(u), gu_sinv))));
      return {mm(left, vh)};
    }
    if (n > k) {
      const Tensor sinv_gvh = ops::div(mT(gv), ops::unsqueeze(s, -1));
      const Tensor right = ops::add(mm(inner, vh), ops::sub(sinv_gvh, mm(mm(sinv_gvh, v), vh)));
      return {mm(u, right)};
    }
    return {mm(u, mm(inner, vh))};
  });
}

// The convolution and pool ops of spatial rank R (2: NCHW, 3: NCDHW): one
// row of op kinds per rank, so the 2-D and 3-D rules are the same code.
struct SpatialOps {
  OpKind conv, conv_backward_input, conv_backward_weight, max_pool, max_pool_backward, avg_pool, avg_pool_backward,
      adaptive_avg_pool, adaptive_avg_pool_backward;
};
template <size_t R>
constexpr SpatialOps kSpatialOps = R == 2 ? SpatialOps{OpKind::kConv2d,
                                                       OpKind::kConv2dBackwardInput,
                                                       OpKind::kConv2dBackwardWeight,
                                                       OpKind::kMaxPool2d,
                                                       OpKind::kMaxPool2dBackward,
                                                       OpKind::kAvgPool2d,
                                                       OpKind::kAvgPool2dBackward,
                                                       OpKind::kAdaptiveAvgPool2d,
                                                       OpKind::kAdaptiveAvgPool2dBackward}
                                          : SpatialOps{OpKind::kConv3d,
                                                       OpKind::kConv3dBackwardInput,
                                                       OpKind::kConv3dBackwardWeight,
                                                       OpKind::kMaxPool3d,
                                                       OpKind::kMaxPool3dBackward,
                                                       OpKind::kAvgPool3d,
                                                       OpKind::kAvgPool3dBackward,
                                                       OpKind::kAdaptiveAvgPool3d,
                                                       OpKind::kAdaptiveAvgPool3dBackward};

// The spatial dims of an [N, C, ...] shape.
Shape spatial_dims(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

// A conv's attrs plus `name` (the size a backward op gives back).
Attrs conv_attrs(const Ctx& c, const char* name, Shape size) {
  return Attrs{{"stride", c.attrs.get_ints("stride")},
               {"padding", c.attrs.get_ints("padding")},
               {"dilation", c.attrs.get_ints("dilation")},
               {"groups", c.attrs.get_int("groups")},
               {name, std::move(size)}};
}

// Convolution and pooling. The backward ops carry the forward's attrs plus
// the size they give back.
template <size_t R> void add_spatial_rules(Table& t) {
  constexpr SpatialOps k = kSpatialOps<R>;
  set(t, k.conv, kInputs, [](const Ctx& c, const Tensor& g) -> Grads {
    constexpr SpatialOps ops_ = kSpatialOps<R>;
    return {
        c.needs(0)
            ? ops::apply(ops_.conv_backward_input, {g, in1(c)}, conv_attrs(c, "input_size", spatial_dims(c.shape(0))))
            : Tensor(),
        c.needs(1)
            ? ops::apply(ops_.conv_backward_weight, {in0(c), g}, conv_attrs(c, "kernel_size", spatial_dims(c.shape(1))))
            : Tensor()};
  });
  // The transposed convolution (conv_transpose2d): linear in each
  // operand; its adjoint in the "grad" operand is the conv with the same
  // attrs, and in the weight the weight gradient of the conv whose input
  // is g and whose output gradient is that operand.
  set(t, k.conv_backward_input, kInputs, [](const Ctx& c, const Tensor& g) -> Grads {
    constexpr SpatialOps ops_ = kSpatialOps<R>;
    Attrs attrs = conv_attrs(c, "kernel_size", spatial_dims(c.shape(1)));
    return {c.needs(0) ? ops::apply(ops_.conv, {g, in1(c)},
                                    {{"stride", c.attrs.get_ints("stride")},
                                     {"padding", c.attrs.get_ints("padding")},
                                     {"dilation", c.attrs.get_ints("dilation")},
                                     {"groups", c.attrs.get_int("groups")}})
                       : Tensor(),
            c.needs(1) ? ops::apply(ops_.conv_backward_weight, {g, in0(c)}, attrs) : Tensor()};
  });
  set(t, k.max_pool, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::apply(kSpatialOps<R>.max_pool_backward, {g, in0(c)}, c.attrs)};
  });
  set(t, k.avg_pool, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::apply(kSpatialOps<R>.avg_pool_backward, {g},
                       {{"kernel_size", c.attrs.get_ints("kernel_size")},
                        {"stride", c.attrs.get_ints("stride")},
                        {"padding", c.attrs.get_ints("padding")},
                        {"ceil_mode", c.attrs.get_bool("ceil_mode")},
                        {"count_include_pad", c.attrs.get_bool("count_include_pad")},
                        {"divisor", c.attrs.get_int("divisor")},
                        {"input_size", spatial_dims(c.shape(0))}})};
  });
  set(t, k.adaptive_avg_pool, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::apply(kSpatialOps<R>.adaptive_avg_pool_backward, {g}, {{"input_size", spatial_dims(c.shape(0))}})};
  });
}

// layer_norm's gradients in differentiable ops, for a create_graph pass
// (its kernels have no derivative of their own): over the last `dims` dims,
// xhat = (x - mean) * rstd, dx = rstd * (gw - mean(gw) - xhat * mean(gw *
// xhat)) with gw = g * weight, dweight = sum over rows of g * xhat, dbias =
// sum of g.
Grads layer_norm_composite_gradients(const Ctx& c, const Tensor& g) {
  const bool weight = c.attrs.get_bool("weight"), bias = c.attrs.get_bool("bias");
  const int64_t dims = c.attrs.get_int("dims");
  const Tensor& x = in0(c);
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  std::vector<int64_t> norm_dims, row_dims;
  for (int64_t d = 0; d < rank; ++d) (d >= rank - dims ? norm_dims : row_dims).push_back(d);
  const Tensor mean = ops::mean(x, norm_dims, true);
  const Tensor centered = ops::sub(x, mean);
  const Tensor var = ops::mean(ops::mul(centered, centered), norm_dims, true);
  const Tensor rstd = ops::rsqrt(ops::add(var, num(c.attrs.get_double("eps"), x)));
  const Tensor xhat = ops::mul(centered, rstd);
  const Tensor gw = weight ? ops::mul(g, in1(c)) : g;
  Grads out{c.needs(0) ? ops::mul(rstd, ops::sub(ops::sub(gw, ops::mean(gw, norm_dims, true)),
                                                 ops::mul(xhat, ops::mean(ops::mul(gw, xhat), norm_dims, true))))
                       : Tensor()};
  const auto over_rows = [&](const Tensor& v) { return row_dims.empty() ? v : ops::sum(v, row_dims); };
  if (weight) out.push_back(c.needs(1) ? over_rows(ops::mul(g, xhat)) : Tensor());
  if (bias) out.push_back(c.needs(weight ? 2 : 1) ? over_rows(g) : Tensor());
  return out;
}

// The pooling attrs of an average pool over `kernel`: for the adjoints below.
Attrs avg_pool_attrs(const Ctx& c, bool count_include_pad, int64_t divisor) {
  return Attrs{{"kernel_size", c.attrs.get_ints("kernel_size")}, {"stride", c.attrs.get_ints("stride")},
               {"padding", c.attrs.get_ints("padding")},         {"ceil_mode", c.attrs.get_bool("ceil_mode")},
               {"count_include_pad", count_include_pad},         {"divisor", divisor}};
}

// Gradient kernels that are linear (or bilinear) in their operands, so a
// create_graph pass can differentiate through them: their adjoints are the
// forward ops again. Both spatial ranks.
template <size_t R> void add_second_order_rules(Table& t) {
  constexpr SpatialOps k = kSpatialOps<R>;
  // The weight gradient of (x, g): <dW(x, g), G> = <conv(x, G), g> =
  // <x, conv_backward_input(g, G)>.
  set(t, k.conv_backward_weight, kInputs, [](const Ctx& c, const Tensor& gw) -> Grads {
    constexpr SpatialOps ops_ = kSpatialOps<R>;
    return {c.needs(0) ? ops::apply(ops_.conv_backward_input, {in1(c), gw},
                                    conv_attrs(c, "input_size", spatial_dims(c.shape(0))))
                       : Tensor(),
            c.needs(1) ? ops::apply(ops_.conv, {in0(c), gw},
                                    {{"stride", c.attrs.get_ints("stride")},
                                     {"padding", c.attrs.get_ints("padding")},
                                     {"dilation", c.attrs.get_ints("dilation")},
                                     {"groups", c.attrs.get_int("groups")}})
                       : Tensor()};
  });
  // avg_pool's gradient spreads g over the windows: its adjoint averages them.
  set(t, k.avg_pool_backward, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::apply(kSpatialOps<R>.avg_pool, {g},
                       avg_pool_attrs(c, c.attrs.get_bool("count_include_pad"), c.attrs.get_int("divisor")))};
  });
  // max_pool's gradient puts each window's g at the window's argmax: for
  // windows that do not overlap (stride = kernel, no dilation), its adjoint
  // takes each window's G at that argmax, a window sum (an average pool with
  // divisor 1) of G masked to the argmaxes (the forward's own backward of
  // ones). x's derivative is zero almost everywhere. Overlapping windows
  // would count a position for several windows: refused, by name.
  set(t, k.max_pool_backward, kInput1, [](const Ctx& c, const Tensor& gg) -> Grads {
    const auto& kernel = c.attrs.get_ints("kernel_size");
    const auto& stride = c.attrs.get_ints("stride");
    const auto& dilation = c.attrs.get_ints("dilation");
    if (kernel != stride || std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d != 1; })) {
      throw EngineError("backward with create_graph=True: the gradient of this graph runs " +
                        std::string(op_name(kSpatialOps<R>.max_pool_backward)) +
                        " over overlapping or dilated windows (kernel " + shape_str(kernel) + ", stride " +
                        shape_str(stride) +
                        "), which has no derivative of its own here; windows that do not overlap (stride = "
                        "kernel_size) have one");
    }
    const Tensor ones = ops::expand(num(1, gg), c.shape(0));
    const Tensor argmax = ops::apply(kSpatialOps<R>.max_pool_backward, {ones, in1(c)}, c.attrs);
    return {
        c.needs(0) ? ops::apply(kSpatialOps<R>.avg_pool, {ops::mul(gg, argmax)}, avg_pool_attrs(c, true, 1)) : Tensor(),
        Tensor()};
  });
  set(t, k.adaptive_avg_pool_backward, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::apply(kSpatialOps<R>.adaptive_avg_pool, {g}, {{"output_size", spatial_dims(c.shape(0))}})};
  });
}

Table make_table() {
  Table t{};
  // The engine casts each gradient back to its input's dtype.
  set(t, OpKind::kCast, kNothing, [](const Ctx&, const Tensor& g) -> Grads { return {g}; });
  set(t, OpKind::kAdd, kNothing, [](const Ctx&, const Tensor& g) -> Grads { return {g, g}; });
  set(t, OpKind::kSub, kNothing, [](const Ctx&, const Tensor& g) -> Grads { return {g, ops::neg(g)}; });
  set(t, OpKind::kMul, kInputs, [](const Ctx& c, const Tensor& g) -> Grads {
    return {c.needs(0) ? ops::mul(g, in1(c)) : Tensor(), c.needs(1) ? ops::mul(g, in0(c)) : Tensor()};
  });
  // d(a/b)/db = -a/b^2 = -out/b.
  set(t, OpKind::kDiv, kInput1AndOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    return {c.needs(0) ? ops::div(g, in1(c)) : Tensor(),
            c.needs(1) ? ops::neg(ops::div(ops::mul(g, c.output()), in1(c))) : Tensor()};
  });
  // Masks as PyTorch's: a zero exponent has no base gradient (avoids 0 * inf),
  // and the exponent gradient is zero where the base is 0 and the exponent >= 0.
  set(t, OpKind::kPow, kInputsAndOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor& b = in1(c);
    Tensor ga, gb;
    if (c.needs(0)) {
      const Tensor d = ops::mul(b, ops::pow(a, ops::sub(b, num(1, b))));
      ga = ops::where(ops::eq(b, num(0, b)), num(0, g), ops::mul(g, d));
    }
    if (c.needs(1)) {
      const Tensor zero_base = ops::logical_and(ops::eq(a, num(0, a)), ops::ge(b, num(0, b)));
      gb = ops::where(zero_base, num(0, g), ops::mul(g, ops::mul(c.output(), ops::log(a))));
    }
    return {ga, gb};
  });
  set(t, OpKind::kMaximum, kInputs, [](const Ctx& c, const Tensor& g) { return extreme_pair(c, g, true); });
  set(t, OpKind::kMinimum, kInputs, [](const Ctx& c, const Tensor& g) { return extreme_pair(c, g, false); });
  set(t, OpKind::kWhere, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& cond = in0(c);
    return {Tensor(), zeros_where_not(cond, g), ops::where(cond, num(0, g), g)};
  });
  set(t, OpKind::kNeg, kNothing, [](const Ctx&, const Tensor& g) -> Grads { return {ops::neg(g)}; });
  set(t, OpKind::kAbs, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor sign = ops::sub(as_mask(ops::gt(a, num(0, a)), a), as_mask(ops::lt(a, num(0, a)), a));
    return {ops::mul(g, sign)};
  });
  set(t, OpKind::kExp, kOutput, [](const Ctx& c, const Tensor& g) -> Grads { return {ops::mul(g, c.output())}; });
  set(t, OpKind::kLog, kInput0, [](const Ctx& c, const Tensor& g) -> Grads { return {ops::div(g, in0(c))}; });
  set(t, OpKind::kLog1p, kInput0,
      [](const Ctx& c, const Tensor& g) -> Grads { return {ops::div(g, ops::add(in0(c), num(1, in0(c))))}; });
  set(t, OpKind::kSqrt, kOutput,
      [](const Ctx& c, const Tensor& g) -> Grads { return {ops::div(g, ops::mul(c.output(), num(2, c.output())))}; });
  // d(x^-1/2) = -1/2 x^-3/2 = -1/2 out^3.
  set(t, OpKind::kRsqrt, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output();
    return {ops::mul(g, ops::mul(ops::mul(y, ops::mul(y, y)), num(-0.5, y)))};
  });
  set(t, OpKind::kSin, kInput0, [](const Ctx& c, const Tensor& g) -> Grads { return {ops::mul(g, ops::cos(in0(c)))}; });
  set(t, OpKind::kCos, kInput0,
      [](const Ctx& c, const Tensor& g) -> Grads { return {ops::neg(ops::mul(g, ops::sin(in0(c))))}; });
  set(t, OpKind::kTanh, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output();
    return {ops::mul(g, ops::sub(num(1, y), ops::mul(y, y)))};
  });
  // erf'(x) = 2/sqrt(pi) exp(-x^2).
  // d atan = 1/(1 + x^2); d asin = 1/sqrt(1 - x^2), d acos its negative;
  // atan2(y, x): d/dy = x/(x^2 + y^2), d/dx = -y/(x^2 + y^2).
  set(t, OpKind::kAtan, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    return {ops::div(g, ops::add(ops::mul(a, a), num(1, a)))};
  });
  set(t, OpKind::kAsin, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    return {ops::mul(g, ops::rsqrt(ops::sub(num(1, a), ops::mul(a, a))))};
  });
  set(t, OpKind::kAcos, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    return {ops::neg(ops::mul(g, ops::rsqrt(ops::sub(num(1, a), ops::mul(a, a)))))};
  });
  set(t, OpKind::kAtan2, kInputs, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor &y = in0(c), &x = in1(c);
    const Tensor scale = ops::div(g, ops::add(ops::mul(x, x), ops::mul(y, y)));
    return {c.needs(0) ? ops::mul(scale, x) : Tensor(), c.needs(1) ? ops::neg(ops::mul(scale, y)) : Tensor()};
  });
  set(t, OpKind::kErf, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    return {ops::mul(g, ops::mul(ops::exp(ops::neg(ops::mul(a, a))), num(M_2_SQRTPI, a)))};
  });
  set(t, OpKind::kSigmoid, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output();
    return {ops::mul(g, ops::mul(y, ops::sub(num(1, y), y)))};
  });
  set(t, OpKind::kRelu, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    return {zeros_where_not(ops::gt(c.output(), num(0, c.output())), g)};
  });
  set(t, OpKind::kLeakyRelu, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    return {ops::where(ops::gt(a, num(0, a)), g, ops::mul(g, num(c.attrs.get_double("negative_slope"), g)))};
  });
  // gelu'(x) = Phi(x) + x phi(x), phi the standard normal density.
  set(t, OpKind::kGelu, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor cdf = ops::mul(ops::add(ops::erf(ops::mul(a, num(M_SQRT1_2, a))), num(1, a)), num(0.5, a));
    const Tensor pdf = ops::mul(ops::exp(ops::mul(ops::mul(a, a), num(-0.5, a))), num(0.5 * M_2_SQRTPI * M_SQRT1_2, a));
    return {ops::mul(g, ops::add(cdf, ops::mul(a, pdf)))};
  });
  // silu'(x) = s (1 + x (1 - s)), s = sigmoid(x).
  set(t, OpKind::kSilu, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor s = ops::sigmoid(a);
    return {ops::mul(g, ops::mul(s, ops::add(num(1, a), ops::mul(a, ops::sub(num(1, a), s)))))};
  });
  set(t, OpKind::kSoftplus, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor scaled = ops::mul(a, num(c.attrs.get_double("beta"), a));
    return {ops::where(ops::gt(scaled, num(c.attrs.get_double("threshold"), a)), g, ops::mul(g, ops::sigmoid(scaled)))};
  });
  // Inside [min, max] (bounds included) the gradient passes, as in PyTorch.
  set(t, OpKind::kClamp, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor inside = ops::logical_and(ops::ge(a, num(c.attrs.get_double("min"), a)),
                                           ops::le(a, num(c.attrs.get_double("max"), a)));
    return {zeros_where_not(inside, g)};
  });
  // Batch dims that were broadcast are summed down by the engine.
  set(t, OpKind::kMatmul, kInputs, [](const Ctx& c, const Tensor& g) -> Grads {
    return {c.needs(0) ? ops::matmul(g, ops::transpose(in1(c), -2, -1)) : Tensor(),
            c.needs(1) ? ops::matmul(ops::transpose(in0(c), -2, -1), g) : Tensor()};
  });
  // Convolution, pooling, normalization, dropout. The backward ops carry
  // the forward's attrs plus the size they give back.
  add_spatial_rules<2>(t);
  add_spatial_rules<3>(t);
  add_second_order_rules<2>(t);
  add_second_order_rules<3>(t);
  set(t, OpKind::kReshape, kNothing,
      [](const Ctx& c, const Tensor& g) -> Grads { return {ops::reshape(g, c.shape(0))}; });
  set(t, OpKind::kPermute, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    const auto& dims = c.attrs.get_ints("dims");
    std::vector<int64_t> inverse(dims.size());
    const auto rank = static_cast<int64_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i)
      inverse[static_cast<size_t>((dims[i] + rank) % rank)] = static_cast<int64_t>(i);
    return {ops::permute(g, inverse)};
  });
  set(t, OpKind::kExpand, kNothing, [](const Ctx&, const Tensor& g) -> Grads { return {g}; });
  set(t, OpKind::kSum, kNothing, [](const Ctx& c, const Tensor& g) -> Grads { return {unreduce(g, c)}; });
  set(t, OpKind::kMean, kNothing,
      [](const Ctx& c, const Tensor& g) -> Grads { return {ops::div(unreduce(g, c), num(reduced_count(c), g))}; });
  // d prod / d x_i = the product of the others, exact with zeros: with no
  // zero in the reduced slice it is prod / x_i; with one zero, the zero gets
  // the product of the rest and the others 0; with two or more, all 0.
  set(t, OpKind::kProd, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const auto& dims = c.attrs.get_ints("dims");
    const Tensor is_zero = ops::eq(a, num(0, a));
    const Tensor zeros = unreduce(ops::sum(as_mask(is_zero, a), dims, c.attrs.get_bool("keepdim")), c);
    const Tensor rest = unreduce(ops::prod(ops::where(is_zero, num(1, a), a), dims, c.attrs.get_bool("keepdim")), c);
    const Tensor no_zero = ops::eq(zeros, num(0, zeros));
    const Tensor one_zero = ops::eq(zeros, num(1, zeros));
    const Tensor safe = ops::where(is_zero, num(1, a), a);
    const Tensor others = ops::where(is_zero, ops::where(one_zero, rest, num(0, a)),
                                     ops::where(no_zero, ops::div(rest, safe), num(0, a)));
    return {ops::mul(unreduce(g, c), others)};
  });
  set(t, OpKind::kAmax, kInput0AndOutput, amax_amin);
  set(t, OpKind::kAmin, kInput0AndOutput, amax_amin);
  set(t, OpKind::kVar, kInput0, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor centered = ops::sub(a, ops::mean(a, c.attrs.get_ints("dims"), /*keepdim=*/true));
    const double scale = 2.0 / std::max(0.0, reduced_count(c) - c.attrs.get_double("correction"));
    return {ops::mul(unreduce(g, c), ops::mul(centered, num(scale, a)))};
  });
  set(t, OpKind::kLogsumexp, kInput0AndOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::mul(unreduce(g, c), ops::exp(ops::sub(in0(c), unreduce(c.output(), c))))};
  });
  // softmax: y (g - sum(g y)); log_softmax: g - softmax sum(g), both along dim.
  set(t, OpKind::kSoftmax, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output();
    const Tensor gy = ops::mul(g, y);
    return {ops::sub(gy, ops::mul(y, ops::sum(gy, {c.attrs.get_int("dim")}, /*keepdim=*/true)))};
  });
  set(t, OpKind::kLogSoftmax, kOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output();
    return {ops::sub(g, ops::mul(ops::exp(y), ops::sum(g, {c.attrs.get_int("dim")}, /*keepdim=*/true)))};
  });
  // layer_norm: the input's gradient one op; the weight's and the bias's
  // (the sums over rows of g * xhat and of g) one more, whose [2, ...]
  // result they are the two rows of.
  set(t, OpKind::kLayerNorm, kInputs, [](const Ctx& c, const Tensor& g) -> Grads {
    const bool weight = c.attrs.get_bool("weight"), bias = c.attrs.get_bool("bias");
    const int64_t dims = c.attrs.get_int("dims");
    const double eps = c.attrs.get_double("eps");
    if (building_higher_order()) return layer_norm_composite_gradients(c, g);
    std::vector<Tensor> operands{g, in0(c)};
    if (weight) operands.push_back(in1(c));
    Grads out{c.needs(0)
                  ? ops::apply(OpKind::kLayerNormBackward, operands, {{"dims", dims}, {"eps", eps}, {"weight", weight}})
                  : Tensor()};
    const bool need_w = weight && c.needs(1), need_b = bias && c.needs(weight ? 2 : 1);
    Tensor params;
    if (need_w || need_b)
      params = ops::apply(OpKind::kLayerNormParamGrads, {g, in0(c)}, {{"dims", dims}, {"eps", eps}});
    const auto row = [&](int64_t i, size_t input) {
      const Shape& shape = c.shape(input);
      return ops::reshape(ops::narrow(params, 0, i, 1), std::vector<int64_t>(shape.begin(), shape.end()));
    };
    if (weight) out.push_back(need_w ? row(0, 1) : Tensor());
    if (bias) out.push_back(need_b ? row(1, weight ? 2 : 1) : Tensor());
    return out;
  });
  // d loss_i / d input[i, c] = -[c == target_i] for the targets not ignored;
  // mean divides by their count.
  set(t, OpKind::kNllLoss, kInput1, [](const Ctx& c, const Tensor& g) -> Grads {
    // Only the input's shape is needed (g has its dtype): the log-probs are not a saved value.
    const Tensor& target = in1(c);
    // The kernel has no derivative of its own: a create_graph pass composes.
    if ((g.dtype() == DType::kFloat32 || g.dtype() == DType::kFloat64) && settings::nll_backward_kernel() &&
        !building_higher_order()) {
      // One kernel; the composite below (for the dtypes it has none for, or
      // LAZYSCOPE_NLL_BACKWARD_KERNEL=0) computes the same values.
      return {ops::apply(OpKind::kNllLossBackward, {g, target},
                         {{"reduction", c.attrs.get_int("reduction")},
                          {"ignore_index", c.attrs.get_int("ignore_index")},
                          {"classes", c.shape(0)[1]}}),
              Tensor()};
    }
    const Tensor kept = ops::ne(target, ops::wrapped_int(c.attrs.get_int("ignore_index"), target.device()));
    const Tensor safe = ops::where(kept, target, ops::scalar(0, DType::kInt64, target.device()));
    const Tensor picked = ops::mul(ops::cast(ops::one_hot(safe, c.shape(0)[1]), g.dtype()),
                                   ops::unsqueeze(as_mask(kept, g), 1));
    const int64_t reduction = c.attrs.get_int("reduction");
    Tensor scale = reduction == 0 ? ops::unsqueeze(g, 1) : g;
    if (reduction == 1) scale = ops::div(scale, ops::sum(as_mask(kept, g)));
    return {ops::neg(ops::mul(picked, scale)), Tensor()};
  });
  // attention: one attention_backward kernel reading the forward's saved
  // probabilities (the tail of its output) gives dq, dk and dv: packed as
  // q, k, v were, or one after the other, each a contiguous slice
  // reshaped (views in a compiled program). The mask gets no gradient (the
  // front end takes the composed path for a mask that requires one).
  set(t, OpKind::kAttention, kInputsAndOutput, [](const Ctx& c, const Tensor& g) -> Grads {
    const bool packed = c.shape(0).size() == 5;
    const size_t tensors = packed ? 1 : 3;
    std::vector<Tensor> operands;
    for (size_t i = 0; i < tensors; ++i) operands.push_back(c.input(i));
    operands.push_back(output_head_gradient(g, c));
    operands.push_back(c.output());
    const Tensor grads = ops::apply(OpKind::kAttentionBackward, std::move(operands), c.attrs);
    Grads out;
    if (packed) {
      out.push_back(grads);
    } else {
      int64_t start = 0;
      for (size_t i = 0; i < 3; ++i) {
        const int64_t n = numel(c.shape(i));
        out.push_back(c.needs(i) ? ops::reshape(ops::narrow(grads, 0, start, n), c.shape(i)) : Tensor());
        start += n;
      }
    }
    if (c.num_inputs() > tensors) out.push_back(Tensor());
    return out;
  });
  set(t, OpKind::kAttentionBackward, kNothing, [](const Ctx&, const Tensor&) -> Grads {
    throw EngineError(
        "attention_backward has no gradient: a second derivative through the fused attention "
        "is not supported (LAZYSCOPE_FUSED_ATTENTION=0 composes it from matmul and softmax)");
  });
  // cat: each operand's slice of the gradient.
  set(t, OpKind::kCat, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    const auto dim = wrap_dim(c.attrs.get_int("dim"), g.shape().size(), "cat");
    Grads out;
    int64_t start = 0;
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      const int64_t n = c.shape(i)[static_cast<size_t>(dim)];
      out.push_back(c.needs(i) ? ops::narrow(g, dim, start, n) : Tensor());
      start += n;
    }
    return out;
  });
  set(t, OpKind::kSlice, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::apply(OpKind::kSliceBackward, {g},
                       {{"shape", c.shape(0)},
                        {"starts", c.attrs.get_ints("starts")},
                        {"ends", c.attrs.get_ints("ends")},
                        {"steps", c.attrs.get_ints("steps")}})};
  });
  set(t, OpKind::kSliceBackward, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::slice(g, c.attrs.get_ints("starts"), c.attrs.get_ints("ends"), c.attrs.get_ints("steps"))};
  });
  // index_select: scatter-add into zeros of the input's shape (repeated indices add up).
  set(t, OpKind::kIndexSelect, kInput1, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor zeros = ops::expand(num(0, g), c.shape(0));
    return {ops::index_add(zeros, c.attrs.get_int("dim"), in1(c), g), Tensor()};
  });
  set(t, OpKind::kIndexAdd, kInput1, [](const Ctx& c, const Tensor& g) -> Grads {
    return {g, Tensor(), c.needs(2) ? ops::index_select(g, c.attrs.get_int("dim"), in1(c)) : Tensor()};
  });
  add_index_rules(t);
  add_linalg_rules(t);
  // Rounding is piecewise constant: zero gradient, as in PyTorch.
  for (OpKind op : {OpKind::kSign, OpKind::kFloor, OpKind::kCeil, OpKind::kRound, OpKind::kTrunc}) {
    set(t, op, kNothing, [](const Ctx& c, const Tensor& g) -> Grads { return {zeros_of(c.shape(0), g)}; });
  }
  set(t, OpKind::kFloorDivide, kNothing, [](const Ctx& c, const Tensor& g) -> Grads {
    return {zeros_of(c.shape(0), g), zeros_of(c.shape(1), g)};
  });
  // a - b * q with q = floor(a / b) (remainder) or trunc(a / b) (fmod), q locally constant.
  set(t, OpKind::kRemainder, kInputs, [](const Ctx& c, const Tensor& g) -> Grads {
    return {g, c.needs(1) ? ops::neg(ops::mul(g, ops::floor_divide(in0(c), in1(c)))) : Tensor()};
  });
  set(t, OpKind::kFmod, kInputs, [](const Ctx& c, const Tensor& g) -> Grads {
    return {g, c.needs(1) ? ops::neg(ops::mul(g, ops::trunc(ops::div(in0(c), in1(c))))) : Tensor()};
  });
  // A cross-replica op: its gradient would be another collective every
  // replica must issue in the same order, which a per-replica backward pass
  // cannot promise. Gradients are reduced after backward (optimizer_step).
  set(t, OpKind::kAllReduce, kNothing, [](const Ctx&, const Tensor&) -> Grads {
    throw EngineError(
        "all_reduce has no gradient: backward reached an all_reduce of a tensor that requires grad. "
        "Reduce gradients after backward (lazy_model.optimizer_step / reduce_gradients), or "
        "all_reduce a detached tensor");
  });
  return t;
}

const Table& table() {
  static const Table t = make_table();
  return t;
}

}  // namespace

SavedUse saved_use(OpKind op) { return table()[static_cast<size_t>(op)].use; }

GradRule grad_rule(OpKind op) { return table()[static_cast<size_t>(op)].rule; }

}  // namespace lazyscope::autograd
