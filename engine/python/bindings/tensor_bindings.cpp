#include "bindings/tensor_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include "autograd/autograd.h"
#include "core/error.h"
#include "executor/graph_executor.h"
#include "tensor/ops.h"
#include "tensor/upcalls.h"
#include "tensor/views.h"

namespace py = pybind11;

namespace lazyscope::python {
namespace {

DType dtype_of(const py::dtype& dt) {
  switch (dt.kind()) {
    case 'b': return DType::kBool;
    case 'u':
      if (dt.itemsize() == 1) return DType::kUInt8;
      break;
    case 'i':
      if (dt.itemsize() == 4) return DType::kInt32;
      if (dt.itemsize() == 8) return DType::kInt64;
      break;
    case 'f':
      if (dt.itemsize() == 2) return DType::kFloat16;
      if (dt.itemsize() == 4) return DType::kFloat32;
      if (dt.itemsize() == 8) return DType::kFloat64;
      break;
    default: break;
  }
  throw EngineError("unsupported NumPy dtype '" + py::str(static_cast<const py::handle&>(dt)).cast<std::string>() +
                    "'");
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::kBool: return py::dtype("bool");
    case DType::kUInt8: return py::dtype("uint8");
    case DType::kInt32: return py::dtype("int32");
    case DType::kInt64: return py::dtype("int64");
    case DType::kFloat16: return py::dtype("float16");
    case DType::kFloat32: return py::dtype("float32");
    case DType::kFloat64: return py::dtype("float64");
    case DType::kBFloat16: break;
  }
  throw EngineError("bfloat16 tensors have no NumPy dtype; convert to float32 first");
}

// Copies a NumPy array (any strides) into a new buffer on `device`, without
// a Python-level loop: a C-contiguous array is copied once, straight into
// the device's buffer (Tensor::from_host); others are made contiguous first.
Tensor from_numpy(const py::array& source, const std::string& device) {
  py::array array = py::array::ensure(source, py::array::c_style | py::array::forcecast);
  if (!array) throw EngineError("from_numpy: could not convert the input to a contiguous array");
  const DType dtype = dtype_of(array.dtype());
  Shape shape(array.shape(), array.shape() + array.ndim());
  return Tensor::from_host(array.data(), dtype, std::move(shape), parse_device(device));
}

py::array to_numpy(const Tensor& t, pb::SyncCause cause);

// Python numbers need no NumPy dtype: bfloat16 values are read through float32 (exactly).
py::array to_numpy_for_python(const Tensor& t, pb::SyncCause cause) {
  return to_numpy(t.dtype() == DType::kBFloat16 ? t.to(DType::kFloat32) : t, cause);
}

// item() of a one-element tensor of a dtype Python reads directly, as
// NumPy's item() gives it (float, int or bool); nullopt for the others.
std::optional<py::object> item_directly(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kInt64:
    case DType::kInt32:
    case DType::kUInt8:
    case DType::kBool: break;
    default: return std::nullopt;
  }
  const BufferPtr buffer = t.host_buffer(pb::SYNC_CAUSE_ITEM);
  if (buffer->dtype() != t.dtype() || buffer->numel() != 1) return std::nullopt;
  switch (t.dtype()) {
    case DType::kFloat32: return py::float_(static_cast<double>(*buffer->as<float>()));
    case DType::kFloat64: return py::float_(*buffer->as<double>());
    case DType::kInt64: return py::int_(*buffer->as<int64_t>());
    case DType::kInt32: return py::int_(*buffer->as<int32_t>());
    case DType::kUInt8: return py::int_(*buffer->as<uint8_t>());
    case DType::kBool: return py::bool_(*buffer->as<uint8_t>() != 0);
    default: return std::nullopt;
  }
}

py::array to_numpy(const Tensor& t, pb::SyncCause cause) {
  BufferPtr buffer = t.host_buffer(cause);
  if (t.device().is_lazy() && buffer->bytes() && buffer->dtype() == t.dtype()) {
    // Off a lazy device host_buffer() is a fresh copy no one else holds:
    // the array takes it (the capsule keeps it alive) instead of a second
    // copy, which was half of reading a 4 MB result back.
    auto* owner = new BufferPtr(buffer);
    py::capsule keep(owner, [](void* p) { delete static_cast<BufferPtr*>(p); });
    return py::array(numpy_dtype(t.dtype()), t.shape(), buffer->data(), keep);
  }
  // An eager tensor's buffer is its own: copied, so the array never aliases it.
  py::array out(numpy_dtype(t.dtype()), t.shape());
  if (buffer->bytes()) std::memcpy(out.mutable_data(), buffer->data(), buffer->bytes());
  return out;
}

}  // namespace

// The other operand of a Python operator: a tensor, or a Python number that
// becomes a wrapped number on `like`'s device (it promotes like a scalar).
// nullopt for anything else.
std::optional<Tensor> try_operand(const Tensor& like, const py::handle& v) {
  // Python numbers first: a type-flag test each. pybind11's caster, asked
  // first, failed on a number only after looking for a foreign module's
  // type record (a getattr raising and formatting an AttributeError): 40% of
  // tracing `t * 0.9` (callgrind). A Tensor is never a number, so the
  // order changes no answer.
  if (PyBool_Check(v.ptr())) return ops::wrapped_bool(v.ptr() == Py_True, like.device());
  if (PyLong_Check(v.ptr())) return ops::wrapped_int(v.cast<int64_t>(), like.device());
  if (PyFloat_Check(v.ptr())) return ops::wrapped_float(PyFloat_AS_DOUBLE(v.ptr()), like.device());
  // One conversion attempt (tensor_caster.h), where isinstance<Tensor>()
  // and cast<Tensor>() looked Tensor's type up twice.
  py::detail::make_caster<Tensor> caster;
  if (caster.load(v, /*convert=*/false)) return py::detail::cast_op<const Tensor&>(caster);
  if (py::hasattr(v, "dtype") && py::hasattr(v, "item") && py::len(v.attr("shape")) == 0) {
    return try_operand(like, v.attr("item")());  // a NumPy scalar
  }
  return std::nullopt;
}

Tensor operand(const Tensor& like, const py::handle& v) {
  if (auto t = try_operand(like, v)) return *t;
  throw py::type_error("expected a Tensor or a number, got " + py::str(py::type::of(v)).cast<std::string>());
}

