#include "tensor/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/source_location.h"
#include "metrics/metrics.h"
#include "tensor/ops_internal.h"
#include "tensor/views.h"

// Losses, composed from the elementwise and reduction ops.

namespace lazyscope::ops {
using detail::at_call;
using detail::at_line;

namespace {
Tensor num_like(double v, const Tensor& like) { return scalar(v, like.dtype(), like.device()); }

Tensor reduce_loss(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::kNone: return loss;
    case Reduction::kMean: return mean(loss);
    case Reduction::kSum: return sum(loss);
  }
  return loss;
}

// Integer class targets as int64; a float target is left to the op's check.
Tensor class_targets(const Tensor& target) {
  return is_floating(target.dtype()) || target.dtype() == DType::kBool ? target : cast(target, DType::kInt64);
}
}  // namespace

namespace {
// The class weights as a [C] tensor of the input's dtype; ShapeError otherwise.
Tensor class_weights(const char* op, const Tensor& weight, const Tensor& input, int64_t classes) {
  if (weight.shape().size() != 1 || weight.shape()[0] != classes) {
    throw ShapeError(std::string(op) + ": expected a weight of shape [" + std::to_string(classes) +
                     "] (one per class), got " + shape_str(weight.shape()) + at_line(current_source_location()));
  }
  if (!is_floating(weight.dtype())) {
    throw EngineError(std::string(op) + ": expected a floating point weight, got " +
                      std::string(dtype_name(weight.dtype())) + at_line(current_source_location()));
  }
  return cast(weight, input.dtype());
}

// Per sample, the weight of its target class; 0 for ignored targets. The
// index is clamped into range so that an out-of-range target is reported by
// nll_loss's own check, not by this gather.
Tensor target_weights(const Tensor& weight, const Tensor& target, const Tensor& kept, int64_t classes) {
  const Tensor safe = clamp(where(kept, target, scalar(0, DType::kInt64, target.device())), 0.0,
                            static_cast<double>(classes - 1));
  return where(kept, index_select(weight, 0, safe), scalar(0, weight.dtype(), weight.device()));
}
}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction, int64_t ignore_index,
                const Tensor& weight) {
  const Attrs attrs{{"reduction", static_cast<int64_t>(reduction)}, {"ignore_index", ignore_index}};
  if (input.defined() && target.defined() && input.shape().size() == 1 && target.shape().empty()) {
    const Tensor out = nll_loss(unsqueeze(input, 0), unsqueeze(class_targets(target), 0), reduction, ignore_index,
                                weight);
    return reduction == Reduction::kNone ? reshape(out, {}) : out;
  }
  if (!weight.defined()) {
    return apply(OpKind::kNllLoss, {input, target.defined() ? class_targets(target) : target}, attrs);
  }
  const Tensor t = class_targets(target);
  // Unweighted per-sample losses first: they check the shapes and the target values.
  const Tensor per = apply(OpKind::kNllLoss, {input, t},
                           {{"reduction", static_cast<int64_t>(Reduction::kNone)}, {"ignore_index", ignore_index}});
  const int64_t classes = input.shape()[1];
  const Tensor w = target_weights(class_weights("nll_loss", weight, input, classes), t,
                                  ne(t, wrapped_int(ignore_index, t.device())), classes);
  const Tensor loss = mul(per, w);
  switch (reduction) {
    case Reduction::kNone: return loss;
    case Reduction::kSum: return sum(loss);
    case Reduction::kMean: return div(sum(loss), sum(w));  // all ignored: 0/0, NaN, as PyTorch
  }
  return loss;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction, int64_t ignore_index,
                     double label_smoothing, const Tensor& weight) {
  if (label_smoothing < 0.0 || label_smoothing > 1.0) {
    throw EngineError("cross_entropy: label_smoothing must be in [0, 1], got " + std::to_string(label_smoothing));
  }
  const Shape& s = input.shape();
  if (s.empty() || s.size() > 2) {
    throw ShapeError("cross_entropy: expected input [N, C] or [C], got " + shape_str(s) +
                     at_line(current_source_location()));
  }
  const int64_t class_dim = s.size() == 2 ? 1 : 0;
  const Tensor logp = log_softmax(input, class_dim);
  const int64_t n_classes = s[static_cast<size_t>(class_dim)];
  const auto classes = static_cast<double>(n_classes);
  const Tensor w = weight.defined() ? class_weights("cross_entropy", weight, logp, n_classes) : Tensor();
  // logp scaled by the class weights (broadcast along the class dim).
  const Tensor weighted_logp = w.defined() ? mul(logp, w) : logp;
  if (is_floating(target.dtype())) {  // class probabilities
    if (target.shape() != s) {
      throw ShapeError("cross_entropy: probability targets must have the input's shape " + shape_str(s) + ", got " +
                       shape_str(target.shape()) + at_line(current_source_location()));
    }
    Tensor p = target;
    if (label_smoothing > 0) {
      p = add(mul(p, num_like(1 - label_smoothing, p)), num_like(label_smoothing / classes, p));
    }
    return reduce_loss(neg(sum(mul(p, weighted_logp), {class_dim})), reduction);
  }
  Tensor loss = nll_loss(logp, target, reduction, ignore_index, w);
  if (label_smoothing <= 0) return loss;
  const Tensor t = class_targets(target);
  const Tensor mask = ne(t, wrapped_int(ignore_index, target.device()));
  Tensor smooth = where(mask, neg(sum(weighted_logp, {class_dim})), num_like(0, logp));
  if (reduction == Reduction::kMean) {
    // Divided as the nll term is: by the weights of the targets kept (their count without weights).
    const Tensor denominator = w.defined() ? sum(target_weights(w, s.size() == 1 ? unsqueeze(t, 0) : t,
                                                                s.size() == 1 ? unsqueeze(mask, 0) : mask, n_classes))
                                           : sum(cast(mask, logp.dtype()));
    smooth = div(sum(smooth), denominator);
  } else if (reduction == Reduction::kSum) {
    smooth = sum(smooth);
  }
  return add(mul(loss, num_like(1 - label_smoothing, loss)), mul(smooth, num_like(label_smoothing / classes, smooth)));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  const Tensor d = sub(input, target);
  return reduce_loss(mul(d, d), reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction) {
  if (input.shape() != target.shape()) {
    throw ShapeError("binary_cross_entropy: target of shape " + shape_str(target.shape()) + " for an input of shape " +
                     shape_str(input.shape()) + at_line(current_source_location()));
  }
  const Tensor log_p = clamp(log(input), -100.0, std::nullopt);
  const Tensor log_q = clamp(log(sub(num_like(1, input), input)), -100.0, std::nullopt);
  Tensor loss = neg(add(mul(target, log_p), mul(sub(num_like(1, target), target), log_q)));
  if (weight.defined()) loss = mul(loss, weight);
  return reduce_loss(loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        Reduction reduction, const Tensor& pos_weight) {
  if (input.shape() != target.shape()) {
    throw ShapeError("binary_cross_entropy_with_logits: target of shape " + shape_str(target.shape()) +
                     " for an input of shape " + shape_str(input.shape()) + at_line(current_source_location()));
  }
  Tensor log_weight = num_like(1, input);
  if (pos_weight.defined()) log_weight = add(num_like(1, input), mul(sub(pos_weight, num_like(1, input)), target));
  Tensor loss = add(mul(sub(num_like(1, target), target), input), mul(log_weight, softplus(neg(input))));
  if (weight.defined()) loss = mul(loss, weight);
  return reduce_loss(loss, reduction);
}

}  // namespace lazyscope::ops
