// An IR node: one traced op. A node owns its operands (shared_ptr), never its
// users — users are found by walking from the roots, so there is no cycle of
// references. Its structural hash is computed once, in the constructor.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "core/source_location.h"
#include "ir/attrs.h"
#include "ir/op_table.h"

namespace lazyscope {

class Node;
using NodePtr = std::shared_ptr<const Node>;

class Node {
 public:
  // A computed node. Shape and dtype come from the op table's rule.
  Node(OpKind op, std::vector<NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
       const std::string* scope);
  // A graph input bound to `data`. Its hash covers shape and dtype, never the
  // values, so a new batch of the same shape hits the compile cache.
  explicit Node(BufferPtr data, SourceLocation source = {});
  // A graph input whose buffer stores `dtype` in a narrower format (bf16
  // mode: float32 data held as bfloat16). The node, its hash and the tensor
  // report `dtype`; executables widen the buffer when they read it.
  Node(BufferPtr data, SourceLocation source, DType dtype);

  OpKind op() const { return op_; }
  bool is_leaf() const { return op_ == OpKind::kDeviceData; }
  const std::vector<NodePtr>& operands() const { return operands_; }
  const Shape& shape() const { return spec_.shape; }
  DType dtype() const { return spec_.dtype; }
  const TensorSpec& spec() const { return spec_; }
  const Attrs& attrs() const { return attrs_; }
  const SourceLocation& source() const { return source_; }
  const std::string* scope() const { return scope_; }
  uint64_t hash() const { return hash_; }
  // Op, attributes and output spec only: what the graph hash folds in per node.
  uint64_t local_hash() const { return local_hash_; }
  // Device data leaves only.
  const BufferPtr& data() const { return data_; }

 private:
  OpKind op_;
  std::vector<NodePtr> operands_;
  TensorSpec spec_;
  Attrs attrs_;
  SourceLocation source_;
  const std::string* scope_ = nullptr;
  uint64_t local_hash_ = 0;
  uint64_t hash_ = 0;
  BufferPtr data_;
};

// Hash of an op with its attributes and output spec, without operands: the
// graph hash folds operand positions in separately.
uint64_t node_local_hash(OpKind op, const Attrs& attrs, const TensorSpec& spec);

}  // namespace lazyscope