namespace {

using Binary = Tensor (*)(const Tensor&, const Tensor&);

// Binds `name` (a Tensor method and a module function) and, when given, the
// operator and its reflected form, all accepting a number on either side.
void bind_binary(py::class_<Tensor>& cls, py::module_& m, const char* name, Binary fn, const char* op = nullptr,
                 const char* rop = nullptr) {
  cls.def(
      name, [fn](const Tensor& a, const py::object& b) { return fn(a, operand(a, b)); }, py::arg("other"));
  m.def(
      name,
      [fn](const py::object& a, const py::object& b) {
        if (py::isinstance<Tensor>(a)) {
          const Tensor ta = a.cast<Tensor>();
          return fn(ta, operand(ta, b));
        }
        const Tensor tb = b.cast<Tensor>();
        return fn(operand(tb, a), tb);
      },
      py::arg("input"), py::arg("other"));
  // Operators answer NotImplemented for other types, so Python tries the
  // other side (and `t == None` is False).
  if (op) {
    cls.def(
        op,
        [fn](const Tensor& a, const py::object& b) -> py::object {
          auto other = try_operand(a, b);
          return other ? py::cast(fn(a, *other)) : py::object(py::reinterpret_borrow<py::object>(Py_NotImplemented));
        },
        py::is_operator());
  }
  if (rop) {
    cls.def(
        rop,
        [fn](const Tensor& a, const py::object& b) -> py::object {
          auto other = try_operand(a, b);
          return other ? py::cast(fn(*other, a)) : py::object(py::reinterpret_borrow<py::object>(Py_NotImplemented));
        },
        py::is_operator());
  }
}

// Tensor.to(...) in PyTorch's forms: to(device), to(dtype), to(device, dtype),
// to(other) and the keywords device= and dtype=.
Tensor to_any(const Tensor& t, const py::args& args, const py::kwargs& kwargs) {
  std::optional<Device> device;
  std::optional<DType> dtype;
  auto take = [&](const py::handle& a) {
    if (a.is_none()) return;
    if (py::isinstance<DType>(a)) {
      dtype = a.cast<DType>();
    } else if (py::isinstance<Device>(a)) {
      device = a.cast<Device>();
    } else if (py::isinstance<py::str>(a)) {
      device = parse_device(a.cast<std::string>());
    } else if (py::isinstance<Tensor>(a)) {
      device = a.cast<Tensor>().device();
      dtype = a.cast<Tensor>().dtype();
    } else {
      throw py::type_error("to(): expected a device, a dtype or a tensor, got " +
                           py::str(py::type::of(a)).cast<std::string>());
    }
  };
  for (const py::handle& a : args) take(a);
  if (kwargs.contains("device")) take(kwargs["device"]);
  if (kwargs.contains("dtype")) take(kwargs["dtype"]);
  Tensor out = t;
  if (device) out = out.to(*device);
  if (dtype) out = out.to(*dtype);
  return out;
}

// Sizes given PyTorch's two ways: reshape(2, 3) or reshape((2, 3)).
std::vector<int64_t> sizes_arg(const py::args& args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) return args[0].cast<std::vector<int64_t>>();
  return args.cast<std::vector<int64_t>>();
}

std::vector<int64_t> dims_arg(const py::object& dim) {
  if (dim.is_none()) return {};
  if (py::isinstance<py::int_>(dim)) return {dim.cast<int64_t>()};
  return dim.cast<std::vector<int64_t>>();
}

// A Python int, or anything with __index__ (NumPy integers), but not bool.
std::optional<int64_t> as_int(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return std::nullopt;
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (!py::isinstance<Tensor>(v) && py::hasattr(v, "__index__")) return v.attr("__index__")().cast<int64_t>();
  return std::nullopt;
}

std::optional<int64_t> slice_part(const py::handle& v) {
  if (v.is_none()) return std::nullopt;
  if (auto i = as_int(v)) return i;
  throw py::type_error("slice indices must be integers or None, got " + py::str(py::type::of(v)).cast<std::string>());
}

// An index tensor from a Python list or NumPy array (bools stay a mask),
// on `like`'s device.
Tensor index_tensor(const Tensor& like, const py::handle& v) {
  py::array array = py::module_::import("numpy").attr("asarray")(v);
  if (array.size() == 0 && array.dtype().kind() == 'f') array = array.attr("astype")("int64");  // [] indexes nothing
  return from_numpy(array, "cpu").to(like.device());
}

// t[key] as a list of items: ints, slices, None, Ellipsis, and index
// tensors (Tensors, lists, NumPy arrays; bool ones are masks).
std::vector<ops::IndexItem> parse_index(const Tensor& t, const py::object& key) {
  const py::tuple items = py::isinstance<py::tuple>(key) ? key.cast<py::tuple>() : py::make_tuple(key);
  std::vector<ops::IndexItem> parsed;
  for (const py::handle& item : items) {
    ops::IndexItem it;
    if (item.is_none()) {
      it.kind = ops::IndexItem::Kind::kNone;
    } else if (item.is(py::ellipsis())) {
      it.kind = ops::IndexItem::Kind::kEllipsis;
    } else if (py::isinstance<py::slice>(item)) {
      it.kind = ops::IndexItem::Kind::kSlice;
      it.start = slice_part(item.attr("start"));
      it.stop = slice_part(item.attr("stop"));
      it.step = slice_part(item.attr("step"));
      if (it.step && *it.step <= 0) throw py::value_error("step must be greater than zero");
    } else if (auto i = as_int(item)) {
      it.kind = ops::IndexItem::Kind::kInt;
      it.value = *i;
    } else if (py::isinstance<Tensor>(item)) {
      it.kind = ops::IndexItem::Kind::kTensor;
      it.tensor = item.cast<Tensor>();
      if (it.tensor.device() != t.device()) it.tensor = it.tensor.to(t.device());
    } else if (py::isinstance<py::list>(item) || py::isinstance<py::array>(item)) {
      it.kind = ops::IndexItem::Kind::kTensor;
      it.tensor = index_tensor(t, item);
    } else {
      throw py::type_error(
          "only integers, slices, None, ..., integer or bool tensors (and lists of them) are valid "
          "indices (got " +
          py::str(item.attr("__class__").attr("__name__")).cast<std::string>() + ")");
    }
    parsed.push_back(std::move(it));
  }
  return parsed;
}

bool has_tensor_item(const std::vector<ops::IndexItem>& items) {
  return std::any_of(items.begin(), items.end(),
                     [](const ops::IndexItem& it) { return it.kind == ops::IndexItem::Kind::kTensor; });
}

// t[key]: basic indexing gives a view (writes reach t); an index tensor gives a copy, as in PyTorch.
Tensor getitem(const Tensor& t, const py::object& key) {
  // x[mask] with a bool tensor: a data-dependent read (see ops::boolean_mask_index).
  if (py::isinstance<Tensor>(key) && key.cast<Tensor>().dtype() == DType::kBool) {
    return ops::boolean_mask_index(t, key.cast<Tensor>());
  }
  const std::vector<ops::IndexItem> items = parse_index(t, key);
  return has_tensor_item(items) ? ops::index(t, items) : views::index(t, items);
}

using UnaryFn = std::function<Tensor(const Tensor&)>;

// A view that reshapes t (view, reshape, squeeze, unsqueeze, flatten): written back by reshaping.
Tensor reshaping_view(const Tensor& t, const UnaryFn& fn) {
  const Shape shape = t.shape();
  return views::make_view(
      t, fn(t), fn, [shape](const Tensor&, const Tensor& v) { return ops::reshape(v, shape); }, "view");
}

// A view by a permutation that is its own inverse (transpose, t, T, mT).
Tensor transposing_view(const Tensor& t, const UnaryFn& fn) {
  return views::make_view(
      t, fn(t), fn, [fn](const Tensor&, const Tensor& v) { return fn(v); }, "transposed view");
}

// Consecutive pieces of t along dim (narrow, split, chunk) as slice views.
std::vector<Tensor> piece_views(const Tensor& t, const std::vector<Tensor>& pieces, int64_t dim) {
  const Shape& s = t.shape();
  const auto d = static_cast<size_t>(wrap_dim(dim, s.size(), "split"));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (const Tensor& piece : pieces) {
    std::vector<int64_t> starts(s.size(), 0), ends(s.begin(), s.end()), steps(s.size(), 1);
    starts[d] = start;
    ends[d] = start + piece.shape()[d];
    start = ends[d];
    out.push_back(views::make_view(
        t, piece, [starts, ends, steps](const Tensor& b) { return ops::slice(b, starts, ends, steps); },
        [starts, ends, steps](const Tensor& b, const Tensor& v) {
          return ops::slice_scatter(b, v, starts, ends, steps);
        },
        "slice"));
  }
  return out;
}

