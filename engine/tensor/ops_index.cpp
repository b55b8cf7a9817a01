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
#include "tensor/upcalls.h"
#include "tensor/views.h"

// Indexing and selection: index/index_put, gather/scatter, sort/topk, scans, and the data-dependent host ops (nonzero, masked_select, unique).

namespace lazyscope::ops {
using detail::at_call;
using detail::at_line;
using detail::check_same_device;

namespace {

// What an index expression selects: the strided slice that its ints and
// slices (and, as full slices, its index tensors) take, the shape after ints
// drop their dims and None adds some, and where in that shape each index
// tensor's dim lies.
struct IndexPlan {
  std::vector<int64_t> starts, ends, steps;
  Shape out;
  std::vector<size_t> positions;  // of the index tensors' dims in `out`
  std::vector<int64_t> dims;      // the same dims in the indexed tensor, for messages
  std::vector<Tensor> tensors;
};

[[noreturn]] void boolean_mask_read(const Tensor& mask) {
  // x[mask] alone is boolean_mask_index (a data-dependent read on the host);
  // a mask combined with other indices is not supported.
  throw IndexError("boolean-mask indexing combined with other indices (mask of shape " + shape_str(mask.shape()) +
                   ") is not supported; index with the mask alone (x[mask]), or use masked_select or where" +
                   at_line(current_source_location()));
}

IndexPlan plan_index(const Tensor& a, const std::vector<IndexItem>& items) {
  using Kind = IndexItem::Kind;
  const Shape& s = a.shape();
  const size_t rank = s.size();
  size_t consumed = 0, ellipses = 0;
  for (const IndexItem& it : items) {
    if (it.kind == Kind::kTensor && it.tensor.dtype() == DType::kBool) boolean_mask_read(it.tensor);
    consumed += it.kind == Kind::kInt || it.kind == Kind::kSlice || it.kind == Kind::kTensor;
    ellipses += it.kind == Kind::kEllipsis;
  }
  if (ellipses > 1)
    throw IndexError("an index can only have a single ellipsis ('...')" + at_line(current_source_location()));
  if (consumed > rank) {
    throw IndexError("too many indices for tensor of dimension " + std::to_string(rank) + " (got " +
                     std::to_string(consumed) + ")" + at_line(current_source_location()));
  }
  std::vector<IndexItem> full;
  for (const IndexItem& it : items) {
    if (it.kind != Kind::kEllipsis) {
      full.push_back(it);
      continue;
    }
    for (size_t i = consumed; i < rank; ++i) full.push_back(IndexItem{Kind::kSlice, 0, {}, {}, {}, {}});
  }
  if (ellipses == 0) {
    for (size_t i = consumed; i < rank; ++i) full.push_back(IndexItem{Kind::kSlice, 0, {}, {}, {}, {}});
  }
  IndexPlan p;
  size_t d = 0;
  for (const IndexItem& it : full) {
    if (it.kind == Kind::kNone) {
      p.out.push_back(1);
      continue;
    }
    const int64_t size = s[d];
    if (it.kind == Kind::kInt) {
      const int64_t v = it.value < 0 ? it.value + size : it.value;
      if (v < 0 || v >= size) {
        throw IndexError("index " + std::to_string(it.value) + " is out of bounds for dimension " + std::to_string(d) +
                         " with size " + std::to_string(size) + at_line(current_source_location()));
      }
      p.starts.push_back(v);
      p.ends.push_back(v + 1);
      p.steps.push_back(1);
    } else if (it.kind == Kind::kTensor) {
      if (is_floating(it.tensor.dtype())) {
        throw IndexError("tensors used as indices must be integer or bool tensors, got " +
                         std::string(dtype_name(it.tensor.dtype())) + at_line(current_source_location()));
      }
      p.positions.push_back(p.out.size());
      p.dims.push_back(static_cast<int64_t>(d));
      p.tensors.push_back(it.tensor);
      p.starts.push_back(0);
      p.ends.push_back(size);
      p.steps.push_back(1);
      p.out.push_back(size);
    } else {
      const int64_t step = it.step.value_or(1);
      if (step <= 0) throw EngineError("slice: step must be greater than zero" + at_line(current_source_location()));
      const auto clamp_bound = [size](std::optional<int64_t> b, int64_t fallback) {
        if (!b) return fallback;
        const int64_t v = *b < 0 ? *b + size : *b;
        return std::clamp<int64_t>(v, 0, size);
      };
      const int64_t start = clamp_bound(it.start, 0);
      const int64_t end = std::max(start, clamp_bound(it.stop, size));
      p.starts.push_back(start);
      p.ends.push_back(end);
      p.steps.push_back(step);
      p.out.push_back((end - start + step - 1) / step);
    }
    ++d;
  }
  return p;
}

// The advanced part of an index on `y` (the basic part applied): y's
// indexed dims permuted to the front, the indices broadcast to one shape B,
// and the permutation that puts B where PyTorch puts it in the result.
struct AdvancedPlan {
  std::vector<int64_t> perm;  // y's dims: indexed first, then the rest in order
  std::vector<Tensor> indices;
  Shape batch;
  std::vector<int64_t> result_perm;  // kIndex's output (B + rest) -> the result's layout
};

AdvancedPlan plan_advanced(const Tensor& y, const IndexPlan& p) {
  AdvancedPlan a;
  const size_t rank = y.shape().size();
  Shape batch = p.tensors[0].shape();
  for (size_t j = 1; j < p.tensors.size(); ++j) {
    try {
      batch = broadcast_shapes(batch, p.tensors[j].shape(), "index");
    } catch (const ShapeError&) {
      std::string shapes;
      for (const Tensor& t : p.tensors) shapes += (shapes.empty() ? "" : ", ") + shape_str(t.shape());
      throw IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes " + shapes +
                       at_line(current_source_location()));
    }
  }
  a.batch = batch;
  for (const Tensor& t : p.tensors) {
    Tensor i = t.device() == y.device() ? t : t.to(y.device());
    a.indices.push_back(expand(cast(i, DType::kInt64), batch));
  }
  std::vector<bool> indexed(rank, false);
  for (size_t pos : p.positions) {
    a.perm.push_back(static_cast<int64_t>(pos));
    indexed[pos] = true;
  }
  for (size_t d = 0; d < rank; ++d) {
    if (!indexed[d]) a.perm.push_back(static_cast<int64_t>(d));
  }
  bool adjacent = true;
  for (size_t j = 1; j < p.positions.size(); ++j) adjacent = adjacent && p.positions[j] == p.positions[j - 1] + 1;
  // Adjacent indexed dims are replaced in place by B; otherwise B goes first.
  const size_t insert_at = adjacent ? p.positions[0] : 0;
  const size_t nb = batch.size(), rest = rank - p.positions.size();
  for (size_t i = 0; i < insert_at; ++i) a.result_perm.push_back(static_cast<int64_t>(nb + i));
  for (size_t i = 0; i < nb; ++i) a.result_perm.push_back(static_cast<int64_t>(i));
  for (size_t i = insert_at; i < rest; ++i) a.result_perm.push_back(static_cast<int64_t>(nb + i));
  return a;
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inverse;
}

std::vector<Tensor> index_operands(Tensor self, const std::vector<Tensor>& indices) {
  std::vector<Tensor> operands{std::move(self)};
  operands.insert(operands.end(), indices.begin(), indices.end());
  return operands;
}

// Whether `from` broadcasts to exactly `to` (as values assigned to a selection must).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != 1 && f != t) return false;
  }
  return true;
}

