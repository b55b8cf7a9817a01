#include "autograd/autograd.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "core/pool.h"
#include "tensor/ops.h"
#include "tensor/views.h"

namespace lazyscope::autograd {
namespace {

thread_local bool tls_grad_enabled = true;
// A create_graph pass is running: see building_higher_order().
thread_local bool tls_higher_order = false;

std::shared_ptr<GradFn> accumulator_of(const std::shared_ptr<TensorImpl>& leaf) {
  std::shared_ptr<GradFn> acc = leaf->grad_accumulator.lock();
  if (!acc) {
    acc = pool::make_pooled<GradFn>();
    acc->leaf = leaf;
    leaf->grad_accumulator = acc;
  }
  return acc;
}

// Where the gradient of `t` goes: its GradFn, its leaf accumulator, or
// nowhere.
std::shared_ptr<GradFn> edge_to(const Tensor& t) {
  if (t.impl()->grad_fn) return t.impl()->grad_fn;
  if (t.impl()->requires_grad) return accumulator_of(t.impl());
  return nullptr;
}

// A gradient brought to the input's shape (summing broadcast dims) and dtype.
Tensor fit(const Tensor& grad, const Shape& shape, DType dtype) {
  Tensor g = ops::sum_to_size(grad, shape);
  return g.dtype() == dtype ? g : ops::cast(g, dtype);
}

// `grad` after the hooks, each seeing the previous one's result.
Tensor run_hooks(const std::shared_ptr<GradHooks>& hooks, Tensor grad) {
  for (const auto& [id, hook] : std::vector(hooks->hooks)) {  // a copy: a hook may remove itself
    Tensor changed = hook(grad);
    if (!changed.defined()) continue;
    if (changed.shape() != grad.shape()) {
      throw ShapeError("backward: a hook returned a gradient of shape " + shape_str(changed.shape()) +
                       " for a tensor of shape " + shape_str(grad.shape()) + "; a hook must keep the shape");
    }
    grad = changed.dtype() == grad.dtype() ? changed : ops::cast(changed, grad.dtype());
  }
  return grad;
}

// The gradient reaching `t` after its hooks (register_hook); a non-leaf
// that retains its gradient keeps it.
Tensor apply_hooks(TensorImpl& t, Tensor grad) {
  const std::shared_ptr<GradHooks> hooks = t.grad_hooks;
  if (!hooks || !grad.defined()) return grad;
  grad = run_hooks(hooks, std::move(grad));
  if (hooks->retain && t.grad_fn) {
    const Tensor kept = grad.detach();
    t.grad = t.grad ? ops::add(Tensor(t.grad), kept).impl() : kept.impl();
  }
  return grad;
}

void accumulate(std::unordered_map<GradFn*, Tensor>& pending, GradFn* fn, const Tensor& grad) {
  Tensor& slot = pending[fn];
  slot = slot.defined() ? ops::add(slot, grad) : grad;
}

// The result as the GradFn saves it: its value (buffer or IR node) without
// its GradFn. Unlike detach() it is not registered with the executor: a
// saved value must not become an extra output of the step's graph.
Tensor saved_alias(const Tensor& t) {
  auto impl = pool::make_pooled<TensorImpl>();
  impl->device = t.device();
  impl->spec = t.impl()->spec;
  impl->buffer = t.impl()->buffer;
  impl->ir = t.impl()->ir;
  return Tensor(std::move(impl));
}

Tensor ones_like(const Tensor& t) { return ops::expand(ops::scalar(1.0, t.dtype(), t.device()), t.shape()); }

// A saved value the rule reads must be the one saved: an in-place op since
// would make the gradient silently wrong, so it is an error, as in PyTorch.
void check_versions(const GradFn& fn) {
  const SavedUse use = saved_use(fn.op);
  const auto fail = [&](const std::string& what, const Shape& shape, uint64_t now, uint64_t saved) {
    throw EngineError(
        "backward: one of the variables needed for gradient computation has been modified by an "
        "inplace operation: " +
        what + " of " + std::string(op_name(fn.op)) + " (shape " + shape_str(shape) + ") is at version " +
        std::to_string(now) + "; expected version " + std::to_string(saved) +
        " instead. Compute it out of place, or clone() it before the "
        "in-place op");
  };
  for (size_t i = 0; i < fn.inputs.size(); ++i) {
    if (!use.reads_input(i) || !fn.inputs[i].defined()) continue;
    const uint64_t now = views::version_of(*fn.inputs[i].impl());
    if (now != fn.input_versions[i]) fail("input " + std::to_string(i), fn.input_shapes[i], now, fn.input_versions[i]);
  }
  if (use.output) {
    if (const auto live = fn.live_output.lock()) {
      const uint64_t now = views::version_of(*live);
      if (now != fn.output_version) fail("output 0", live->spec.shape, now, fn.output_version);
    }
  }
}

}  // namespace

const Tensor& SavedContext::input(size_t i) const {
  if (!use.reads_input(i)) {
    throw EngineError("gradient rule of " + std::string(op_name(op)) + " read saved input " + std::to_string(i) +
                      ", which its row in autograd/gradients.cpp does not declare (an engine bug: declare it there)");
  }
  return saved_inputs[i];
}

const Tensor& SavedContext::output() const {
  if (!use.output) {
    throw EngineError("gradient rule of " + std::string(op_name(op)) +
                      " read the saved output, which its row in autograd/gradients.cpp does not declare (an engine "
                      "bug: declare it there)");
  }
  return saved_output;
}

bool grad_enabled() { return tls_grad_enabled; }
void set_grad_enabled(bool enabled) { tls_grad_enabled = enabled; }

bool building_higher_order() { return tls_higher_order; }

void record(OpKind op, const std::vector<Tensor>& inputs, const Attrs& attrs, const Tensor& out) {
  if (!tls_grad_enabled || !is_floating(out.dtype())) return;
  const GradRule rule = grad_rule(op);
  if (!rule && !tls_higher_order) return;
  // Most ops of a forward pass without parameters, and every op under a
  // frozen model, record nothing: decide that before allocating anything.
  const bool any_input_needs_grad = std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) {
    return t.impl()->grad_fn != nullptr || t.impl()->requires_grad;
  });
  if (!any_input_needs_grad) return;
  if (!rule) {
    // Only gradient kernels lack a rule and carry a float result that
    // depends on what requires grad: a create_graph pass reached one.
    throw EngineError("backward with create_graph=True: the gradient of this graph runs " + std::string(op_name(op)) +
                      ", which has no derivative of its own, so a higher-order gradient through it is not "
                      "supported (ops with a second derivative: elementwise, matmul, reductions, softmax, "
                      "cross-entropy, layer_norm, convolutions, average pooling and max pooling over windows that "
                      "do not overlap; not fused attention)");
  }
  std::vector<std::shared_ptr<GradFn>> next;
  bool any = false;
  for (const Tensor& t : inputs) {
    next.push_back(edge_to(t));
    any = any || next.back();
  }
  if (!any) return;
  auto fn = pool::make_pooled<GradFn>();
  fn->op = op;
  fn->attrs = attrs;
  fn->inputs = inputs;
  fn->output = saved_alias(out);
  fn->live_output = out.impl();
  fn->output_version = views::version_of(*out.impl());
  for (const Tensor& t : inputs) {
    fn->input_versions.push_back(views::version_of(*t.impl()));
    fn->input_shapes.push_back(t.shape());
    fn->input_dtypes.push_back(t.dtype());
  }
  fn->next = std::move(next);
  out.impl()->grad_fn = std::move(fn);
  out.impl()->requires_grad = true;
}

