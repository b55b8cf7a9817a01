// torch.nn.functional's convolution, pooling, normalization and dropout, with
// PyTorch's signatures: spatial arguments are an int or a pair.
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>

#include "bindings/tensor_bindings.h"
#include "core/error.h"
#include "tensor/ops.h"

namespace py = pybind11;

namespace lazyscope::python {
namespace {

// An int (every dim) or a sequence of N ints, as PyTorch's _pair / _triple
// (a one-element sequence repeats too).
template <size_t N> std::array<int64_t, N> tuple_arg(const char* op, const char* name, const py::handle& v) {
  std::array<int64_t, N> out{};
  if (py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v)) {
    out.fill(v.cast<int64_t>());
    return out;
  }
  if (py::isinstance<py::sequence>(v) && !py::isinstance<py::str>(v)) {
    const auto values = v.cast<std::vector<int64_t>>();
    if (values.size() == N) {
      std::copy(values.begin(), values.end(), out.begin());
      return out;
    }
    if (values.size() == 1) {
      out.fill(values[0]);
      return out;
    }
  }
  throw py::type_error(std::string(op) + ": " + name + " must be an int or " + (N == 2 ? "a pair" : "a triple") +
                       " of ints, got " + py::repr(v).cast<std::string>());
}

ops::Size2 pair_arg(const char* op, const char* name, const py::handle& v) { return tuple_arg<2>(op, name, v); }
ops::Size3 triple_arg(const char* op, const char* name, const py::handle& v) { return tuple_arg<3>(op, name, v); }

template <size_t N>
std::optional<std::array<int64_t, N>> optional_tuple(const char* op, const char* name, const py::object& v) {
  if (v.is_none()) return std::nullopt;
  // PyTorch's max_pool2d(stride=[]) means "the kernel size", as None does.
  if (py::isinstance<py::sequence>(v) && !py::isinstance<py::str>(v) && py::len(v) == 0) return std::nullopt;
  return tuple_arg<N>(op, name, v);
}

Tensor optional(const py::object& t) { return t.is_none() ? Tensor() : t.cast<Tensor>(); }

// A conv's padding: an int, N ints, "valid" (none) or "same" (stride 1;
// the output keeps the input's size, which needs an even total padding here).
template <size_t N>
std::array<int64_t, N> conv_padding(const char* op, const py::object& padding, const Tensor& weight,
                                    std::array<int64_t, N> stride, std::array<int64_t, N> dilation) {
  if (!py::isinstance<py::str>(padding)) return tuple_arg<N>(op, "padding", padding);
  const auto mode = padding.cast<std::string>();
  if (mode == "valid") return {};
  if (mode != "same")
    throw py::value_error(std::string(op) + ": invalid padding string '" + mode + "', expected 'valid' or 'same'");
  if (std::any_of(stride.begin(), stride.end(), [](int64_t s) { return s != 1; }))
    throw py::value_error(std::string(op) + ": padding='same' is not supported for strided convolutions");
  const Shape& w = weight.shape();
  if (w.size() != N + 2) {
    throw ShapeError(std::string(op) + ": expected a " + std::to_string(N + 2) + "-D weight, got " + shape_str(w));
  }
  std::array<int64_t, N> out{};
  for (size_t d = 0; d < N; ++d) {
    const int64_t total = dilation[d] * (w[d + 2] - 1);
    if (total % 2 != 0) {
      throw EngineError(std::string(op) + ": padding='same' with kernel " + shape_str(Shape(w.begin() + 2, w.end())) +
                        " and dilation " + shape_str(Shape(dilation.begin(), dilation.end())) +
                        " needs uneven padding, which is not supported");
    }
    out[d] = total / 2;
  }
  return out;
}

// adaptive_avg_pool's output_size: an int or N values, PyTorch's None
// keeping that dim of the input.
template <size_t N>
std::array<int64_t, N> adaptive_size(const char* op, const Tensor& input, const py::object& output_size) {
  std::array<int64_t, N> size{};
  const Shape& s = input.shape();
  const py::sequence items = py::isinstance<py::int_>(output_size)
                                 ? py::sequence(N == 2 ? py::make_tuple(output_size, output_size)
                                                       : py::make_tuple(output_size, output_size, output_size))
                                 : output_size.cast<py::sequence>();
  if (py::len(items) != N || s.size() < N) {
    throw py::type_error(std::string(op) + ": output_size must be an int or " + (N == 2 ? "a pair" : "a triple") +
                         ", got " + py::repr(output_size).cast<std::string>());
  }
  for (size_t d = 0; d < N; ++d) {
    const py::object v = items[d];
    size[d] = v.is_none() ? s[s.size() - N + d] : v.cast<int64_t>();
  }
  return size;
}

}  // namespace