Shape slice_shape_of(const IndexPlan& p) {
  Shape shape;
  for (size_t d = 0; d < p.starts.size(); ++d) shape.push_back((p.ends[d] - p.starts[d] + p.steps[d] - 1) / p.steps[d]);
  return shape;
}

}  // namespace

Tensor index(const Tensor& a, const std::vector<IndexItem>& items) {
  IndexPlan p = plan_index(a, items);
  const Tensor y = reshape(slice(a, p.starts, p.ends, p.steps), p.out);
  if (p.tensors.empty()) return y;
  const AdvancedPlan adv = plan_advanced(y, p);
  const Tensor picked = apply(OpKind::kIndex, index_operands(permute(y, adv.perm), adv.indices), {{"dims", p.dims}});
  return permute(picked, adv.result_perm);
}

Tensor index_put(const Tensor& self, const std::vector<IndexItem>& items, const Tensor& values, bool accumulate) {
  const Shape& s = self.shape();
  Tensor v = values.device() == self.device() || !values.shape().empty() ? values : values.to(self.device());
  v = cast(v, self.dtype());
  const bool has_mask = std::any_of(items.begin(), items.end(), [](const IndexItem& it) {
    return it.kind == IndexItem::Kind::kTensor && it.tensor.dtype() == DType::kBool;
  });
  if (has_mask) {
    // x[mask] = v is a where(): no data-dependent shape, as long as v does
    // not need to know how many elements the mask selects.
    if (items.size() != 1) {
      throw IndexError(
          "index_put: a boolean mask combined with other indices is not supported in an assignment; "
          "use where()" +
          at_line(current_source_location()));
    }
    const Tensor& mask = items[0].tensor;
    const Shape& m = mask.shape();
    if (m.size() > s.size() || !std::equal(m.begin(), m.end(), s.begin())) {
      throw IndexError("index_put: the shape of the mask " + shape_str(m) +
                       " does not match the shape of the indexed tensor " + shape_str(s) +
                       at_line(current_source_location()));
    }
    const Shape trailing(s.begin() + static_cast<std::ptrdiff_t>(m.size()), s.end());
    const bool fits = broadcasts_to(v.shape(), trailing);
    if (!fits) {
      throw ShapeError("index_put: values of shape " + shape_str(v.shape()) + " for a boolean mask of shape " +
                       shape_str(m) + " on a tensor of shape " + shape_str(s) +
                       ": only values that broadcast to the unmasked dims " + shape_str(trailing) +
                       " are supported (one value per selected element is data dependent)" +
                       at_line(current_source_location()));
    }
    Shape mask_shape = m;
    mask_shape.resize(s.size(), 1);
    const Tensor new_value = accumulate ? add(self, v) : v;
    return where(reshape(mask.device() == self.device() ? mask : mask.to(self.device()), mask_shape), new_value, self);
  }
  IndexPlan p = plan_index(self, items);
  const Tensor y = reshape(slice(self, p.starts, p.ends, p.steps), p.out);
  Tensor new_y;
  const auto fit_values = [&](const Shape& target) {
    const bool fits = broadcasts_to(v.shape(), target);
    if (!fits) {
      throw ShapeError("index_put: shape mismatch: value tensor of shape " + shape_str(v.shape()) +
                       " cannot be broadcast to indexing result of shape " + shape_str(target) +
                       at_line(current_source_location()));
    }
    return expand(v, target);
  };
  if (p.tensors.empty()) {
    const Tensor region = fit_values(p.out);
    new_y = accumulate ? add(y, region) : region;
  } else {
    const AdvancedPlan adv = plan_advanced(y, p);
    Shape picked_shape = adv.batch;
    for (size_t i = p.positions.size(); i < adv.perm.size(); ++i) {
      picked_shape.push_back(y.shape()[static_cast<size_t>(adv.perm[i])]);
    }
    Shape result_shape;
    for (int64_t d : adv.result_perm) result_shape.push_back(picked_shape[static_cast<size_t>(d)]);
    const Tensor in_layout = permute(fit_values(result_shape), inverse_permutation(adv.result_perm));
    std::vector<Tensor> operands{permute(y, adv.perm), in_layout};
    operands.insert(operands.end(), adv.indices.begin(), adv.indices.end());
    const Tensor put = apply(OpKind::kIndexPut, operands, {{"dims", p.dims}, {"accumulate", accumulate}});
    new_y = permute(put, inverse_permutation(adv.perm));
  }
  const Shape sliced = slice_shape_of(p);
  if (sliced == s) return reshape(new_y, s);
  return slice_scatter(self, reshape(new_y, sliced), p.starts, p.ends, p.steps);
}

