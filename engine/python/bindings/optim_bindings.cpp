// The optimizers' update of a whole parameter group in one call from Python
// (PyTorch's foreach / fused optimizers). The per-parameter Python loop of
// lazyscope.optim traced ~5 ops per parameter, each a Python -> C++ crossing
// with its argument conversions and an in-place wrapper: ~15 us per
// parameter of an SGD step with momentum, a quarter of an MLP step's time
// outside its program. Here the same ops are traced in the same order, with
// the same operands (Python numbers become the same wrapped scalars through
// `operand`), so the graph and its numerics are those of the Python loop;
// source lines are the user's (the source provider skips the package's own
// frames, and no frame of this file is a Python frame).
#include <pybind11/stl.h>

#include <deque>
#include <optional>
#include <vector>

#include "bindings/tensor_bindings.h"
#include "core/error.h"
#include "tensor/ops.h"
#include "tensor/views.h"

namespace py = pybind11;

namespace lazyscope::python {
namespace {

// `operand(like, v)` as promotion leaves it in an op with `like`: a Python
// float beside a floating tensor is made in that tensor's dtype at once, the
// value promote_operands would give the float64 number (the same cast
// kernel), so the op needs no conversion and takes trace_directly's path.
Tensor scalar_like(const Tensor& like, const py::handle& v) {
  if (PyFloat_Check(v.ptr()) && is_floating(like.dtype())) {
    Tensor s = ops::scalar(PyFloat_AS_DOUBLE(v.ptr()), like.dtype(), like.device());
    s.impl()->wrapped_number = true;
    return s;
  }
  return operand(like, v);
}

// One hyper-parameter's scalar, made once per (dtype, device) of the
// tensors it meets and shared by every parameter's update: the Python loop
// made a graph input per parameter and use (18 for the MLP's 6 parameters
// with momentum, each two buffer allocations and a leaf), this path 3. The
// values are the same, so the numerics are; the graph has fewer inputs.
// Keyed by role, not by value: two hyper-parameters that happen to be
// equal (a scheduler's lr meeting the weight decay) stay two inputs, so the
// graph's structure never depends on the values (no recompile).
class Shared {
 public:
  explicit Shared(py::handle value) : value_(value) {}
  Tensor like(const Tensor& t) {
    if (!PyFloat_Check(value_.ptr())) return operand(t, value_);  // as the Python expression: not shared
    for (const Made& m : made_) {
      if (m.dtype == t.dtype() && m.device == t.device()) return m.scalar;
    }
    made_.push_back({t.dtype(), t.device(), scalar_like(t, value_)});
    return made_.back().scalar;
  }

 private:
  struct Made {
    DType dtype;
    Device device;
    Tensor scalar;
  };
  py::handle value_;
  std::vector<Made> made_;
};

// One Shared scalar per distinct Python float among per-parameter values
// (SGD's buffer weights: a new buffer's differs; Adam's bias corrections
// depend on each parameter's step count: one value while every parameter
// has stepped as often, more when one started late). Other numbers are
// converted per use, as Shared does.
class SharedByValue {
 public:
  Shared& of(const py::object& v) {
    const bool number = PyFloat_Check(v.ptr());
    const double value = number ? PyFloat_AS_DOUBLE(v.ptr()) : 0.0;
    for (Entry& known : known_) {
      if (number && known.number && known.value == value) return known.scalar;
    }
    known_.push_back({number, value, Shared(v)});
    return known_.back().scalar;
  }