Tensor narrow_view(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  const Tensor piece = ops::narrow(t, dim, start, length);
  if (piece.impl() == t.impl()) return piece;
  const auto d = static_cast<size_t>(wrap_dim(dim, t.shape().size(), "narrow"));
  std::vector<int64_t> starts(t.shape().size(), 0), ends(t.shape().begin(), t.shape().end()),
      steps(t.shape().size(), 1);
  starts[d] = start;
  ends[d] = start + length;
  return views::slice(t, starts, ends, steps);
}

Tensor reverse_dims(const Tensor& t) {
  std::vector<int64_t> dims(t.shape().size());
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(dims.size() - 1 - i);
  return ops::permute(t, dims);
}

ops::Reduction reduction_arg(const char* op, const std::string& reduction, const py::object& size_average,
                             const py::object& reduce) {
  if (!size_average.is_none() || !reduce.is_none()) {
    throw EngineError(std::string(op) + ": size_average and reduce are deprecated and not supported; use reduction=");
  }
  if (reduction == "mean") return ops::Reduction::kMean;
  if (reduction == "sum") return ops::Reduction::kSum;
  if (reduction == "none") return ops::Reduction::kNone;
  throw py::value_error(std::string(op) + ": " + reduction + " is not a valid value for reduction (mean, sum, none)");
}

Tensor optional_tensor(const py::object& t) { return t.is_none() ? Tensor() : t.cast<Tensor>(); }