namespace {

// root's seed gradient: `gradient` checked against it, or ones for a
// one-element root. `op` names the caller in errors.
Tensor seed_of(const Tensor& root, const Tensor& gradient, const char* op) {
  if (!root.defined()) throw EngineError(std::string(op) + ": undefined tensor");
  views::refresh_if_view(root);
  if (!root.requires_grad()) {
    throw EngineError(std::string(op) +
                      ": the tensor does not require grad and has no grad_fn; mark a leaf with "
                      "requires_grad_() before computing it");
  }
  Tensor seed = gradient;
  if (!seed.defined()) {
    if (root.numel() != 1) {
      throw EngineError(std::string(op) +
                        ": a gradient can be created implicitly only for outputs of one element, got shape " +
                        shape_str(root.shape()) + "; pass gradient=");
    }
    seed = ones_like(root);
  } else if (seed.shape() != root.shape()) {
    throw ShapeError(std::string(op) + ": gradient of shape " + shape_str(seed.shape()) + " for a tensor of shape " +
                     shape_str(root.shape()));
  } else if (seed.device() != root.device()) {
    throw DeviceMismatchError(std::string(op) + ": gradient on " + seed.device().str() + " for a tensor on " +
                              root.device().str());
  }
  return fit(seed, root.shape(), root.dtype());
}

// The reverse pass of backward() and grad(): from the roots (their seeds
// given), every node reachable once, with the sum of its incoming
// gradients. With `captured`, no leaf's .grad is written: the gradient that
// reaches each node named in it is stored there instead (grad()).
// Sets grad mode and the higher-order flag for one backward pass.
class PassMode {
 public:
  explicit PassMode(bool create_graph) : grad_(grad_enabled()), higher_(tls_higher_order) {
    set_grad_enabled(create_graph);
    tls_higher_order = create_graph;
  }
  ~PassMode() {
    set_grad_enabled(grad_);
    tls_higher_order = higher_;
  }
  PassMode(const PassMode&) = delete;
  PassMode& operator=(const PassMode&) = delete;