 private:
  struct Entry {
    bool number;
    double value;
    Shared scalar;
  };
  std::deque<Entry> known_;  // stable addresses: of() hands out references
};

// t.add_(other, alpha=alpha) as the Tensor method traces it.
void add_scaled_(const Tensor& t, const Tensor& other, Shared& alpha) {
  views::inplace(t, "add_", [&](const Tensor& before) {
    const Tensor& rhs = other.impl() == t.impl() ? before : other;
    return ops::add(before, ops::mul(rhs, alpha.like(rhs)));
  });
}

// torch.optim.SGD's rule over one parameter group. `bufs` (momentum != 0)
// are the momentum buffers, one per parameter, and `weights` the gradient's
// weight in each buffer's update (1 - dampening; 1 on a buffer's first step,
// whose zero buffer then takes the gradient itself). The numbers are Python
// objects so that they become the scalars the Python expressions made.
void sgd_step(const std::vector<Tensor>& params, const std::optional<std::vector<Tensor>>& bufs,
              const std::optional<std::vector<py::object>>& weights, const py::object& neg_lr,
              const py::object& momentum, const py::object& weight_decay, bool nesterov, bool maximize) {
  const bool with_momentum = bufs.has_value();
  if (with_momentum && (bufs->size() != params.size() || !weights || weights->size() != params.size())) {
    throw EngineError("SGD: " + std::to_string(params.size()) + " parameters but " + std::to_string(bufs->size()) +
                      " momentum buffers and " + std::to_string(weights ? weights->size() : 0) + " weights");
  }
  Shared lr(neg_lr), mom(momentum), wd(weight_decay);
  // The weights: 1 - dampening, or 1 for a buffer's first step; one scalar
  // per distinct value (a step where some buffers are new has two).
  SharedByValue weight;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (maximize) g = ops::neg(g);                                          // g = -g
    if (!weight_decay.is_none()) g = ops::add(g, ops::mul(p, wd.like(p)));  // g + p * wd
    if (with_momentum) {
      const Tensor& buf = (*bufs)[i];
      views::inplace(buf, "mul_", [&](const Tensor& before) {  // buf.mul_(momentum)
        return ops::mul(before, mom.like(buf));
      });
      add_scaled_(buf, g, weight.of((*weights)[i]));  // .add_(g, alpha=weight)
      g = nesterov ? ops::add(g, ops::mul(buf, mom.like(buf))) : buf;
    }
    add_scaled_(p, g, lr);  // p.add_(g, alpha=-lr)
  }
}

// t.mul_(s) as the Tensor method traces it.
void scale_(const Tensor& t, Shared& s) {
  views::inplace(t, "mul_", [&](const Tensor& before) { return ops::mul(before, s.like(before)); });
}

// torch.optim.Adam's rule (AdamW's with `decay`, the decoupled factor
// 1 - lr * wd) over one parameter group, the ops lazyscope.optim.Adam._update
// traces per parameter, in its order. Per parameter: its moments, and the
// numbers of its step count: `inv_bias2_sqrt` = 1 / sqrt(1 - beta2^step) and
// `neg_step_size` = -lr / (1 - beta1^step).
void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& exp_avgs,
               const std::vector<Tensor>& exp_avg_sqs, const std::optional<std::vector<Tensor>>& max_exp_avg_sqs,
               const std::vector<py::object>& inv_bias2_sqrts, const std::vector<py::object>& neg_step_sizes,
               const py::object& beta1, const py::object& one_minus_beta1, const py::object& beta2,
               double one_minus_beta2, const py::object& eps, const py::object& weight_decay, const py::object& decay,
               bool maximize) {
  const size_t n = params.size();
  if (exp_avgs.size() != n || exp_avg_sqs.size() != n || (max_exp_avg_sqs && max_exp_avg_sqs->size() != n) ||
      inv_bias2_sqrts.size() != n || neg_step_sizes.size() != n) {
    throw EngineError("Adam: " + std::to_string(n) + " parameters but " + std::to_string(exp_avgs.size()) +
                      " exp_avg, " + std::to_string(exp_avg_sqs.size()) + " exp_avg_sq, " +
                      std::to_string(max_exp_avg_sqs ? max_exp_avg_sqs->size() : n) + " max_exp_avg_sq and " +
                      std::to_string(inv_bias2_sqrts.size()) + "/" + std::to_string(neg_step_sizes.size()) +
                      " bias corrections");
  }
  Shared b1(beta1), w1(one_minus_beta1), b2(beta2), e(eps), wd(weight_decay), dec(decay);
  SharedByValue inv_bias2;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& p = params[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (maximize) g = ops::neg(g);                                          // g = -g
    if (!decay.is_none()) scale_(p, dec);                                   // p.mul_(1 - lr * wd)
    if (!weight_decay.is_none()) g = ops::add(g, ops::mul(p, wd.like(p)));  // g + p * wd
    const Tensor& exp_avg = exp_avgs[i];
    const Tensor& exp_avg_sq = exp_avg_sqs[i];
    scale_(exp_avg, b1);                                                // exp_avg.mul_(beta1)
    add_scaled_(exp_avg, g, w1);                                        // .add_(g, alpha=1 - beta1)
    scale_(exp_avg_sq, b2);                                             // exp_avg_sq.mul_(beta2)
    views::inplace(exp_avg_sq, "addcmul_", [&](const Tensor& before) {  // .addcmul_(g, g, value=1 - beta2)
      return ops::add(before, ops::mul(ops::mul(g, g), ops::wrapped_float(one_minus_beta2, before.device())));
    });
    Tensor second = exp_avg_sq;
    if (max_exp_avg_sqs) {
      second = (*max_exp_avg_sqs)[i];
      const Tensor larger = ops::maximum(second, exp_avg_sq);
      views::inplace(second, "copy_", [&](const Tensor& before) {  // second.copy_(maximum(second, exp_avg_sq))
        return ops::expand(ops::cast(larger, before.dtype()), before.shape());
      });
    }
    const Tensor root = ops::sqrt(second);
    Tensor denom = ops::mul(root, inv_bias2.of(inv_bias2_sqrts[i]).like(root));  // second.sqrt() * (1 / bias2_sqrt)
    denom = ops::add(denom, e.like(denom));                                      // .add_(eps), on a temporary
    const py::object& value = neg_step_sizes[i];
    views::inplace(p, "addcdiv_", [&](const Tensor& before) {  // p.addcdiv_(exp_avg, denom, value=-lr / bias1)
      return ops::add(before,
                      ops::mul(ops::div(exp_avg, denom), ops::wrapped_float(value.cast<double>(), before.device())));
    });
  }
}

}  // namespace