namespace {
Tensor as_index(const Tensor& index) {
  return index.defined() && !is_floating(index.dtype()) && index.dtype() != DType::kBool ? cast(index, DType::kInt64)
                                                                                         : index;
}
}  // namespace

Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) {
  return apply(OpKind::kIndexSelect, {a, as_index(index)}, {{"dim", dim}});
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return apply(OpKind::kIndexAdd, {self, as_index(index), cast(source, self.dtype())}, {{"dim", dim}});
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  if (weight.shape().size() != 2) {
    throw ShapeError("embedding: expected a weight of shape [num_embeddings, embedding_dim], got " +
                     shape_str(weight.shape()) + at_line(current_source_location()));
  }
  if (is_floating(indices.dtype()) || indices.dtype() == DType::kBool) {
    throw EngineError("embedding: expected integer indices, got " + std::string(dtype_name(indices.dtype())) +
                      at_line(current_source_location()));
  }
  const Tensor flat = reshape(indices, {-1});
  Tensor rows;
  try {
    rows = index_select(weight, 0, flat);
  } catch (const IndexError& e) {
    throw IndexError("embedding: " + std::string(e.what()));
  }
  if (padding_idx) {
    // The padding row's value, without a gradient path to the weight.
    const int64_t pad = *padding_idx < 0 ? *padding_idx + weight.shape()[0] : *padding_idx;
    const Tensor kept = unsqueeze(ne(flat, wrapped_int(pad, flat.device())), 1);
    rows = where(kept, rows, index_select(weight.detach(), 0, flat));
  }
  Shape out = indices.shape();
  out.push_back(weight.shape()[1]);
  return reshape(rows, out);
}