// torch.nn.functional's losses and one_hot, with PyTorch's signatures.
void bind_losses(py::module_& m) {
  m.def(
      "one_hot",
      [](const Tensor& t, int64_t num_classes) {
        if (num_classes == -1) {  // inferred from the data: reads it (a sync on a lazy device)
          num_classes = t.numel() == 0 ? 0
                                       : to_numpy(ops::amax(t), pb::SYNC_CAUSE_ITEM).attr("item")().cast<int64_t>() + 1;
        }
        return ops::one_hot(t, num_classes);
      },
      py::arg("tensor"), py::arg("num_classes") = -1);
  m.def(
      "nll_loss",
      [](const Tensor& input, const Tensor& target, const py::object& weight, const py::object& size_average,
         int64_t ignore_index, const py::object& reduce, const std::string& reduction) {
        return ops::nll_loss(input, target, reduction_arg("nll_loss", reduction, size_average, reduce), ignore_index,
                             optional_tensor(weight));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("size_average") = py::none(),
      py::arg("ignore_index") = -100, py::arg("reduce") = py::none(), py::arg("reduction") = "mean");
  m.def(
      "cross_entropy",
      [](const Tensor& input, const Tensor& target, const py::object& weight, const py::object& size_average,
         int64_t ignore_index, const py::object& reduce, const std::string& reduction, double label_smoothing) {
        return ops::cross_entropy(input, target, reduction_arg("cross_entropy", reduction, size_average, reduce),
                                  ignore_index, label_smoothing, optional_tensor(weight));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("size_average") = py::none(),
      py::arg("ignore_index") = -100, py::arg("reduce") = py::none(), py::arg("reduction") = "mean",
      py::arg("label_smoothing") = 0.0);
  m.def(
      "mse_loss",
      [](const Tensor& input, const Tensor& target, const py::object& size_average, const py::object& reduce,
         const std::string& reduction) {
        return ops::mse_loss(input, target, reduction_arg("mse_loss", reduction, size_average, reduce));
      },
      py::arg("input"), py::arg("target"), py::arg("size_average") = py::none(), py::arg("reduce") = py::none(),
      py::arg("reduction") = "mean");
  m.def(
      "binary_cross_entropy",
      [](const Tensor& input, const Tensor& target, const py::object& weight, const py::object& size_average,
         const py::object& reduce, const std::string& reduction) {
        return ops::binary_cross_entropy(input, target, optional_tensor(weight),
                                         reduction_arg("binary_cross_entropy", reduction, size_average, reduce));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("size_average") = py::none(),
      py::arg("reduce") = py::none(), py::arg("reduction") = "mean");
  m.def(
      "binary_cross_entropy_with_logits",
      [](const Tensor& input, const Tensor& target, const py::object& weight, const py::object& size_average,
         const py::object& reduce, const std::string& reduction, const py::object& pos_weight) {
        return ops::binary_cross_entropy_with_logits(
            input, target, optional_tensor(weight),
            reduction_arg("binary_cross_entropy_with_logits", reduction, size_average, reduce),
            optional_tensor(pos_weight));
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("size_average") = py::none(),
      py::arg("reduce") = py::none(), py::arg("reduction") = "mean", py::arg("pos_weight") = py::none());
}

// Indexing, scatters, sorting and in-place ops (one block, bound last).
// In-place methods return self, the same Python object; see tensor/views.h
// for what they do to views and autograd.
Tensor value_tensor(const Tensor& like, const py::object& v) {
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v) || py::isinstance<py::array>(v)) {
    return from_numpy(py::module_::import("numpy").attr("asarray")(v), "cpu").to(like.device());
  }
  Tensor t = operand(like, v);
  return t.device() == like.device() || !t.shape().empty() ? t : t.to(like.device());
}

// A scatter's source: a tensor, or a number filling the index's shape.
Tensor scatter_source(const Tensor& self, const Tensor& index, const py::object& src) {
  if (py::isinstance<Tensor>(src)) return src.cast<Tensor>();
  return ops::expand(ops::cast(operand(self, src), self.dtype()), index.shape());
}

Tensor scatter_any(const Tensor& self, int64_t dim, const Tensor& index, const py::object& src,
                   const std::optional<std::string>& reduce) {
  const Tensor source = scatter_source(self, index, src);
  if (!reduce) return ops::scatter(self, dim, index, source);
  if (*reduce == "add") return ops::scatter_add(self, dim, index, source);
  throw py::value_error("scatter: reduce='" + *reduce + "' is not supported (None or 'add')");
}

std::vector<ops::IndexItem> tensor_items(const std::vector<Tensor>& indices) {
  std::vector<ops::IndexItem> items;
  for (const Tensor& i : indices) {
    ops::IndexItem it;
    it.kind = ops::IndexItem::Kind::kTensor;
    it.tensor = i;
    items.push_back(std::move(it));
  }
  return items;
}

// self.op_(...): computes from the snapshot `before`; an operand that is self is the snapshot too.
py::object run_inplace(const py::object& self, const char* op, const std::function<Tensor(const Tensor&)>& compute) {
  views::inplace(self.cast<Tensor>(), op, compute);
  return self;
}

Tensor same_or(const Tensor& self, const Tensor& before, const Tensor& other) {
  return other.impl() == self.impl() ? before : other;
}

void bind_indexing_and_inplace(py::class_<Tensor>& cls, py::module_& m) {
  cls.def("__setitem__", [](const Tensor& t, const py::object& key, const py::object& value) {
    const std::vector<ops::IndexItem> items = parse_index(t, key);
    const Tensor v = value_tensor(t, value);
    views::inplace(t, "__setitem__",
                   [&](const Tensor& before) { return ops::index_put(before, items, same_or(t, before, v)); });
  });
  const auto index_put = [](const Tensor& t, const std::vector<Tensor>& indices, const py::object& values,
                            bool accumulate) {
    return ops::index_put(t, tensor_items(indices), value_tensor(t, values), accumulate);
  };
  cls.def("index_put", index_put, py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);
  m.def("index_put", index_put, py::arg("input"), py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);
  cls.def(
      "index_put_",
      [](const py::object& self, const std::vector<Tensor>& indices, const py::object& values, bool accumulate) {
        const Tensor t = self.cast<Tensor>();
        const Tensor v = value_tensor(t, values);
        return run_inplace(self, "index_put_", [&](const Tensor& before) {
          return ops::index_put(before, tensor_items(indices), same_or(t, before, v), accumulate);
        });
      },
      py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);

  cls.def("gather", &ops::gather, py::arg("dim"), py::arg("index"));
  m.def("gather", &ops::gather, py::arg("input"), py::arg("dim"), py::arg("index"));
  cls.def("scatter", &scatter_any, py::arg("dim"), py::arg("index"), py::arg("src"), py::kw_only(),
          py::arg("reduce") = py::none());
  m.def("scatter", &scatter_any, py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("src"), py::kw_only(),
        py::arg("reduce") = py::none());
  cls.def(
      "scatter_",
      [](const py::object& self, int64_t dim, const Tensor& index, const py::object& src,
         const std::optional<std::string>& reduce) {
        const Tensor t = self.cast<Tensor>();
        return run_inplace(self, "scatter_", [&](const Tensor& before) {
          const py::object source = py::isinstance<Tensor>(src) ? py::cast(same_or(t, before, src.cast<Tensor>()))
                                                                : src;
          return scatter_any(before, dim, index, source, reduce);
        });
      },
      py::arg("dim"), py::arg("index"), py::arg("src"), py::kw_only(), py::arg("reduce") = py::none());
  cls.def("scatter_add", &ops::scatter_add, py::arg("dim"), py::arg("index"), py::arg("src"));
  m.def("scatter_add", &ops::scatter_add, py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("src"));
  cls.def(
      "scatter_add_",
      [](const py::object& self, int64_t dim, const Tensor& index, const Tensor& src) {
        const Tensor t = self.cast<Tensor>();
        return run_inplace(self, "scatter_add_", [&](const Tensor& before) {
          return ops::scatter_add(before, dim, index, same_or(t, before, src));
        });
      },
      py::arg("dim"), py::arg("index"), py::arg("src"));
  cls.def(
      "index_add_",
      [](const py::object& self, int64_t dim, const Tensor& index, const Tensor& source, const py::object& alpha) {
        const Tensor t = self.cast<Tensor>();
        return run_inplace(self, "index_add_", [&](const Tensor& before) {
          const Tensor src = same_or(t, before, source);
          return ops::index_add(before, dim, index, alpha.is_none() ? src : ops::mul(src, operand(src, alpha)));
        });
      },
      py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = py::none());
  const auto masked_fill = [](const Tensor& t, const Tensor& mask, const py::object& value) {
    return ops::masked_fill(t, mask, value_tensor(t, value));
  };
  cls.def("masked_fill", masked_fill, py::arg("mask"), py::arg("value"));
  m.def("masked_fill", masked_fill, py::arg("input"), py::arg("mask"), py::arg("value"));
  cls.def(
      "masked_fill_",
      [](const py::object& self, const Tensor& mask, const py::object& value) {
        const Tensor t = self.cast<Tensor>();
        const Tensor v = value_tensor(t, value);
        return run_inplace(self, "masked_fill_",
                           [&](const Tensor& before) { return ops::masked_fill(before, mask, same_or(t, before, v)); });
      },
      py::arg("mask"), py::arg("value"));

  // Sorting (the package wraps the pairs as (values, indices) named tuples), scans, triangles.
  const auto sort = [](const Tensor& t, int64_t dim, bool descending, bool) {
    auto [values, indices] = ops::sort(t, dim, descending);
    return py::make_tuple(values, indices);
  };
  cls.def("sort", sort, py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(), py::arg("stable") = false);
  m.def("sort", sort, py::arg("input"), py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
        py::arg("stable") = false);
  const auto argsort = [](const Tensor& t, int64_t dim, bool descending, bool) {
    return ops::argsort(t, dim, descending);
  };
  cls.def("argsort", argsort, py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
          py::arg("stable") = false);
  m.def("argsort", argsort, py::arg("input"), py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
        py::arg("stable") = false);
  const auto topk = [](const Tensor& t, int64_t k, int64_t dim, bool largest, bool) {
    auto [values, indices] = ops::topk(t, k, dim, largest);
    return py::make_tuple(values, indices);
  };
  cls.def("topk", topk, py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, py::arg("sorted") = true);
  m.def("topk", topk, py::arg("input"), py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true,
        py::arg("sorted") = true);
  using Scan = Tensor (*)(const Tensor&, int64_t);
  for (auto [name, fn] : {std::pair<const char*, Scan>{"cumsum", &ops::cumsum}, {"cumprod", &ops::cumprod}}) {
    const auto call = [fn](const Tensor& t, int64_t dim, std::optional<DType> dtype) {
      return fn(dtype ? t.to(*dtype) : t, dim);
    };
    cls.def(name, call, py::arg("dim"), py::kw_only(), py::arg("dtype") = py::none());
    m.def(name, call, py::arg("input"), py::arg("dim"), py::kw_only(), py::arg("dtype") = py::none());
  }
  using Triangle = Tensor (*)(const Tensor&, int64_t);
  for (auto [name, fn] : {std::pair<const char*, Triangle>{"tril", &ops::tril}, {"triu", &ops::triu}}) {
    cls.def(name, fn, py::arg("diagonal") = 0);
    m.def(name, fn, py::arg("input"), py::arg("diagonal") = 0);
    const std::string inplace_name = std::string(name) + "_";
    cls.def(
        inplace_name.c_str(),
        [fn, inplace_name](const py::object& self, int64_t diagonal) {
          return run_inplace(self, inplace_name.c_str(), [&](const Tensor& before) { return fn(before, diagonal); });
        },
        py::arg("diagonal") = 0);
  }

  // In-place arithmetic: add_(other, alpha=), the operators +=, -=, *=, /=, and unary ops.
  struct InplaceBinary {
    const char* name;
    const char* op;  // the operator form, or null
    Tensor (*fn)(const Tensor&, const Tensor&);
    bool alpha;
  };
  static constexpr InplaceBinary kInplaceBinary[] = {
      {"add_", "__iadd__", &ops::add, true},       {"sub_", "__isub__", &ops::sub, true},
      {"mul_", "__imul__", &ops::mul, false},      {"div_", "__itruediv__", &ops::div, false},
      {"pow_", "__ipow__", &ops::pow, false},      {"maximum_", nullptr, &ops::maximum, false},
      {"minimum_", nullptr, &ops::minimum, false},
  };
  for (const InplaceBinary& b : kInplaceBinary) {
    const auto call = [b](const py::object& self, const py::object& other, const py::object& alpha) {
      const Tensor t = self.cast<Tensor>();
      const Tensor o = operand(t, other);
      return run_inplace(self, b.name, [&](const Tensor& before) {
        Tensor rhs = same_or(t, before, o);
        if (!alpha.is_none()) rhs = ops::mul(rhs, operand(rhs, alpha));
        return b.fn(before, rhs);
      });
    };
    if (b.alpha) {
      cls.def(b.name, call, py::arg("other"), py::kw_only(), py::arg("alpha") = py::none());
    } else {
      cls.def(
          b.name, [call](const py::object& self, const py::object& other) { return call(self, other, py::none()); },
          py::arg("other"));
    }
    if (b.op) {
      cls.def(
          b.op, [call](const py::object& self, const py::object& other) { return call(self, other, py::none()); },
          py::is_operator());
    }
  }
  struct InplaceUnary {
    const char* name;
    Tensor (*fn)(const Tensor&);
  };
  static constexpr InplaceUnary kInplaceUnary[] = {
      {"neg_", &ops::neg},         {"abs_", &ops::abs},
      {"exp_", &ops::exp},         {"log_", &ops::log},
      {"log1p_", &ops::log1p},     {"sqrt_", &ops::sqrt},
      {"rsqrt_", &ops::rsqrt},     {"sin_", &ops::sin},
      {"cos_", &ops::cos},         {"tanh_", &ops::tanh},
      {"sigmoid_", &ops::sigmoid}, {"relu_", &ops::relu},
      {"erf_", &ops::erf},         {"logical_not_", &ops::logical_not},
  };
  for (const InplaceUnary& u : kInplaceUnary) {
    cls.def(u.name, [u](const py::object& self) { return run_inplace(self, u.name, u.fn); });
  }
  cls.def("zero_", [](const py::object& self) {
    return run_inplace(self, "zero_", [](const Tensor& before) {
      return ops::expand(ops::scalar(0, before.dtype(), before.device()), before.shape());
    });
  });
  cls.def(
      "fill_",
      [](const py::object& self, const py::object& value) {
        const Tensor v = value_tensor(self.cast<Tensor>(), value);
        if (!v.shape().empty())
          throw ShapeError("fill_: only supports a 0-dimensional value tensor, got shape " + shape_str(v.shape()));
        return run_inplace(self, "fill_", [&](const Tensor& before) {
          return ops::expand(ops::cast(v, before.dtype()), before.shape());
        });
      },
      py::arg("value"));
  cls.def(
      "copy_",
      [](const py::object& self, const Tensor& src, bool) {
        const Tensor t = self.cast<Tensor>();
        return run_inplace(self, "copy_", [&](const Tensor& before) {
          Tensor s = same_or(t, before, src);
          if (s.device() != before.device()) s = s.to(before.device());
          bool fits = s.shape().size() <= before.shape().size();
          for (size_t i = 0; fits && i < s.shape().size(); ++i) {
            const int64_t from = s.shape()[s.shape().size() - 1 - i],
                          to = before.shape()[before.shape().size() - 1 - i];
            fits = from == 1 || from == to;
          }
          if (!fits) {
            throw ShapeError("copy_: source of shape " + shape_str(s.shape()) + " cannot be broadcast to " +
                             shape_str(before.shape()));
          }
          return ops::expand(ops::cast(s, before.dtype()), before.shape());
        });
      },
      py::arg("src"), py::arg("non_blocking") = false);
  const auto clamp_ = [](const py::object& self, std::optional<double> min, std::optional<double> max) {
    if (!min && !max) throw EngineError("clamp_: at least one of min and max must be given");
    return run_inplace(self, "clamp_", [&](const Tensor& before) { return ops::clamp(before, min, max); });
  };
  cls.def("clamp_", clamp_, py::arg("min") = py::none(), py::arg("max") = py::none());
  cls.def("clip_", clamp_, py::arg("min") = py::none(), py::arg("max") = py::none());
  // addcmul_/addcdiv_: self + value * t1 * t2 (or / t2), what optimizers use.
  cls.def(
      "addcmul_",
      [](const py::object& self, const Tensor& t1, const Tensor& t2, double value) {
        return run_inplace(self, "addcmul_", [&](const Tensor& before) {
          return ops::add(before, ops::mul(ops::mul(t1, t2), ops::wrapped_float(value, before.device())));
        });
      },
      py::arg("tensor1"), py::arg("tensor2"), py::kw_only(), py::arg("value") = 1.0);
  cls.def(
      "addcdiv_",
      [](const py::object& self, const Tensor& t1, const Tensor& t2, double value) {
        return run_inplace(self, "addcdiv_", [&](const Tensor& before) {
          return ops::add(before, ops::mul(ops::div(t1, t2), ops::wrapped_float(value, before.device())));
        });
      },
      py::arg("tensor1"), py::arg("tensor2"), py::kw_only(), py::arg("value") = 1.0);
  cls.def_property_readonly("_version", [](const Tensor& t) { return views::version_of(*t.impl()); });
  cls.def("_is_view", [](const Tensor& t) { return t.impl()->view != nullptr; });
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::enum_<DType>(m, "dtype")
      .value("bool", DType::kBool)
      .value("uint8", DType::kUInt8)
      .value("int32", DType::kInt32)
      .value("int64", DType::kInt64)
      .value("float16", DType::kFloat16)
      .value("bfloat16", DType::kBFloat16)
      .value("float32", DType::kFloat32)
      .value("float64", DType::kFloat64)
      .def("__repr__", [](DType t) { return "lazyscope." + std::string(dtype_name(t)); })
      .def_property_readonly("is_floating_point", [](DType t) { return is_floating(t); })
      .def_property_readonly("itemsize", [](DType t) { return dtype_size(t); });

  py::class_<Device>(m, "device")
      .def(py::init([](const std::string& text) { return parse_device(text); }), py::arg("type"))
      .def_property_readonly("type", [](const Device& d) { return d.is_lazy() ? "lazy" : "cpu"; })
      .def_property_readonly("index",
                             [](const Device& d) -> py::object {
                               return d.is_lazy() ? py::object(py::int_(d.ordinal)) : py::object(py::none());
                             })
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "device(type='" + d.str() + "')"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__eq__", [](const Device& a, const std::string& b) { return a == parse_device(b); })
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.str())); });

  py::class_<Tensor> tensor_class(m, "Tensor");
  tensor_class.def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def("size", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def("dim", [](const Tensor& t) { return t.shape().size(); })
      .def("numel", &Tensor::numel)
      // This Python tensor becomes `value` (a view of it, for the in-place
      // shape ops squeeze_, t_, ...: the same data with a new shape).
      .def("_rebind", [](Tensor& self, const Tensor& value) { self = value; })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("device", [](const Tensor& t) { return t.device(); })
      .def("to", &to_any)
      .def("type", [](const Tensor& t, DType dt) { return t.to(dt); })
      .def("float", [](const Tensor& t) { return t.to(DType::kFloat32); })
      .def("double", [](const Tensor& t) { return t.to(DType::kFloat64); })
      .def("half", [](const Tensor& t) { return t.to(DType::kFloat16); })
      .def("bfloat16", [](const Tensor& t) { return t.to(DType::kBFloat16); })
      .def("long", [](const Tensor& t) { return t.to(DType::kInt64); })
      .def("int", [](const Tensor& t) { return t.to(DType::kInt32); })
      .def("byte", [](const Tensor& t) { return t.to(DType::kUInt8); })
      .def("bool", [](const Tensor& t) { return t.to(DType::kBool); })
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); })
      .def("cpu", [](const Tensor& t) { return t.to(Device{}); })
      .def("numpy", [](const Tensor& t) { return to_numpy(t, pb::SYNC_CAUSE_TO_HOST); })
      .def("tolist", [](const Tensor& t) { return to_numpy_for_python(t, pb::SYNC_CAUSE_TO_HOST).attr("tolist")(); })
      .def("item",
           [](const Tensor& t) {
             if (t.numel() != 1) {
               throw EngineError("item(): a tensor with " + std::to_string(t.numel()) +
                                 " elements cannot be converted to a Python number");
             }
             // The common dtypes read straight from the host buffer into a
             // Python number (a loss read per training step): the NumPy
             // array, its reshape, index and item() were ~15 us of cold
             // code right after a step's kernels. The same value and type
             // as NumPy's item(); float16 and bfloat16 go through NumPy.
             if (const std::optional<py::object> number = item_directly(t)) return *number;
             return to_numpy_for_python(t, pb::SYNC_CAUSE_ITEM).attr("reshape")(-1)[py::int_(0)].attr("item")();
           })
      .def("__bool__",
           [](const Tensor& t) {
             if (t.numel() != 1)
               throw EngineError("the truth value of a tensor with more than one element is ambiguous");
             return to_numpy(t, pb::SYNC_CAUSE_CONTROL_FLOW).attr("reshape")(-1)[py::int_(0)].cast<bool>();
           })
      .def("_host_repr", [](const Tensor& t) { return py::repr(to_numpy(t, pb::SYNC_CAUSE_TO_HOST)); })
      .def("__neg__", &ops::neg)
      .def("__abs__", &ops::abs)
      .def("__hash__",
           [](const py::object& self) { return py::hash(py::int_(reinterpret_cast<intptr_t>(self.ptr()))); })
      .def("t", [](const Tensor& t) { return transposing_view(t, &ops::t); })
      .def_property_readonly("T", [](const Tensor& t) { return transposing_view(t, &reverse_dims); })
      .def_property_readonly("mT",
                             [](const Tensor& t) {
                               return transposing_view(t, [](const Tensor& x) { return ops::transpose(x, -2, -1); });
                             })
      .def("__matmul__", &ops::matmul)
      .def("matmul", &ops::matmul)
      .def("mm", &ops::matmul)
      .def("reshape", [](const Tensor& t, const py::args& shape) { return views::reshape(t, sizes_arg(shape)); })
      .def("view", [](const Tensor& t, const py::args& shape) { return views::reshape(t, sizes_arg(shape)); })
      .def("reshape_as", [](const Tensor& t, const Tensor& other) { return views::reshape(t, other.shape()); })
      .def("view_as", [](const Tensor& t, const Tensor& other) { return views::reshape(t, other.shape()); })
      .def("permute", [](const Tensor& t, const py::args& dims) { return views::permute(t, sizes_arg(dims)); })
      .def("expand", [](const Tensor& t, const py::args& shape) { return views::expand(t, sizes_arg(shape)); })
      .def("expand_as", [](const Tensor& t, const Tensor& other) { return views::expand(t, other.shape()); })
      .def(
          "transpose",
          [](const Tensor& t, int64_t d0, int64_t d1) {
            return transposing_view(t, [d0, d1](const Tensor& x) { return ops::transpose(x, d0, d1); });
          },
          py::arg("dim0"), py::arg("dim1"))
      .def(
          "swapaxes",
          [](const Tensor& t, int64_t d0, int64_t d1) {
            return transposing_view(t, [d0, d1](const Tensor& x) { return ops::transpose(x, d0, d1); });
          },
          py::arg("axis0"), py::arg("axis1"))
      .def(
          "squeeze",
          [](const Tensor& t, std::optional<int64_t> dim) {
            return reshaping_view(t, [dim](const Tensor& x) { return ops::squeeze(x, dim); });
          },
          py::arg("dim") = py::none())
      .def(
          "unsqueeze",
          [](const Tensor& t, int64_t dim) {
            return reshaping_view(t, [dim](const Tensor& x) { return ops::unsqueeze(x, dim); });
          },
          py::arg("dim"))
      .def(
          "flatten",
          [](const Tensor& t, int64_t start, int64_t end) {
            return reshaping_view(t, [start, end](const Tensor& x) { return ops::flatten(x, start, end); });
          },
          py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("relu", &ops::relu)
      .def("__getitem__", &getitem)
      .def("__len__", [](const Tensor& t) {
        if (t.shape().empty()) throw py::type_error("len() of a 0-d tensor");
        return t.shape()[0];
      });

  auto& cls = tensor_class;

  // Autograd.
  cls.def_property(
         "requires_grad", [](const Tensor& t) { return t.requires_grad(); },
         [](Tensor& t, bool r) { t.set_requires_grad(r); })
      .def(
          "requires_grad_",
          [](const py::object& self, bool r) {
            self.cast<Tensor&>().set_requires_grad(r);
            return self;
          },
          py::arg("requires_grad") = true)
      .def_property(
          "grad", [](const Tensor& t) -> py::object { return t.grad().defined() ? py::cast(t.grad()) : py::none(); },
          [](Tensor& t, const py::object& g) { t.set_grad(g.is_none() ? Tensor() : g.cast<Tensor>()); })
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property_readonly("grad_fn",
                             [](const Tensor& t) -> py::object {
                               if (t.is_leaf()) return py::none();
                               return py::str(std::string(op_name(t.impl()->grad_fn->op)) + "_backward");
                             })
      .def("detach", &views::detach)
      .def_property_readonly("data", &views::detach)
      .def(
          "backward",
          [](const Tensor& t, const std::optional<Tensor>& gradient, std::optional<bool> retain_graph,
             bool create_graph) {
            // retain_graph defaults to create_graph, as in PyTorch: a graph
            // differentiated again keeps its saved values.
            t.backward(gradient.value_or(Tensor()), retain_graph.value_or(create_graph), create_graph);
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(), py::arg("create_graph") = false);
  // Tensor.register_hook / retain_grad (the package wraps the id in a
  // removable handle). The Python callable is released under the GIL,
  // whichever thread drops the tensor last.
  m.def(
      "_register_grad_hook",
      [](const Tensor& t, const py::function& fn) {
        if (!t.requires_grad()) {
          throw EngineError("register_hook: cannot register a hook on a tensor that doesn't require gradient");
        }
        auto& hooks = t.impl()->grad_hooks;
        if (!hooks) hooks = std::make_shared<autograd::GradHooks>();
        if (t.impl()->grad_fn) t.impl()->grad_fn->hooks = hooks;  // they outlive the tensor (grad_fn.h)
        std::shared_ptr<py::function> held(new py::function(fn), [](py::function* f) {
          if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing to release
          py::gil_scoped_acquire gil;
          delete f;
        });
        const uint64_t id = hooks->next_id++;
        hooks->hooks.emplace_back(id, [held](const Tensor& grad) -> Tensor {
          py::object out = (*held)(grad);
          if (out.is_none()) return Tensor();
          if (!py::isinstance<Tensor>(out)) {
            throw EngineError("backward: a hook must return a Tensor or None, got " +
                              std::string(py::str(out.get_type().attr("__name__"))));
          }
          return out.cast<Tensor>();
        });
        return id;
      },
      py::arg("tensor"), py::arg("hook"));
  m.def(
      "_remove_grad_hook",
      [](const Tensor& t, uint64_t id) {
        auto& hooks = t.impl()->grad_hooks;
        if (!hooks) return;
        std::erase_if(hooks->hooks, [id](const auto& h) { return h.first == id; });
      },
      py::arg("tensor"), py::arg("id"));
  m.def(
      "_retain_grad",
      [](const Tensor& t) {
        if (!t.requires_grad()) {
          throw EngineError("retain_grad: can't retain_grad on Tensor that has requires_grad=False");
        }
        if (t.is_leaf()) return;  // a leaf keeps its gradient anyway
        auto& hooks = t.impl()->grad_hooks;
        if (!hooks) hooks = std::make_shared<autograd::GradHooks>();
        hooks->retain = true;
      },
      py::arg("tensor"));
  cls.def_property_readonly("retains_grad", [](const Tensor& t) {
    return !t.is_leaf() && t.impl()->grad_hooks && t.impl()->grad_hooks->retain;
  });
  m.def(
      "_autograd_grad",
      [](const std::vector<Tensor>& outputs, const std::vector<std::optional<Tensor>>& grad_outputs,
         const std::vector<Tensor>& inputs, bool retain_graph, bool allow_unused, bool create_graph) {
        std::vector<Tensor> seeds;
        for (const auto& g : grad_outputs) seeds.push_back(g.value_or(Tensor()));
        py::list result;
        for (const Tensor& g : autograd::grad(outputs, seeds, inputs, retain_graph, allow_unused, create_graph)) {
          result.append(g.defined() ? py::cast(g) : py::none());
        }
        return result;
      },
      py::arg("outputs"), py::arg("grad_outputs"), py::arg("inputs"), py::arg("retain_graph"), py::arg("allow_unused"),
      py::arg("create_graph") = false);
  m.def("set_grad_enabled", &autograd::set_grad_enabled, py::arg("mode"));
  m.def("is_grad_enabled", &autograd::grad_enabled);
  bind_binary(cls, m, "add", &ops::add, "__add__", "__radd__");
  bind_binary(cls, m, "sub", &ops::sub, "__sub__", "__rsub__");
  bind_binary(cls, m, "mul", &ops::mul, "__mul__", "__rmul__");
  bind_binary(cls, m, "div", &ops::div, "__truediv__", "__rtruediv__");
  bind_binary(cls, m, "true_divide", &ops::div);
  bind_binary(cls, m, "pow", &ops::pow, "__pow__", "__rpow__");
  bind_binary(cls, m, "maximum", &ops::maximum);
  bind_binary(cls, m, "minimum", &ops::minimum);
  bind_binary(cls, m, "eq", &ops::eq, "__eq__");
  bind_binary(cls, m, "ne", &ops::ne, "__ne__");
  bind_binary(cls, m, "lt", &ops::lt, "__lt__");
  bind_binary(cls, m, "le", &ops::le, "__le__");
  bind_binary(cls, m, "gt", &ops::gt, "__gt__");
  bind_binary(cls, m, "ge", &ops::ge, "__ge__");
  bind_binary(cls, m, "logical_and", &ops::logical_and);
  bind_binary(cls, m, "logical_or", &ops::logical_or);
  // Python's // and % with PyTorch's semantics (ops.h); div(rounding_mode=) is in the package.
  bind_binary(cls, m, "floor_divide", &ops::floor_divide, "__floordiv__", "__rfloordiv__");
  bind_binary(cls, m, "remainder", &ops::remainder, "__mod__", "__rmod__");
  bind_binary(cls, m, "fmod", &ops::fmod);
  bind_binary(cls, m, "atan2", &ops::atan2);
  bind_binary(cls, m, "arctan2", &ops::atan2);
  // The integer bitwise ops; the package's bitwise_and/&/... send bool masks
  // to the logical ops and integers here.
  bind_binary(cls, m, "_bitwise_and", &ops::bitwise_and);
  bind_binary(cls, m, "_bitwise_or", &ops::bitwise_or);
  bind_binary(cls, m, "_bitwise_xor", &ops::bitwise_xor);
  bind_binary(cls, m, "bitwise_left_shift", &ops::bitwise_left_shift, "__lshift__", "__rlshift__");
  bind_binary(cls, m, "bitwise_right_shift", &ops::bitwise_right_shift, "__rshift__", "__rrshift__");
  // gcd, nextafter and frexp's parts: the package's wrappers check dtypes and name the function.
  bind_binary(cls, m, "_gcd", &ops::gcd);
  bind_binary(cls, m, "_nextafter", &ops::nextafter);
  m.def("_frexp_mantissa", &ops::frexp_mantissa, py::arg("input"));
  m.def("_frexp_exponent", &ops::frexp_exponent, py::arg("input"));
  m.def(
      "_div_rounded",
      [](const py::object& a, const py::object& b, const std::string& mode) {
        const Tensor like = py::isinstance<Tensor>(a) ? a.cast<Tensor>() : b.cast<Tensor>();
        return ops::div_rounded(operand(like, a), operand(like, b), mode);
      },
      py::arg("input"), py::arg("other"), py::arg("rounding_mode"));

  // Unary ops with PyTorch's names, as Tensor methods and module functions.
  struct Unary {
    const char* name;
    Tensor (*fn)(const Tensor&);
  };
  static constexpr Unary kUnary[] = {
      {"neg", &ops::neg},         {"negative", &ops::neg},
      {"abs", &ops::abs},         {"exp", &ops::exp},
      {"log", &ops::log},         {"log1p", &ops::log1p},
      {"sqrt", &ops::sqrt},       {"rsqrt", &ops::rsqrt},
      {"sin", &ops::sin},         {"cos", &ops::cos},
      {"tanh", &ops::tanh},       {"erf", &ops::erf},
      {"sigmoid", &ops::sigmoid}, {"logical_not", &ops::logical_not},
      {"sign", &ops::sign},       {"floor", &ops::floor},
      {"ceil", &ops::ceil},       {"round", &ops::round},
      {"trunc", &ops::trunc},     {"fix", &ops::trunc},
      {"atan", &ops::atan},       {"arctan", &ops::atan},
      {"asin", &ops::asin},       {"arcsin", &ops::asin},
      {"acos", &ops::acos},       {"arccos", &ops::acos},
  };
  for (const Unary& u : kUnary) {
    cls.def(u.name, u.fn);
    m.def(u.name, u.fn, py::arg("input"));
  }
  // Activations PyTorch keeps in torch.nn.functional (the package re-exports them there).
  m.def("gelu", &ops::gelu, py::arg("input"));
  m.def("silu", &ops::silu, py::arg("input"));
  m.def("softplus", &ops::softplus, py::arg("input"), py::arg("beta") = 1.0, py::arg("threshold") = 20.0);
  m.def("leaky_relu", &ops::leaky_relu, py::arg("input"), py::arg("negative_slope") = 0.01);
  const auto clamp = [](const Tensor& t, std::optional<double> min, std::optional<double> max) {
    if (!min && !max) throw EngineError("clamp: at least one of min and max must be given");
    return ops::clamp(t, min, max);
  };
  for (const char* name : {"clamp", "clip"}) {
    cls.def(name, clamp, py::arg("min") = py::none(), py::arg("max") = py::none());
    m.def(name, clamp, py::arg("input"), py::arg("min") = py::none(), py::arg("max") = py::none());
  }
  const auto where = [](const Tensor& cond, const py::object& x, const py::object& y) {
    const Tensor like = py::isinstance<Tensor>(x)   ? x.cast<Tensor>()
                        : py::isinstance<Tensor>(y) ? y.cast<Tensor>()
                                                    : cond;
    return ops::where(cond, operand(like, x), operand(like, y));
  };
  m.def("where", where, py::arg("condition"), py::arg("input"), py::arg("other"));
  cls.def(
      "where",
      [where](const Tensor& self, const Tensor& cond, const py::object& y) { return where(cond, py::cast(self), y); },
      py::arg("condition"), py::arg("other"));

  // softmax(dim) / log_softmax(dim), with PyTorch's optional dtype= (the input is cast first).
  using AlongDim = Tensor (*)(const Tensor&, int64_t);
  for (auto [name, fn] :
       {std::pair<const char*, AlongDim>{"softmax", &ops::softmax}, {"log_softmax", &ops::log_softmax}}) {
    const auto call = [fn](const Tensor& t, int64_t dim, std::optional<DType> dtype) {
      return fn(dtype ? t.to(*dtype) : t, dim);
    };
    cls.def(name, call, py::arg("dim"), py::arg("dtype") = py::none());
    m.def(name, call, py::arg("input"), py::arg("dim"), py::arg("dtype") = py::none());
  }

  bind_losses(m);

  // Joins, splits and gathers.
  for (const char* name : {"cat", "concat", "concatenate"}) {
    m.def(name, &ops::cat, py::arg("tensors"), py::arg("dim") = 0);
  }
  m.def("stack", &ops::stack, py::arg("tensors"), py::arg("dim") = 0);
  const auto split = [](const Tensor& t, const py::object& size_or_sections, int64_t dim) {
    const auto pieces = py::isinstance<py::int_>(size_or_sections)
                            ? ops::split(t, size_or_sections.cast<int64_t>(), dim)
                            : ops::split(t, size_or_sections.cast<std::vector<int64_t>>(), dim);
    return py::tuple(py::cast(piece_views(t, pieces, dim)));
  };
  cls.def("split", split, py::arg("split_size"), py::arg("dim") = 0);
  m.def("split", split, py::arg("tensor"), py::arg("split_size_or_sections"), py::arg("dim") = 0);
  const auto chunk = [](const Tensor& t, int64_t chunks, int64_t dim) {
    return py::tuple(py::cast(piece_views(t, ops::chunk(t, chunks, dim), dim)));
  };
  cls.def("chunk", chunk, py::arg("chunks"), py::arg("dim") = 0);
  m.def("chunk", chunk, py::arg("input"), py::arg("chunks"), py::arg("dim") = 0);
  cls.def("narrow", &narrow_view, py::arg("dim"), py::arg("start"), py::arg("length"));
  m.def("narrow", &narrow_view, py::arg("input"), py::arg("dim"), py::arg("start"), py::arg("length"));
  cls.def("index_select", &ops::index_select, py::arg("dim"), py::arg("index"));
  m.def("index_select", &ops::index_select, py::arg("input"), py::arg("dim"), py::arg("index"));
  cls.def(
      "index_add",
      [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, const py::object& alpha) {
        return ops::index_add(t, dim, index, alpha.is_none() ? source : ops::mul(source, operand(source, alpha)));
      },
      py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = py::none());
  m.def(
      "embedding",
      [](const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx, const py::object& max_norm,
         double, bool scale_grad_by_freq, bool sparse) {
        if (!max_norm.is_none() || scale_grad_by_freq || sparse) {
          throw EngineError("embedding: max_norm, scale_grad_by_freq and sparse are not supported");
        }
        return ops::embedding(input, weight, padding_idx);
      },
      py::arg("input"), py::arg("weight"), py::arg("padding_idx") = py::none(), py::arg("max_norm") = py::none(),
      py::arg("norm_type") = 2.0, py::arg("scale_grad_by_freq") = false, py::arg("sparse") = false);

  m.def("from_numpy", &from_numpy, py::arg("array"), py::arg("device") = "cpu",
        "Copies a NumPy array into a new tensor on `device`.");
  m.def(
      "scalar_tensor", [](double v, DType dt, const std::string& d) { return ops::scalar(v, dt, parse_device(d)); },
      py::arg("value"), py::arg("dtype"), py::arg("device") = "cpu");
  m.def("relu", &ops::relu);
  m.def("matmul", &ops::matmul);
  // Convolution, pooling, normalization, dropout
  bind_nn(m);
  bind_optim(m);
  m.def("reshape", &views::reshape, py::arg("input"), py::arg("shape"));
  m.def("permute", &views::permute, py::arg("input"), py::arg("dims"));
  m.def(
      "transpose",
      [](const Tensor& t, int64_t d0, int64_t d1) {
        return transposing_view(t, [d0, d1](const Tensor& x) { return ops::transpose(x, d0, d1); });
      },
      py::arg("input"), py::arg("dim0"), py::arg("dim1"));
  m.def(
      "t", [](const Tensor& t) { return transposing_view(t, &ops::t); }, py::arg("input"));
  m.def(
      "squeeze",
      [](const Tensor& t, std::optional<int64_t> dim) {
        return reshaping_view(t, [dim](const Tensor& x) { return ops::squeeze(x, dim); });
      },
      py::arg("input"), py::arg("dim") = py::none());
  m.def(
      "unsqueeze",
      [](const Tensor& t, int64_t dim) {
        return reshaping_view(t, [dim](const Tensor& x) { return ops::unsqueeze(x, dim); });
      },
      py::arg("input"), py::arg("dim"));
  m.def(
      "flatten",
      [](const Tensor& t, int64_t start, int64_t end) {
        return reshaping_view(t, [start, end](const Tensor& x) { return ops::flatten(x, start, end); });
      },
      py::arg("input"), py::arg("start_dim") = 0, py::arg("end_dim") = -1);

  // Reductions with PyTorch's signatures: dim is None, an int or a sequence.
  using Reduce = Tensor (*)(const Tensor&, std::vector<int64_t>, bool);
  struct Reduction {
    const char* name;
    Reduce fn;
  };
  static constexpr Reduction kReductions[] = {
      {"sum", &ops::sum},   {"mean", &ops::mean},           {"prod", &ops::prod}, {"amax", &ops::amax},
      {"amin", &ops::amin}, {"logsumexp", &ops::logsumexp}, {"any", &ops::any},   {"all", &ops::all},
  };
  for (const Reduction& r : kReductions) {
    const Reduce fn = r.fn;
    // dtype=: the input is cast first, as PyTorch's sum(dtype=) (e.g. to accumulate in float64).
    const auto call = [fn](const Tensor& t, const py::object& dim, bool keepdim, std::optional<DType> dtype) {
      return fn(dtype ? t.to(*dtype) : t, dims_arg(dim), keepdim);
    };
    cls.def(r.name, call, py::arg("dim") = py::none(), py::arg("keepdim") = false, py::kw_only(),
            py::arg("dtype") = py::none());
    m.def(r.name, call, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, py::kw_only(),
          py::arg("dtype") = py::none());
  }
  using ArgReduce = Tensor (*)(const Tensor&, std::optional<int64_t>, bool);
  for (auto [name, fn] : {std::pair<const char*, ArgReduce>{"argmax", &ops::argmax}, {"argmin", &ops::argmin}}) {
    cls.def(name, fn, py::arg("dim") = py::none(), py::arg("keepdim") = false);
    m.def(name, fn, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  }
  // var/std(dim=None, unbiased=None, keepdim=False, *, correction=None).
  using Spread = Tensor (*)(const Tensor&, std::vector<int64_t>, double, bool);
  for (auto [name, fn] : {std::pair<const char*, Spread>{"var", &ops::var}, {"std", &ops::std}}) {
    const auto call = [fn](const Tensor& t, const py::object& dim, std::optional<bool> unbiased, bool keepdim,
                           std::optional<double> correction) {
      if (unbiased && correction) throw EngineError("var/std: give either unbiased or correction, not both");
      const double c = correction ? *correction : (unbiased.value_or(true) ? 1.0 : 0.0);
      return fn(t, dims_arg(dim), c, keepdim);
    };
    cls.def(name, call, py::arg("dim") = py::none(), py::arg("unbiased") = py::none(), py::arg("keepdim") = false,
            py::kw_only(), py::arg("correction") = py::none());
    m.def(name, call, py::arg("input"), py::arg("dim") = py::none(), py::arg("unbiased") = py::none(),
          py::arg("keepdim") = false, py::kw_only(), py::arg("correction") = py::none());
  }
  bind_indexing_and_inplace(cls, m);
}

}  // namespace lazyscope::python