void bind_optim(py::module_& m) {
  m.def("_adam_step", &adam_step, py::arg("params"), py::arg("exp_avgs"), py::arg("exp_avg_sqs"),
        py::arg("max_exp_avg_sqs"), py::arg("inv_bias2_sqrts"), py::arg("neg_step_sizes"), py::arg("beta1"),
        py::arg("one_minus_beta1"), py::arg("beta2"), py::arg("one_minus_beta2"), py::arg("eps"),
        py::arg("weight_decay"), py::arg("decay"), py::arg("maximize"),
        "torch.optim.Adam's (AdamW's) update of one parameter group, traced in one call (lazyscope.optim.Adam's "
        "foreach path): params with no gradient are skipped; max_exp_avg_sqs is None without amsgrad, "
        "weight_decay None unless Adam's coupled decay applies, decay (1 - lr * wd) None unless AdamW's does.");
  m.def("_sgd_step", &sgd_step, py::arg("params"), py::arg("momentum_buffers"), py::arg("weights"), py::arg("neg_lr"),
        py::arg("momentum"), py::arg("weight_decay"), py::arg("nesterov"), py::arg("maximize"),
        "torch.optim.SGD's update of one parameter group, traced in one call (lazyscope.optim.SGD's foreach path): "
        "params with no gradient are skipped; momentum_buffers and weights are None without momentum, and "
        "weight_decay None when it is 0.");
  m.def(
      "_clear_grads",
      [](const std::vector<Tensor>& params) {
        for (Tensor p : params) {  // a handle: set_grad writes the shared tensor
          if (p.grad().defined()) p.set_grad(Tensor());
        }
      },
      py::arg("params"), "Sets every parameter's .grad to None (Optimizer.zero_grad's default) in one call.");
}

}  // namespace lazyscope::python