 private:
  bool grad_, higher_;
};

// The saved output of `fn` with `fn` as its GradFn again, for a create_graph
// pass whose rule reads it after the caller dropped the result: the alias
// is saved without its GradFn (no cycle fn -> output -> fn), and a rule
// reading it must still differentiate through it.
Tensor output_with_history(const Tensor& alias, const std::shared_ptr<GradFn>& fn) {
  auto impl = pool::make_pooled<TensorImpl>();
  impl->device = alias.device();
  impl->spec = alias.impl()->spec;
  impl->buffer = alias.impl()->buffer;
  impl->ir = alias.impl()->ir;
  impl->grad_fn = fn;
  impl->requires_grad = true;
  return Tensor(std::move(impl));
}

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& seeds, bool retain_graph,
                  std::unordered_map<GradFn*, Tensor>* captured, bool create_graph) {
  // The backward pass builds no graph of its own, unless create_graph asks
  // for higher-order gradients: then every op of the rules is recorded.
  PassMode mode(create_graph);
  std::vector<std::shared_ptr<GradFn>> starts;
  for (const Tensor& root : roots) starts.push_back(edge_to(root));
  // create_graph: each node's owner, for output_with_history.
  std::unordered_map<GradFn*, std::shared_ptr<GradFn>> owners;
  if (create_graph) {
    for (const auto& start : starts) owners.try_emplace(start.get(), start);
  }

  // Count, for every node reachable from the root, how many edges lead to
  // it; a node runs once all of them have delivered (Kahn's algorithm), so
  // each runs once with the sum of its incoming gradients.
  std::unordered_map<GradFn*, int> dependencies;
  std::vector<GradFn*> stack;
  for (const auto& start : starts) {
    if (dependencies.try_emplace(start.get(), 0).second) stack.push_back(start.get());
  }
  while (!stack.empty()) {
    GradFn* fn = stack.back();
    stack.pop_back();
    for (const auto& n : fn->next) {
      if (!n) continue;
      if (create_graph) owners.try_emplace(n.get(), n);
      auto [it, inserted] = dependencies.try_emplace(n.get(), 0);
      ++it->second;
      if (inserted) stack.push_back(n.get());
    }
  }

  std::unordered_map<GradFn*, Tensor> pending;
  for (size_t r = 0; r < starts.size(); ++r) accumulate(pending, starts[r].get(), seeds[r]);
  // Only roots can start with no incoming edges (a root another root leads
  // to waits for it): no pass over every node of the graph per backward.
  std::vector<GradFn*> ready;
  for (const auto& start : starts) {
    if (dependencies[start.get()] == 0 && std::find(ready.begin(), ready.end(), start.get()) == ready.end()) {
      ready.push_back(start.get());
    }
  }
  while (!ready.empty()) {
    GradFn* fn = ready.back();
    ready.pop_back();
    // A node whose inputs produced no gradient for it still runs, with none,
    // so that the nodes after it are released in turn.
    Tensor grad;
    if (auto it = pending.find(fn); it != pending.end()) {
      grad = std::move(it->second);
      pending.erase(it);
    }
    if (fn->is_accumulator()) {
      if (!grad.defined()) continue;
      TensorImpl& leaf = *fn->leaf;
      grad = apply_hooks(leaf, std::move(grad));
      // Never the caller's tensor itself: an in-place op on .grad (zero_())
      // must not write into it. With create_graph the gradient keeps its
      // graph (x.grad of a gradient penalty is differentiated again).
      if (captured) {
        if (auto c = captured->find(fn); c != captured->end()) c->second = create_graph ? grad : grad.detach();
        continue;
      }
      if (!create_graph) grad = grad.detach();
      leaf.grad = leaf.grad ? ops::add(Tensor(leaf.grad), grad).impl() : grad.impl();
      continue;
    }
    if (fn->released) {
      throw EngineError(
          "backward: trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed); pass retain_graph=True to the first backward");
    }
    std::vector<Tensor> grads;
    // The live result once per node, and only when a gradient reached it:
    // its hooks (register_hook) and, below, its value for the rule.
    std::shared_ptr<TensorImpl> live = grad.defined() ? fn->live_output.lock() : nullptr;
    if (live && live->grad_hooks) {
      grad = apply_hooks(*live, std::move(grad));
    } else if (fn->hooks && grad.defined()) {
      grad = run_hooks(fn->hooks, std::move(grad));  // the result was dropped: its hooks still run
    }
    if (captured && grad.defined()) {
      if (auto c = captured->find(fn); c != captured->end()) c->second = grad;
    }
    if (grad.defined()) check_versions(*fn);
    if (grad.defined()) {
      std::vector<bool> needs;
      for (const auto& n : fn->next) needs.push_back(n != nullptr);
      const Tensor output = live                   ? Tensor(live)
                            : !create_graph        ? fn->output
                            : fn->output.defined() ? output_with_history(fn->output, owners[fn])
                                                   : fn->output;
      grads = grad_rule(fn->op)(
          SavedContext{fn->op, saved_use(fn->op), fn->inputs, output, fn->input_shapes, fn->attrs, needs}, grad);
    }
    for (size_t i = 0; i < fn->next.size(); ++i) {
      GradFn* n = fn->next[i].get();
      if (!n) continue;
      if (i < grads.size() && grads[i].defined()) {
        accumulate(pending, n, fit(grads[i], fn->input_shapes[i], fn->input_dtypes[i]));
      }
      if (--dependencies[n] == 0) ready.push_back(n);
    }
    if (!retain_graph) {
      fn->inputs.clear();
      fn->output = Tensor();
      fn->released = true;
    }
  }
}

}  // namespace

