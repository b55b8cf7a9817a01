// The gradient rules: one table, OpKind -> rule, each written in the
// engine's own ops so that it runs on either device (and is traced on a
// lazy one). A rule returns one gradient per input, of the output's shape
// or the input's; autograd.cpp sums broadcast dims down (sum_to_size).
#include <array>
#include <cmath>

#include "autograd/autograd.h"
#include "tensor/ops.h"

namespace lazyscope::autograd {
namespace {

using Grads = std::vector<Tensor>;
using Ctx = SavedContext;

// A constant of `like`'s dtype on its device (a graph input, never baked in).
Tensor num(double v, const Tensor& like) { return ops::scalar(v, like.dtype(), like.device()); }
// A bool condition as 0/1 in `like`'s dtype.
Tensor as_mask(const Tensor& cond, const Tensor& like) { return ops::cast(cond, like.dtype()); }
Tensor zeros_where_not(const Tensor& cond, const Tensor& g) { return ops::where(cond, g, num(0, g)); }
const Tensor& in0(const Ctx& c) { return c.inputs[0]; }
const Tensor& in1(const Ctx& c) { return c.inputs[1]; }

// A reduction's output gradient brought back to the input's shape: the
// reduced dims restored as 1 (when not kept), then expanded.
Tensor unreduce(const Tensor& g, const Ctx& c) {
  const Shape& in_shape = in0(c).shape();
  const auto reduced = reduced_dims(in_shape, c.attrs.get_ints("dims"), "backward");
  const Tensor kept = c.attrs.get_bool("keepdim") ? g : ops::reshape(g, reduced_shape(in_shape, reduced, true));
  return ops::expand(kept, in_shape);
}

double reduced_count(const Ctx& c) {
  const Shape& in_shape = in0(c).shape();
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

Grads amax_amin(const Ctx& c, const Tensor& g) {
  // Evenly among the elements equal to the extreme, as PyTorch's amax does.
  const Tensor mask = as_mask(ops::eq(in0(c), unreduce(c.output, c)), in0(c));
  const Tensor count = ops::sum(mask, c.attrs.get_ints("dims"), /*keepdim=*/true);
  return {ops::div(ops::mul(unreduce(g, c), mask), count)};
}

using Table = std::array<GradRule, static_cast<size_t>(OpKind::kNumOps)>;

void set(Table& t, OpKind op, GradRule rule) { t[static_cast<size_t>(op)] = rule; }

Table make_table() {
  Table t{};
  // The engine casts each gradient back to its input's dtype.
  set(t, OpKind::kCast, [](const Ctx&, const Tensor& g) -> Grads { return {g}; });
  set(t, OpKind::kAdd, [](const Ctx&, const Tensor& g) -> Grads { return {g, g}; });
  set(t, OpKind::kSub, [](const Ctx&, const Tensor& g) -> Grads { return {g, ops::neg(g)}; });
  set(t, OpKind::kMul, [](const Ctx& c, const Tensor& g) -> Grads {
    return {c.needs(0) ? ops::mul(g, in1(c)) : Tensor(), c.needs(1) ? ops::mul(g, in0(c)) : Tensor()};
  });
  // d(a/b)/db = -a/b^2 = -out/b.
  set(t, OpKind::kDiv, [](const Ctx& c, const Tensor& g) -> Grads {
    return {c.needs(0) ? ops::div(g, in1(c)) : Tensor(),
            c.needs(1) ? ops::neg(ops::div(ops::mul(g, c.output), in1(c))) : Tensor()};
  });
  // Masks as PyTorch's: a zero exponent has no base gradient (avoids 0 * inf),
  // and the exponent gradient is zero where the base is 0 and the exponent >= 0.
  set(t, OpKind::kPow, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor& b = in1(c);
    Tensor ga, gb;
    if (c.needs(0)) {
      const Tensor d = ops::mul(b, ops::pow(a, ops::sub(b, num(1, b))));
      ga = ops::where(ops::eq(b, num(0, b)), num(0, g), ops::mul(g, d));
    }
    if (c.needs(1)) {
      const Tensor zero_base = ops::logical_and(ops::eq(a, num(0, a)), ops::ge(b, num(0, b)));
      gb = ops::where(zero_base, num(0, g), ops::mul(g, ops::mul(c.output, ops::log(a))));
    }
    return {ga, gb};
  });
  set(t, OpKind::kMaximum, [](const Ctx& c, const Tensor& g) { return extreme_pair(c, g, true); });
  set(t, OpKind::kMinimum, [](const Ctx& c, const Tensor& g) { return extreme_pair(c, g, false); });
  set(t, OpKind::kWhere, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& cond = in0(c);
    return {Tensor(), zeros_where_not(cond, g), ops::where(cond, num(0, g), g)};
  });
  set(t, OpKind::kNeg, [](const Ctx&, const Tensor& g) -> Grads { return {ops::neg(g)}; });
  set(t, OpKind::kAbs, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor sign = ops::sub(as_mask(ops::gt(a, num(0, a)), a), as_mask(ops::lt(a, num(0, a)), a));
    return {ops::mul(g, sign)};
  });
  set(t, OpKind::kExp, [](const Ctx& c, const Tensor& g) -> Grads { return {ops::mul(g, c.output)}; });
  set(t, OpKind::kLog, [](const Ctx& c, const Tensor& g) -> Grads { return {ops::div(g, in0(c))}; });
  set(t, OpKind::kLog1p, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::div(g, ops::add(in0(c), num(1, in0(c))))};
  });
  set(t, OpKind::kSqrt, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::div(g, ops::mul(c.output, num(2, c.output)))};
  });
  // d(x^-1/2) = -1/2 x^-3/2 = -1/2 out^3.
  set(t, OpKind::kRsqrt, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output;
    return {ops::mul(g, ops::mul(ops::mul(y, ops::mul(y, y)), num(-0.5, y)))};
  });
  set(t, OpKind::kSin, [](const Ctx& c, const Tensor& g) -> Grads { return {ops::mul(g, ops::cos(in0(c)))}; });
  set(t, OpKind::kCos, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::neg(ops::mul(g, ops::sin(in0(c))))};
  });
  set(t, OpKind::kTanh, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output;
    return {ops::mul(g, ops::sub(num(1, y), ops::mul(y, y)))};
  });
  // erf'(x) = 2/sqrt(pi) exp(-x^2).
  set(t, OpKind::kErf, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    return {ops::mul(g, ops::mul(ops::exp(ops::neg(ops::mul(a, a))), num(M_2_SQRTPI, a)))};
  });
  set(t, OpKind::kSigmoid, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output;
    return {ops::mul(g, ops::mul(y, ops::sub(num(1, y), y)))};
  });
  set(t, OpKind::kRelu, [](const Ctx& c, const Tensor& g) -> Grads {
    return {zeros_where_not(ops::gt(c.output, num(0, c.output)), g)};
  });
  set(t, OpKind::kLeakyRelu, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    return {ops::where(ops::gt(a, num(0, a)), g, ops::mul(g, num(c.attrs.get_double("negative_slope"), g)))};
  });
  // gelu'(x) = Phi(x) + x phi(x), phi the standard normal density.
  set(t, OpKind::kGelu, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor cdf = ops::mul(ops::add(ops::erf(ops::mul(a, num(M_SQRT1_2, a))), num(1, a)), num(0.5, a));
    const Tensor pdf = ops::mul(ops::exp(ops::mul(ops::mul(a, a), num(-0.5, a))), num(0.5 * M_2_SQRTPI * M_SQRT1_2, a));
    return {ops::mul(g, ops::add(cdf, ops::mul(a, pdf)))};
  });
  // silu'(x) = s (1 + x (1 - s)), s = sigmoid(x).
  set(t, OpKind::kSilu, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor s = ops::sigmoid(a);
    return {ops::mul(g, ops::mul(s, ops::add(num(1, a), ops::mul(a, ops::sub(num(1, a), s)))))};
  });
  set(t, OpKind::kSoftplus, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor scaled = ops::mul(a, num(c.attrs.get_double("beta"), a));
    return {ops::where(ops::gt(scaled, num(c.attrs.get_double("threshold"), a)), g, ops::mul(g, ops::sigmoid(scaled)))};
  });
  // Inside [min, max] (bounds included) the gradient passes, as in PyTorch.
  set(t, OpKind::kClamp, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor inside = ops::logical_and(ops::ge(a, num(c.attrs.get_double("min"), a)),
                                           ops::le(a, num(c.attrs.get_double("max"), a)));
    return {zeros_where_not(inside, g)};
  });
  // Batch dims that were broadcast are summed down by the engine.
  set(t, OpKind::kMatmul, [](const Ctx& c, const Tensor& g) -> Grads {
    return {c.needs(0) ? ops::matmul(g, ops::transpose(in1(c), -2, -1)) : Tensor(),
            c.needs(1) ? ops::matmul(ops::transpose(in0(c), -2, -1), g) : Tensor()};
  });
  // Convolution, pooling, normalization, dropout. The backward ops carry
  // the forward's attrs plus the size they give back.
  set(t, OpKind::kConv2d, [](const Ctx& c, const Tensor& g) -> Grads {
    const Shape& x = in0(c).shape();
    const Shape& w = in1(c).shape();
    const auto with = [&](const char* name, Shape size) {
      return Attrs{{"stride", c.attrs.get_ints("stride")}, {"padding", c.attrs.get_ints("padding")},
                   {"dilation", c.attrs.get_ints("dilation")}, {"groups", c.attrs.get_int("groups")},
                   {name, std::move(size)}};
    };
    return {c.needs(0) ? ops::apply(OpKind::kConv2dBackwardInput, {g, in1(c)}, with("input_size", {x[2], x[3]}))
                       : Tensor(),
            c.needs(1) ? ops::apply(OpKind::kConv2dBackwardWeight, {in0(c), g}, with("kernel_size", {w[2], w[3]}))
                       : Tensor()};
  });
  set(t, OpKind::kMaxPool2d, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::apply(OpKind::kMaxPool2dBackward, {g, in0(c)}, c.attrs)};
  });
  set(t, OpKind::kAvgPool2d, [](const Ctx& c, const Tensor& g) -> Grads {
    const Shape& x = in0(c).shape();
    return {ops::apply(OpKind::kAvgPool2dBackward, {g},
                       {{"kernel_size", c.attrs.get_ints("kernel_size")}, {"stride", c.attrs.get_ints("stride")},
                        {"padding", c.attrs.get_ints("padding")}, {"ceil_mode", c.attrs.get_bool("ceil_mode")},
                        {"count_include_pad", c.attrs.get_bool("count_include_pad")},
                        {"divisor", c.attrs.get_int("divisor")}, {"input_size", Shape{x[2], x[3]}}})};
  });
  set(t, OpKind::kAdaptiveAvgPool2d, [](const Ctx& c, const Tensor& g) -> Grads {
    const Shape& x = in0(c).shape();
    return {ops::apply(OpKind::kAdaptiveAvgPool2dBackward, {g}, {{"input_size", Shape{x[2], x[3]}}})};
  });
  set(t, OpKind::kReshape, [](const Ctx& c, const Tensor& g) -> Grads { return {ops::reshape(g, in0(c).shape())}; });
  set(t, OpKind::kPermute, [](const Ctx& c, const Tensor& g) -> Grads {
    const auto& dims = c.attrs.get_ints("dims");
    std::vector<int64_t> inverse(dims.size());
    const auto rank = static_cast<int64_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) inverse[static_cast<size_t>((dims[i] + rank) % rank)] = static_cast<int64_t>(i);
    return {ops::permute(g, inverse)};
  });
  set(t, OpKind::kExpand, [](const Ctx&, const Tensor& g) -> Grads { return {g}; });
  set(t, OpKind::kSum, [](const Ctx& c, const Tensor& g) -> Grads { return {unreduce(g, c)}; });
  set(t, OpKind::kMean, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::div(unreduce(g, c), num(reduced_count(c), g))};
  });
  // d prod / d x_i = prod / x_i: inputs that contain zeros get NaN or inf
  // (PyTorch special-cases them; not yet here).
  set(t, OpKind::kProd, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::div(ops::mul(unreduce(g, c), unreduce(c.output, c)), in0(c))};
  });
  set(t, OpKind::kAmax, amax_amin);
  set(t, OpKind::kAmin, amax_amin);
  set(t, OpKind::kVar, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& a = in0(c);
    const Tensor centered = ops::sub(a, ops::mean(a, c.attrs.get_ints("dims"), /*keepdim=*/true));
    const double scale = 2.0 / std::max(0.0, reduced_count(c) - c.attrs.get_double("correction"));
    return {ops::mul(unreduce(g, c), ops::mul(centered, num(scale, a)))};
  });
  set(t, OpKind::kLogsumexp, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::mul(unreduce(g, c), ops::exp(ops::sub(in0(c), unreduce(c.output, c))))};
  });
  // softmax: y (g - sum(g y)); log_softmax: g - softmax sum(g), both along dim.
  set(t, OpKind::kSoftmax, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output;
    const Tensor gy = ops::mul(g, y);
    return {ops::sub(gy, ops::mul(y, ops::sum(gy, {c.attrs.get_int("dim")}, /*keepdim=*/true)))};
  });
  set(t, OpKind::kLogSoftmax, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& y = c.output;
    return {ops::sub(g, ops::mul(ops::exp(y), ops::sum(g, {c.attrs.get_int("dim")}, /*keepdim=*/true)))};
  });
  // d loss_i / d input[i, c] = -[c == target_i] for the targets not ignored;
  // mean divides by their count.
  set(t, OpKind::kNllLoss, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor& x = in0(c);
    const Tensor& target = in1(c);
    const Tensor kept = ops::ne(target, ops::wrapped_int(c.attrs.get_int("ignore_index"), target.device()));
    const Tensor safe = ops::where(kept, target, ops::scalar(0, DType::kInt64, target.device()));
    const Tensor picked = ops::mul(ops::cast(ops::one_hot(safe, x.shape()[1]), x.dtype()),
                                   ops::unsqueeze(as_mask(kept, x), 1));
    const int64_t reduction = c.attrs.get_int("reduction");
    Tensor scale = reduction == 0 ? ops::unsqueeze(g, 1) : g;
    if (reduction == 1) scale = ops::div(scale, ops::sum(as_mask(kept, x)));
    return {ops::neg(ops::mul(picked, scale)), Tensor()};
  });
  // cat: each operand's slice of the gradient.
  set(t, OpKind::kCat, [](const Ctx& c, const Tensor& g) -> Grads {
    const auto dim = wrap_dim(c.attrs.get_int("dim"), g.shape().size(), "cat");
    Grads out;
    int64_t start = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const int64_t n = c.inputs[i].shape()[static_cast<size_t>(dim)];
      out.push_back(c.needs(i) ? ops::narrow(g, dim, start, n) : Tensor());
      start += n;
    }
    return out;
  });
  set(t, OpKind::kSlice, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::apply(OpKind::kSliceBackward, {g},
                       {{"shape", in0(c).shape()}, {"starts", c.attrs.get_ints("starts")},
                        {"ends", c.attrs.get_ints("ends")}, {"steps", c.attrs.get_ints("steps")}})};
  });
  set(t, OpKind::kSliceBackward, [](const Ctx& c, const Tensor& g) -> Grads {
    return {ops::slice(g, c.attrs.get_ints("starts"), c.attrs.get_ints("ends"), c.attrs.get_ints("steps"))};
  });
  // index_select: scatter-add into zeros of the input's shape (repeated indices add up).
  set(t, OpKind::kIndexSelect, [](const Ctx& c, const Tensor& g) -> Grads {
    const Tensor zeros = ops::expand(num(0, g), in0(c).shape());
    return {ops::index_add(zeros, c.attrs.get_int("dim"), in1(c), g), Tensor()};
  });
  set(t, OpKind::kIndexAdd, [](const Ctx& c, const Tensor& g) -> Grads {
    return {g, Tensor(), c.needs(2) ? ops::index_select(g, c.attrs.get_int("dim"), in1(c)) : Tensor()};
  });
  return t;
}

}  // namespace

GradRule grad_rule(OpKind op) {
  static const Table table = make_table();
  return table[static_cast<size_t>(op)];
}

}  // namespace lazyscope::autograd
