#include "tensor/views.h"

#include <optional>
#include <string>

#include "core/error.h"
#include "core/pool.h"
#include "core/source_location.h"
#include "tensor/grad_fn.h"
#include "tensor/upcalls.h"

namespace lazyscope::views {
namespace {

std::string at_line() {
  const SourceLocation loc = current_source_location();
  return loc.known() ? " (at " + loc.str() + ")" : "";
}

std::shared_ptr<uint64_t> counter_of(TensorImpl& t) {
  if (!t.version) t.version = std::make_shared<uint64_t>(0);
  return t.version;
}

// A new handle on the same value and autograd history, not registered with
// the executor: the snapshot an in-place op computes from, so that nothing
// it records refers to the tensor being rebound.
Tensor alias(const Tensor& t) {
  auto impl = pool::make_pooled<TensorImpl>();
  impl->device = t.device();
  impl->spec = t.impl()->spec;
  impl->buffer = t.impl()->buffer;
  impl->ir = t.impl()->ir;
  impl->requires_grad = t.impl()->requires_grad;
  impl->grad_fn = t.impl()->grad_fn;
  return Tensor(std::move(impl));
}

// Points `t` at `value`'s data (and, unless data_only, its autograd history).
void rebind(const Tensor& t, const Tensor& value, bool data_only) {
  TensorImpl& impl = *t.impl();
  const bool was_pending = impl.pending();
  impl.spec = value.impl()->spec;
  impl.buffer = value.impl()->buffer;
  impl.ir = value.impl()->ir;
  if (impl.device.is_lazy() && impl.pending() && !was_pending) executor::register_pending(t.impl());
  if (data_only) return;
  if (const auto& fn = value.impl()->grad_fn) {
    impl.grad_fn = fn;
    impl.requires_grad = true;
    fn->live_output = t.impl();
  }
}

class GradModeGuard {
 public:
  explicit GradModeGuard(bool mode) : previous_(autograd::grad_enabled()) { autograd::set_grad_enabled(mode); }
  ~GradModeGuard() { autograd::set_grad_enabled(previous_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace

Tensor make_view(const Tensor& base, const Tensor& view, std::function<Tensor(const Tensor&)> regenerate,
                 std::function<Tensor(const Tensor&, const Tensor&)> write_back, const char* kind, bool data_only) {
  // An identity view (x.view(x.shape)) is the base itself: it aliases trivially.
  if (view.impl() == base.impl()) return view;
  auto info = std::make_shared<ViewInfo>();
  info->base = base.impl();
  info->regenerate = std::move(regenerate);
  info->write_back = std::move(write_back);
  info->kind = kind;
  info->data_only = data_only;
  info->grad_mode = autograd::grad_enabled();
  view.impl()->version = counter_of(*base.impl());
  info->seen = *view.impl()->version;
  view.impl()->view = std::move(info);
  return view;
}

namespace {

// PyTorch's canCast: no floating value into an integer tensor, no non-bool into bool.
bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::kBool && to == DType::kBool) return false;
  return true;
}

// Writes `value` into `t`, through its bases first; bumps no version (the
// caller does, once). Above a detach()/.data link only the data changes:
// the bases keep their autograd history, as PyTorch's do.
void write(const Tensor& t, const Tensor& value, bool data_only, std::vector<TensorImpl*>& touched) {
  if (const auto& info = t.impl()->view) {
    const Tensor base(info->base);
    const bool base_data_only = data_only || info->data_only;
    Tensor new_base;
    {
      std::optional<autograd::NoGradGuard> no_grad;
      if (base_data_only) no_grad.emplace();
      new_base = info->write_back(alias(base), base_data_only ? value.detach() : value);
    }
    write(base, new_base, base_data_only, touched);
  }
  rebind(t, value, data_only);
  touched.push_back(t.impl().get());
}

}  // namespace

uint64_t version_of(const TensorImpl& t) { return t.version ? *t.version : 0; }

void refresh(const Tensor& t) {
  const auto& info = t.impl()->view;
  if (!info || info->seen == version_of(*t.impl())) return;
  const Tensor base(info->base);
  refresh(base);
  Tensor fresh;
  {
    GradModeGuard mode(info->grad_mode && !info->data_only);
    fresh = info->regenerate(base);
  }
  rebind(t, fresh, info->data_only);
  info->seen = version_of(*t.impl());
  if (t.impl()->grad_fn && t.impl()->grad_fn == fresh.impl()->grad_fn) t.impl()->grad_fn->output_version = info->seen;
}

Tensor reshape(const Tensor& a, std::vector<int64_t> shape) {
  const Shape original = a.shape();
  return make_view(
      a, ops::reshape(a, shape), [shape](const Tensor& b) { return ops::reshape(b, shape); },
      [original](const Tensor&, const Tensor& v) { return ops::reshape(v, original); }, "view");
}

Tensor permute(const Tensor& a, std::vector<int64_t> dims) {
  const Tensor out = ops::permute(a, dims);
  std::vector<int64_t> inverse(dims.size());
  const auto rank = static_cast<int64_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[static_cast<size_t>((dims[i] + rank) % rank)] = static_cast<int64_t>(i);
  return make_view(
      a, out, [dims](const Tensor& b) { return ops::permute(b, dims); },
      [inverse](const Tensor&, const Tensor& v) { return ops::permute(v, inverse); }, "permuted view");
}

Tensor expand(const Tensor& a, std::vector<int64_t> shape) {
  return make_view(
      a, ops::expand(a, shape), [shape](const Tensor& b) { return ops::expand(b, shape); }, nullptr, "expanded view");
}

Tensor index(const Tensor& a, const std::vector<ops::IndexItem>& items) {
  return make_view(
      a, ops::index(a, items), [items](const Tensor& b) { return ops::index(b, items); },
      [items](const Tensor& b, const Tensor& v) { return ops::index_put(b, items, v); }, "indexed view");
}

Tensor slice(const Tensor& a, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> steps) {
  return make_view(
      a, ops::slice(a, starts, ends, steps),
      [starts, ends, steps](const Tensor& b) { return ops::slice(b, starts, ends, steps); },
      [starts, ends, steps](const Tensor& b, const Tensor& v) { return ops::slice_scatter(b, v, starts, ends, steps); },
      "slice");
}

Tensor detach(const Tensor& a) {
  refresh_if_view(a);
  return make_view(
      a, a.detach(), [](const Tensor& b) { return b.detach(); }, [](const Tensor&, const Tensor& v) { return v; },
      "detached alias", /*data_only=*/true);
}

Tensor inplace(const Tensor& self, const char* op, const std::function<Tensor(const Tensor& before)>& compute) {
  if (!self.defined()) throw EngineError(std::string(op) + ": undefined tensor");
  refresh_if_view(self);
  if (autograd::grad_enabled()) {
    if (self.requires_grad() && self.is_leaf()) {
      throw EngineError(std::string(op) +
                        ": a leaf Variable that requires grad is being used in an in-place "
                        "operation; do it under no_grad(), or on a clone()" +
                        at_line());
    }
    for (const ViewInfo* v = self.impl()->view.get(); v && !v->data_only; v = v->base->view.get()) {
      if (v->base->requires_grad && !v->base->grad_fn) {
        throw EngineError(std::string(op) +
                          ": a view of a leaf Variable that requires grad is being used in an "
                          "in-place operation" +
                          at_line());
      }
    }
  }
  for (const ViewInfo* v = self.impl()->view.get(); v; v = v->base->view.get()) {
    if (!v->write_back) {
      throw EngineError(std::string(op) + ": cannot write into an " + v->kind + " of shape " + shape_str(self.shape()) +
                        ": more than one element of it refers to a single memory location; clone() it first" +
                        at_line());
    }
  }
  const Tensor before = alias(self);
  Tensor value = compute(before);
  if (value.shape() != self.shape()) {
    throw ShapeError(std::string(op) + ": output with shape " + shape_str(self.shape()) +
                     " doesn't match the broadcast shape " + shape_str(value.shape()) + at_line());
  }
  if (value.dtype() != self.dtype()) {
    if (!can_cast(value.dtype(), self.dtype())) {
      throw EngineError(std::string(op) + ": result type " + std::string(dtype_name(value.dtype())) +
                        " can't be cast to the desired output type " + std::string(dtype_name(self.dtype())) +
                        at_line());
    }
    value = ops::cast(value, self.dtype());
  }
  if (value.impl() == before.impl()) return self;  // nothing changed (clamp_ with no bounds, say)
  std::vector<TensorImpl*> touched;
  write(self, value, /*data_only=*/false, touched);
  const std::shared_ptr<uint64_t> counter = counter_of(*self.impl());
  ++*counter;
  for (TensorImpl* t : touched) {
    if (t->view) t->view->seen = *counter;
    if (t->grad_fn && t->grad_fn->live_output.lock().get() == t) t->grad_fn->output_version = *counter;
  }
  return self;
}

}  // namespace lazyscope::views