namespace {
// A 0-d operand as one element of a 1-d tensor, for the ops along a dim (PyTorch accepts dim 0 or -1).
Tensor as_1d(const Tensor& t) { return t.shape().empty() ? reshape(t, {1}) : t; }
Tensor back_to(const Tensor& out, const Tensor& like) { return like.shape().empty() ? reshape(out, {}) : out; }

Tensor scatter_op(OpKind op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const Tensor out = apply(op, {as_1d(self), as_1d(as_index(index)), as_1d(cast(src, self.dtype()))}, {{"dim", dim}});
  return back_to(out, self);
}
}  // namespace

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  return back_to(apply(OpKind::kGather, {as_1d(a), as_1d(as_index(index))}, {{"dim", dim}}), index);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op(OpKind::kScatter, self, dim, index, src);
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op(OpKind::kScatterAdd, self, dim, index, src);
}

Tensor slice_scatter(const Tensor& self, const Tensor& src, std::vector<int64_t> starts, std::vector<int64_t> ends,
                     std::vector<int64_t> steps) {
  return apply(OpKind::kSliceScatter, {self, cast(src, self.dtype())},
               {{"starts", std::move(starts)}, {"ends", std::move(ends)}, {"steps", std::move(steps)}});
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  if (mask.dtype() != DType::kBool) {
    throw EngineError("masked_fill: expected a bool mask, got " + std::string(dtype_name(mask.dtype())) +
                      at_line(current_source_location()));
  }
  if (!value.shape().empty()) {
    throw ShapeError("masked_fill: only supports a 0-dimensional value tensor, got shape " + shape_str(value.shape()) +
                     at_line(current_source_location()));
  }
  if (!broadcasts_to(mask.shape(), self.shape())) {
    throw ShapeError("masked_fill: the mask of shape " + shape_str(mask.shape()) +
                     " does not broadcast to the tensor's shape " + shape_str(self.shape()) +
                     at_line(current_source_location()));
  }
  const Tensor v = value.device() == self.device() ? value : value.to(self.device());
  return where(mask, cast(v, self.dtype()), self);
}

Tensor argsort(const Tensor& a, int64_t dim, bool descending) {
  return back_to(apply(OpKind::kArgsort, {as_1d(a)}, {{"dim", dim}, {"descending", descending}}), a);
}

std::pair<Tensor, Tensor> sort(const Tensor& a, int64_t dim, bool descending) {
  const Tensor order = argsort(a, dim, descending);
  return {gather(a, dim, order), order};
}

std::pair<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim, bool largest) {
  const Shape s = as_1d(a).shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "topk"); }));
  if (k < 0 || k > s[d]) {
    throw IndexError("topk: k = " + std::to_string(k) + " is out of range for dimension " + std::to_string(d) +
                     " of size " + std::to_string(s[d]) + at_line(current_source_location()));
  }
  const Tensor order = back_to(narrow(argsort(as_1d(a), dim, largest), static_cast<int64_t>(d), 0, k), a);
  return {gather(a, dim, order), order};
}

namespace {
// A data-dependent op: `fn` on host buffers. On the eager device it simply
// runs; on a lazy device it is a DATA_DEPENDENT fallback.
std::vector<Tensor> host_op(const char* op, const std::vector<Tensor>& inputs, const executor::HostFn& fn) {
  for (const Tensor& t : inputs) {
    if (!t.defined()) throw EngineError(std::string(op) + ": undefined tensor operand");
  }
  check_same_device(OpKind::kDeviceData, inputs);
  if (inputs[0].device().is_lazy()) {
    return executor::run_on_host(op, pb::FALLBACK_REASON_DATA_DEPENDENT, inputs[0].dtype(), inputs, fn);
  }
  std::vector<const Buffer*> buffers;
  for (const Tensor& t : inputs) buffers.push_back(t.impl()->buffer.get());
  std::vector<Tensor> out;
  for (BufferPtr& b : fn(buffers)) out.push_back(Tensor::wrap(std::move(b), inputs[0].device()));
  return out;
}

void check_bool_mask(const char* op, const Tensor& mask) {
  if (mask.defined() && mask.dtype() != DType::kBool) {
    throw EngineError(std::string(op) + ": expected a bool mask, got " + std::string(dtype_name(mask.dtype())) +
                      "; compare to get one (x > 0) or convert it with .bool()" + at_line(current_source_location()));
  }
}

// Flat positions of the true elements of a bool mask: int64 [K].
Tensor true_positions(const char* op, const Tensor& mask) {
  return host_op(op, {mask}, [](const std::vector<const Buffer*>& in) -> std::vector<BufferPtr> {
    return {cpu::flat_nonzero_indices(*in[0])};
  })[0];
}
}  // namespace

