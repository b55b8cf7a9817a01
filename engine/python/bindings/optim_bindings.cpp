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
  struct Weight {
    bool number;  // a Python float (others are converted per use: Shared::like)
    double value;
    Shared scalar;
  };
  std::vector<Weight> weight_scalars;
  const auto weight_of = [&](const py::object& w) -> Shared& {
    const bool number = PyFloat_Check(w.ptr());
    const double value = number ? PyFloat_AS_DOUBLE(w.ptr()) : 0.0;
    for (Weight& known : weight_scalars) {
      if (number && known.number && known.value == value) return known.scalar;
    }
    weight_scalars.push_back({number, value, Shared(w)});
    return weight_scalars.back().scalar;
  };
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
      add_scaled_(buf, g, weight_of((*weights)[i]));  // .add_(g, alpha=weight)
      g = nesterov ? ops::add(g, ops::mul(buf, mom.like(buf))) : buf;
    }
    add_scaled_(p, g, lr);  // p.add_(g, alpha=-lr)
  }
}

}  // namespace

void bind_optim(py::module_& m) {
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