void backward(const Tensor& root, const Tensor& gradient, bool retain_graph, bool create_graph) {
  const Tensor seed = seed_of(root, gradient, "backward");
  run_backward({root}, {seed}, retain_graph, nullptr, create_graph);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                         const std::vector<Tensor>& inputs, bool retain_graph, bool allow_unused, bool create_graph) {
  if (outputs.empty()) throw EngineError("grad: no outputs to differentiate");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size()) {
    throw EngineError("grad: " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
                      std::to_string(outputs.size()) + " outputs");
  }
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    seeds.push_back(seed_of(outputs[i], grad_outputs.empty() ? Tensor() : grad_outputs[i], "grad"));
  }
  std::unordered_map<GradFn*, Tensor> captured;
  std::vector<GradFn*> node_of;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined()) throw EngineError("grad: input " + std::to_string(i) + " is undefined");
    const std::shared_ptr<GradFn> node = edge_to(in);
    if (!node) {
      throw EngineError("grad: input " + std::to_string(i) + " of shape " + shape_str(in.shape()) +
                        " does not require grad");
    }
    captured.try_emplace(node.get());
    node_of.push_back(node.get());
  }
  run_backward(outputs, seeds, retain_graph, &captured, create_graph);
  std::vector<Tensor> result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& g = captured[node_of[i]];
    if (!g.defined() && !allow_unused) {
      throw EngineError("grad: input " + std::to_string(i) + " of shape " + shape_str(inputs[i].shape()) +
                        " was not used to compute the outputs; pass allow_unused=True to get None for it");
    }
    result.push_back(g.defined() ? fit(g, inputs[i].shape(), inputs[i].dtype()) : Tensor());
  }
  return result;
}

}  // namespace lazyscope::autograd
