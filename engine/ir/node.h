// An IR node: one traced op. A node owns its operands (shared_ptr), never its
// users — users are found by walking from the roots, so there is no cycle of
// references. Its structural hash is computed once, in the constructor.
// Nodes are made with make_node()/make_leaf(): from per-thread pools, with
// up to three operands stored inline (a trace makes a node per op; a
// separate operand vector per node was one more allocation each).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
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
  Node(OpKind op, std::span<const NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
       const std::string* scope);
  // The same, taking the operands' references over (`operands` is left
  // empty); `shape_of_first` says the spec's shape is operand 0's (its
  // shape hash is then reused without comparing).
  Node(OpKind op, std::span<NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
       const std::string* scope, bool shape_of_first);
  // A graph input bound to `data`. Its hash covers shape and dtype, never the
  // values, so a new batch of the same shape hits the compile cache.
  explicit Node(BufferPtr data, SourceLocation source = {});
  // A graph input whose buffer stores `dtype` in a narrower format (bf16
  // mode: float32 data held as bfloat16). The node, its hash and the tensor
  // report `dtype`; executables widen the buffer when they read it.
  Node(BufferPtr data, SourceLocation source, DType dtype);
  // Keeps the shape's storage for the next trace (pool::stash_vector), and
  // releases operands it owns last without recursing (node.cpp).
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  OpKind op() const { return op_; }
  bool is_leaf() const { return op_ == OpKind::kDeviceData; }
  std::span<const NodePtr> operands() const {
    return spilled_.empty() ? std::span<const NodePtr>(inline_.data(), num_operands_)
                            : std::span<const NodePtr>(spilled_);
  }
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
  // Whether some operand is a device-data leaf (the registry counts those
  // toward the graph limit with the node: a replayed op with none skips
  // reading its operands).
  bool reads_leaf() const { return reads_leaf_; }

  // Scratch of the executor, which walks graphs under its device's lock:
  // the sync epoch in which the node was last counted toward the graph
  // limit, and the walk (epoch, post-order position) that last reached it.
  // Marks instead of hash sets keyed by address: no allocation per node.
  mutable uint64_t counted_epoch = 0;
  mutable uint64_t visit_epoch = 0;
  mutable int visit_position = -1;
  // Scratch of the executor's reuse list (graph_executor.cpp, settle_reuse),
  // under the device's lock: the pass that last marked the node, and what it
  // found (a leaf: the references from the list's nodes; an op: whether it
  // is kept for the next step).
  mutable uint64_t reuse_epoch = 0;
  mutable long reuse_refs = 0;
  // Scratch of trace_reused, under the same lock: the backend generation at
  // which the device was last found to run this node's op (1 + generation;
  // 0: never asked). A replayed op asks again only when a backend was
  // installed since (or some op is forced off the device).
  mutable uint64_t lowered_generation = 0;

 private:
  OpKind op_;
  std::array<NodePtr, 3> inline_;
  std::vector<NodePtr> spilled_;  // operands when there are more than inline_ holds
  uint32_t num_operands_ = 0;
  TensorSpec spec_;
  Attrs attrs_;
  SourceLocation source_;
  const std::string* scope_ = nullptr;
  void finish(std::span<const NodePtr> operands, bool shape_of_first);  // hashes, counter
  uint64_t shape_hash_ = 0;  // hash_bytes of the shape: reused by a user of the same shape
  uint64_t local_hash_ = 0;
  uint64_t hash_ = 0;
  bool reads_leaf_ = false;
  BufferPtr data_;
};

// A computed node, and a device-data leaf (see the constructors), from the pool.
NodePtr make_node(OpKind op, std::span<const NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
                  const std::string* scope);
NodePtr make_node_moving(OpKind op, std::span<NodePtr> operands, TensorSpec spec, Attrs attrs, SourceLocation source,
                         const std::string* scope, bool shape_of_first);
NodePtr make_leaf(BufferPtr data, SourceLocation source);
NodePtr make_leaf(BufferPtr data, SourceLocation source, DType dtype);

// Hash of an op with its attributes and output spec, without operands: the
// graph hash folds operand positions in separately.
uint64_t node_local_hash(OpKind op, const Attrs& attrs, const TensorSpec& spec);
// The same, given hash_bytes of the spec's shape.
uint64_t node_local_hash(OpKind op, const Attrs& attrs, DType dtype, uint64_t shape_hash);

}  // namespace lazyscope
