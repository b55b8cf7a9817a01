#include "ir/node.h"

#include "core/hash.h"
#include "metrics/metrics.h"

namespace lazyscope {

uint64_t node_local_hash(OpKind op, const Attrs& attrs, const TensorSpec& spec) {
  uint64_t h = hash_combine(static_cast<uint64_t>(op), static_cast<uint64_t>(spec.dtype));
  h = hash_combine(h, hash_bytes(spec.shape.data(), spec.shape.size() * sizeof(int64_t)));
  if (!attrs.empty()) h = hash_combine(h, attrs.hash());
  return h;
}

Node::Node(OpKind op, std::vector<NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
           const std::string* scope)
    : op_(op),
      operands_(std::move(operands)),
      spec_(std::move(spec)),
      attrs_(std::move(attrs)),
      source_(source),
      scope_(scope) {
  local_hash_ = node_local_hash(op_, attrs_, spec_);
  hash_ = local_hash_;
  for (const NodePtr& operand : operands_) hash_ = hash_combine(hash_, operand->hash());
  LAZYSCOPE_COUNTER("CreatedIrNodes")->add(1);
}

Node::Node(BufferPtr data, SourceLocation source) : Node(data, source, data->dtype()) {}

Node::Node(BufferPtr data, SourceLocation source, DType dtype)
    : op_(OpKind::kDeviceData),
      spec_{data->shape(), dtype},
      source_(source),
      data_(std::move(data)) {
  local_hash_ = node_local_hash(op_, attrs_, spec_);
  hash_ = local_hash_;
}

}  // namespace lazyscope