Tensor nonzero(const Tensor& a) {
  return host_op("nonzero", {a}, [](const std::vector<const Buffer*>& in) -> std::vector<BufferPtr> {
    return {cpu::nonzero_indices(*in[0])};
  })[0];
}

std::vector<Tensor> nonzero_tuple(const Tensor& a) {
  return host_op("nonzero", {a}, [](const std::vector<const Buffer*>& in) -> std::vector<BufferPtr> {
    const BufferPtr all = cpu::nonzero_indices(*in[0]);
    const int64_t k = all->shape()[0], rank = all->shape()[1];
    std::vector<BufferPtr> out;
    for (int64_t d = 0; d < rank; ++d) {
      BufferPtr column = Buffer::allocate(DType::kInt64, {k});
      for (int64_t i = 0; i < k; ++i) column->as<int64_t>()[i] = all->as<int64_t>()[i * rank + d];
      out.push_back(std::move(column));
    }
    return out;
  });
}

Tensor masked_select(const Tensor& a, const Tensor& mask) {
  if (!a.defined() || !mask.defined()) throw EngineError("masked_select: undefined tensor operand");
  check_bool_mask("masked_select", mask);
  const Shape shape = at_call([&] { return broadcast_shapes(a.shape(), mask.shape(), "masked_select"); });
  // Only the mask leaves the device; the selection itself is an index_select
  // on the device, whose gradient scatters back into `a`.
  const Tensor positions = true_positions("masked_select", expand(mask, shape));
  return index_select(reshape(expand(a, shape), {-1}), 0, positions);
}

Tensor boolean_mask_index(const Tensor& a, const Tensor& mask) {
  if (!a.defined() || !mask.defined()) throw EngineError("index: undefined tensor operand");
  check_bool_mask("index", mask);
  const Shape& s = a.shape();
  const Shape& m = mask.shape();
  if (m.size() > s.size()) {
    throw IndexError("too many indices for tensor of dimension " + std::to_string(s.size()) + " (a boolean mask of " +
                     std::to_string(m.size()) + " dims)" + at_line(current_source_location()));
  }
  for (size_t d = 0; d < m.size(); ++d) {
    if (m[d] != s[d]) {
      throw IndexError("the shape of the mask " + shape_str(m) + " at index " + std::to_string(d) +
                       " does not match the shape of the indexed tensor " + shape_str(s) + " at index " +
                       std::to_string(d) + at_line(current_source_location()));
    }
  }
  Shape rows{numel(m)};
  rows.insert(rows.end(), s.begin() + static_cast<std::ptrdiff_t>(m.size()), s.end());
  return index_select(reshape(a, rows), 0, true_positions("masked_select", mask));
}

UniqueResult unique(const Tensor& a) {
  std::vector<Tensor> out = host_op("unique", {a}, [](const std::vector<const Buffer*>& in) -> std::vector<BufferPtr> {
    cpu::UniqueResult r = cpu::unique_values(*in[0]);
    return {r.values, r.inverse, r.counts};
  });
  return {out[0], out[1], out[2]};
}

Tensor cumsum(const Tensor& a, int64_t dim) { return back_to(apply(OpKind::kCumsum, {as_1d(a)}, {{"dim", dim}}), a); }
Tensor cumprod(const Tensor& a, int64_t dim) { return back_to(apply(OpKind::kCumprod, {as_1d(a)}, {{"dim", dim}}), a); }
Tensor tril(const Tensor& a, int64_t diagonal) { return apply(OpKind::kTril, {a}, {{"diagonal", diagonal}}); }
Tensor triu(const Tensor& a, int64_t diagonal) { return apply(OpKind::kTriu, {a}, {{"diagonal", diagonal}}); }

}  // namespace lazyscope::ops
