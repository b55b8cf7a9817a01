#include "ir/node.h"

#include <algorithm>
#include <iterator>

#include "core/hash.h"
#include "core/pool.h"
#include "metrics/metrics.h"

namespace lazyscope {

namespace {
uint64_t shape_bytes_hash(const Shape& shape) { return hash_bytes(shape.data(), shape.size() * sizeof(int64_t)); }
}  // namespace

uint64_t node_local_hash(OpKind op, const Attrs& attrs, DType dtype, uint64_t shape_hash) {
  uint64_t h = hash_combine(static_cast<uint64_t>(op), static_cast<uint64_t>(dtype));
  h = hash_combine(h, shape_hash);
  if (!attrs.empty()) h = hash_combine(h, attrs.hash());
  return h;
}

uint64_t node_local_hash(OpKind op, const Attrs& attrs, const TensorSpec& spec) {
  return node_local_hash(op, attrs, spec.dtype, shape_bytes_hash(spec.shape));
}

Node::Node(OpKind op, std::span<const NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
           const std::string* scope)
    : op_(op),
      num_operands_(static_cast<uint32_t>(operands.size())),
      spec_(std::move(spec)),
      attrs_(std::move(attrs)),
      source_(source),
      scope_(scope) {
  if (operands.size() <= inline_.size()) {
    std::copy(operands.begin(), operands.end(), inline_.begin());
  } else {
    spilled_.assign(operands.begin(), operands.end());
  }
  finish(this->operands(), false);
}

Node::Node(OpKind op, std::span<NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
           const std::string* scope, bool shape_of_first)
    : op_(op),
      num_operands_(static_cast<uint32_t>(operands.size())),
      spec_(std::move(spec)),
      attrs_(std::move(attrs)),
      source_(source),
      scope_(scope) {
  if (operands.size() <= inline_.size()) {
    std::move(operands.begin(), operands.end(), inline_.begin());
  } else {
    spilled_.assign(std::make_move_iterator(operands.begin()), std::make_move_iterator(operands.end()));
  }
  finish(this->operands(), shape_of_first);
}

void Node::finish(std::span<const NodePtr> operands, bool shape_of_first) {
  // Most ops keep an operand's shape (elementwise chains): its shape hash
  // then is that operand's, where hashing the bytes again cost more than
  // the rest of the node (FNV-1a, one byte at a time).
  if (shape_of_first && !operands.empty()) {
    shape_hash_ = operands[0]->shape_hash_;
  } else {
    const auto same_shape = std::find_if(operands.begin(), operands.end(),
                                         [&](const NodePtr& operand) { return operand->shape() == spec_.shape; });
    shape_hash_ = same_shape != operands.end() ? (*same_shape)->shape_hash_ : shape_bytes_hash(spec_.shape);
  }
  local_hash_ = node_local_hash(op_, attrs_, spec_.dtype, shape_hash_);
  hash_ = local_hash_;
  for (const NodePtr& operand : operands) {
    hash_ = hash_combine(hash_, operand->hash());
    reads_leaf_ = reads_leaf_ || operand->is_leaf();
  }
  LAZYSCOPE_COUNTER("CreatedIrNodes")->add(1);
}

Node::Node(BufferPtr data, SourceLocation source) : Node(data, source, data->dtype()) {}

Node::Node(BufferPtr data, SourceLocation source, DType dtype)
    : op_(OpKind::kDeviceData), spec_{data->shape(), dtype}, source_(source), data_(std::move(data)) {
  shape_hash_ = shape_bytes_hash(spec_.shape);
  local_hash_ = node_local_hash(op_, attrs_, spec_.dtype, shape_hash_);
  hash_ = local_hash_;
}

namespace {
// The operands that dying nodes held the last reference to, while the
// outermost ~Node on this thread releases them one at a time. Released
// from inside ~Node, an operand's own destructor would release its
// operands, and so on: a chain of N nodes was N nested destructor calls
// (a 90,000-node chain overflowed a 1 MiB thread stack). A trivial
// thread_local of the initial-exec model, as the pools' (core/pool.h).
[[gnu::tls_model("initial-exec")]] thread_local std::vector<NodePtr>* t_dying = nullptr;

bool owned_last(const NodePtr& p) { return p && p.use_count() == 1; }
}  // namespace

Node::~Node() {
  pool::stash_vector(spec_.shape);
  if (t_dying) {  // inside an outer release: hand them to it
    for (NodePtr& p : inline_) {
      if (owned_last(p)) t_dying->push_back(std::move(p));
    }
    for (NodePtr& p : spilled_) {
      if (owned_last(p)) t_dying->push_back(std::move(p));
    }
    return;
  }
  // Outermost: operands it does not own last are only decremented by the
  // members' destructors; a chain starts only where one is owned last.
  if (std::none_of(inline_.begin(), inline_.end(), owned_last) &&
      std::none_of(spilled_.begin(), spilled_.end(), owned_last)) {
    return;
  }
  std::vector<NodePtr> dying;
  for (NodePtr& p : inline_) {
    if (owned_last(p)) dying.push_back(std::move(p));
  }
  for (NodePtr& p : spilled_) {
    if (owned_last(p)) dying.push_back(std::move(p));
  }
  t_dying = &dying;
  while (!dying.empty()) {
    NodePtr last = std::move(dying.back());
    dying.pop_back();
    last.reset();  // its ~Node pushes the operands it owned last onto `dying`
  }
  t_dying = nullptr;
}

NodePtr make_node(OpKind op, std::span<const NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
                  const std::string* scope) {
  return pool::make_pooled<Node>(op, operands, std::move(spec), std::move(attrs), source, scope);
}

NodePtr make_node_moving(OpKind op, std::span<NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
                         const std::string* scope, bool shape_of_first) {
  return pool::make_pooled<Node>(op, operands, std::move(spec), std::move(attrs), source, scope, shape_of_first);
}

NodePtr make_leaf(BufferPtr data, SourceLocation source) { return pool::make_pooled<Node>(std::move(data), source); }

NodePtr make_leaf(BufferPtr data, SourceLocation source, DType dtype) {
  return pool::make_pooled<Node>(std::move(data), source, dtype);
}

}  // namespace lazyscope