void bind_nn(py::module_& m) {
  m.def(
      "conv2d",
      [](const Tensor& input, const Tensor& weight, const py::object& bias, const py::object& stride,
         const py::object& padding, const py::object& dilation, int64_t groups) {
        const auto s = pair_arg("conv2d", "stride", stride);
        const auto d = pair_arg("conv2d", "dilation", dilation);
        return ops::conv2d(input, weight, optional(bias), s, conv_padding<2>("conv2d", padding, weight, s, d), d,
                           groups);
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("groups") = 1);
  m.def(
      "conv_transpose2d",
      [](const Tensor& input, const Tensor& weight, const py::object& bias, const py::object& stride,
         const py::object& padding, const py::object& output_padding, int64_t groups, const py::object& dilation) {
        const char* op = "conv_transpose2d";
        return ops::conv_transpose2d(input, weight, optional(bias), pair_arg(op, "stride", stride),
                                     pair_arg(op, "padding", padding), pair_arg(op, "output_padding", output_padding),
                                     groups, pair_arg(op, "dilation", dilation));
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("output_padding") = 0, py::arg("groups") = 1, py::arg("dilation") = 1);
  m.def(
      "max_pool2d",
      [](const Tensor& input, const py::object& kernel_size, const py::object& stride, const py::object& padding,
         const py::object& dilation, bool ceil_mode, bool return_indices) {
        if (return_indices) throw EngineError("max_pool2d: return_indices=True is not supported");
        return ops::max_pool2d(input, pair_arg("max_pool2d", "kernel_size", kernel_size),
                               optional_tuple<2>("max_pool2d", "stride", stride),
                               pair_arg("max_pool2d", "padding", padding), pair_arg("max_pool2d", "dilation", dilation),
                               ceil_mode);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("ceil_mode") = false, py::arg("return_indices") = false);
  m.def(
      "avg_pool2d",
      [](const Tensor& input, const py::object& kernel_size, const py::object& stride, const py::object& padding,
         bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
        return ops::avg_pool2d(input, pair_arg("avg_pool2d", "kernel_size", kernel_size),
                               optional_tuple<2>("avg_pool2d", "stride", stride),
                               pair_arg("avg_pool2d", "padding", padding), ceil_mode, count_include_pad,
                               divisor_override);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
      py::arg("ceil_mode") = false, py::arg("count_include_pad") = true, py::arg("divisor_override") = py::none());
  m.def(
      "adaptive_avg_pool2d",
      [](const Tensor& input, const py::object& output_size) {
        return ops::adaptive_avg_pool2d(input, adaptive_size<2>("adaptive_avg_pool2d", input, output_size));
      },
      py::arg("input"), py::arg("output_size"));
  m.def(
      "conv3d",
      [](const Tensor& input, const Tensor& weight, const py::object& bias, const py::object& stride,
         const py::object& padding, const py::object& dilation, int64_t groups) {
        const auto s = triple_arg("conv3d", "stride", stride);
        const auto d = triple_arg("conv3d", "dilation", dilation);
        return ops::conv3d(input, weight, optional(bias), s, conv_padding<3>("conv3d", padding, weight, s, d), d,
                           groups);
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("groups") = 1);
  m.def(
      "conv_transpose3d",
      [](const Tensor& input, const Tensor& weight, const py::object& bias, const py::object& stride,
         const py::object& padding, const py::object& output_padding, int64_t groups, const py::object& dilation) {
        const char* op = "conv_transpose3d";
        return ops::conv_transpose3d(
            input, weight, optional(bias), triple_arg(op, "stride", stride), triple_arg(op, "padding", padding),
            triple_arg(op, "output_padding", output_padding), groups, triple_arg(op, "dilation", dilation));
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
      py::arg("output_padding") = 0, py::arg("groups") = 1, py::arg("dilation") = 1);
  m.def(
      "max_pool3d",
      [](const Tensor& input, const py::object& kernel_size, const py::object& stride, const py::object& padding,
         const py::object& dilation, bool ceil_mode, bool return_indices) {
        const char* op = "max_pool3d";
        if (return_indices) throw EngineError("max_pool3d: return_indices=True is not supported");
        return ops::max_pool3d(input, triple_arg(op, "kernel_size", kernel_size),
                               optional_tuple<3>(op, "stride", stride), triple_arg(op, "padding", padding),
                               triple_arg(op, "dilation", dilation), ceil_mode);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("ceil_mode") = false, py::arg("return_indices") = false);
  m.def(
      "avg_pool3d",
      [](const Tensor& input, const py::object& kernel_size, const py::object& stride, const py::object& padding,
         bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
        const char* op = "avg_pool3d";
        return ops::avg_pool3d(input, triple_arg(op, "kernel_size", kernel_size),
                               optional_tuple<3>(op, "stride", stride), triple_arg(op, "padding", padding), ceil_mode,
                               count_include_pad, divisor_override);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
      py::arg("ceil_mode") = false, py::arg("count_include_pad") = true, py::arg("divisor_override") = py::none());
  m.def(
      "adaptive_avg_pool3d",
      [](const Tensor& input, const py::object& output_size) {
        return ops::adaptive_avg_pool3d(input, adaptive_size<3>("adaptive_avg_pool3d", input, output_size));
      },
      py::arg("input"), py::arg("output_size"));
  m.def(
      "layer_norm",
      [](const Tensor& input, const py::object& normalized_shape, const py::object& weight, const py::object& bias,
         double eps) {
        const auto shape = py::isinstance<py::int_>(normalized_shape)
                               ? std::vector<int64_t>{normalized_shape.cast<int64_t>()}
                               : normalized_shape.cast<std::vector<int64_t>>();
        return ops::layer_norm(input, shape, optional(weight), optional(bias), eps);
      },
      py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(), py::arg("bias") = py::none(),
      py::arg("eps") = 1e-5);
  m.def(
      "batch_norm",
      [](const Tensor& input, const py::object& running_mean, const py::object& running_var, const py::object& weight,
         const py::object& bias, bool training, double momentum, double eps) {
        return ops::batch_norm(input, optional(running_mean), optional(running_var), optional(weight), optional(bias),
                               training, momentum, eps);
      },
      py::arg("input"), py::arg("running_mean"), py::arg("running_var"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("training") = false, py::arg("momentum") = 0.1, py::arg("eps") = 1e-5);
  // inplace=True would need aliasing views, which the engine does not have.
  const auto no_inplace = [](const char* op, bool inplace) {
    if (inplace) throw EngineError(std::string(op) + ": inplace=True is not supported");
  };
  m.def(
      "dropout",
      [no_inplace](const Tensor& input, double p, bool training, bool inplace) {
        no_inplace("dropout", inplace);
        return ops::dropout(input, p, training);
      },
      py::arg("input"), py::arg("p") = 0.5, py::arg("training") = true, py::arg("inplace") = false);
  m.def(
      "dropout2d",
      [no_inplace](const Tensor& input, double p, bool training, bool inplace) {
        no_inplace("dropout2d", inplace);
        return ops::dropout2d(input, p, training);
      },
      py::arg("input"), py::arg("p") = 0.5, py::arg("training") = true, py::arg("inplace") = false);
  m.def(
      "attention",
      [](const Tensor& q, const py::object& k, const py::object& v, const py::object& mask, const py::object& scale,
         bool causal) {
        std::vector<Tensor> operands{q};
        if (k.is_none() != v.is_none()) throw py::value_error("attention: give both k and v, or neither (q packed)");
        if (!k.is_none()) {
          operands.push_back(k.cast<Tensor>());
          operands.push_back(v.cast<Tensor>());
        }
        if (!mask.is_none()) operands.push_back(mask.cast<Tensor>());
        // None: 1/sqrt(D), as scaled_dot_product_attention's default.
        const double factor = scale.is_none()
                                  ? 1.0 / std::sqrt(static_cast<double>(q.shape().empty() ? 1 : q.shape().back()))
                                  : scale.cast<double>();
        const Tensor both = ops::apply(OpKind::kAttention, std::move(operands),
                                       {{"scale", factor}, {"causal", static_cast<int64_t>(causal)}});
        // O, the output's head (a view); its tail, the probabilities, is for the gradient.
        const Shape& qs = q.shape();
        const Shape out_shape = qs.size() == 5 ? Shape{qs[0], qs[1], qs[3], qs[4]}
                                               : Shape{qs[0], qs[1], qs[2], v.cast<Tensor>().shape()[3]};
        return ops::reshape(ops::narrow(both, 0, 0, numel(out_shape)), out_shape);
      },
      py::arg("q"), py::arg("k") = py::none(), py::arg("v") = py::none(), py::arg("mask") = py::none(),
      py::arg("scale") = py::none(), py::arg("causal") = false,
      "softmax(q k^T * scale + mask) v per (batch, head) in one kernel: q [N, Lq, H, D], k [N, Lk, H, D], "
      "v [N, Lk, H, Dv] -> [N, Lq, H, Dv], or q a packed [N, L, 3, H, D] self-attention q/k/v with k and v "
      "None; a bool mask keeps True, a float one is added.");
  // The linear-algebra ops (lazyscope/linalg.py shapes their operands and
  // unpacks their outputs): one entry, the op by its table name.
  m.def(
      "_linalg",
      [](const std::string& name, const std::vector<Tensor>& operands, const std::map<std::string, bool>& flags) {
        static const std::map<std::string, OpKind> kOps{
            {"solve", OpKind::kLinalgSolve},     {"inv", OpKind::kLinalgInv},
            {"slogdet", OpKind::kLinalgSlogdet}, {"cholesky", OpKind::kLinalgCholesky},
            {"eigh", OpKind::kLinalgEigh},       {"solve_triangular", OpKind::kLinalgSolveTriangular},
            {"qr", OpKind::kLinalgQr},           {"svd", OpKind::kLinalgSvd},
        };
        const auto op = kOps.find(name);
        if (op == kOps.end()) throw py::value_error("_linalg: unknown op '" + name + "'");
        // Attribute names are string literals (attrs.h): the flags by name.
        static constexpr const char* kFlags[] = {"transpose", "upper", "unitriangular", "complete", "full"};
        std::vector<Attr> items;
        for (const auto& [key, value] : flags) {
          const auto* known = std::find_if(std::begin(kFlags), std::end(kFlags),
                                           [&](const char* f) { return key == f; });
          if (known == std::end(kFlags)) throw py::value_error("_linalg: unknown flag '" + key + "'");
          items.push_back({*known, value});
        }
        Attrs attrs;
        if (items.size() == 1) attrs = Attrs{items[0]};
        if (items.size() == 2) attrs = Attrs{items[0], items[1]};
        if (items.size() == 3) attrs = Attrs{items[0], items[1], items[2]};
        if (items.size() > 3) throw py::value_error("_linalg: at most three flags");
        return ops::apply(op->second, operands, std::move(attrs));
      },
      py::arg("op"), py::arg("operands"), py::arg("flags") = std::map<std::string, bool>{});
  m.def("manual_seed", &ops::manual_seed, py::arg("seed"), "Seeds the engine's rng (dropout masks).");
  m.def("_rng_state", &ops::rng_state, "The engine rng's (seed, offset).");
  m.def("_set_rng_state", &ops::set_rng_state, py::arg("seed"), py::arg("offset"),
        "Puts back an engine rng state from _rng_state.");
}

}  // namespace lazyscope::python
