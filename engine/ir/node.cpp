#include "ir/node.h"

#include <algorithm>

#include "core/hash.h"
#include "core/pool.h"
#include "metrics/metrics.h"

namespace lazyscope {

uint64_t node_local_hash(OpKind op, const Attrs& attrs, const TensorSpec& spec) {
  uint64_t h = hash_combine(static_cast<uint64_t>(op), static_cast<uint64_t>(spec.dtype));
  h = hash_combine(h, hash_bytes(spec.shape.data(), spec.shape.size() * sizeof(int64_t)));
  if (!attrs.empty()) h = hash_combine(h, attrs.hash());
  return h;
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
  local_hash_ = node_local_hash(op_, attrs_, spec_);
  hash_ = local_hash_;
  for (const NodePtr& operand : operands) hash_ = hash_combine(hash_, operand->hash());
  LAZYSCOPE_COUNTER("CreatedIrNodes")->add(1);
}

Node::Node(BufferPtr data, SourceLocation source) : Node(data, source, data->dtype()) {}

Node::Node(BufferPtr data, SourceLocation source, DType dtype)
    : op_(OpKind::kDeviceData), spec_{data->shape(), dtype}, source_(source), data_(std::move(data)) {
  local_hash_ = node_local_hash(op_, attrs_, spec_);
  hash_ = local_hash_;
}

NodePtr make_node(OpKind op, std::span<const NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
                  const std::string* scope) {
  return pool::make_pooled<Node>(op, operands, std::move(spec), std::move(attrs), source, scope);
}

NodePtr make_leaf(BufferPtr data, SourceLocation source) { return pool::make_pooled<Node>(std::move(data), source); }

NodePtr make_leaf(BufferPtr data, SourceLocation source, DType dtype) {
  return pool::make_pooled<Node>(std::move(data), source, dtype);
}

}  // namespace lazyscope
