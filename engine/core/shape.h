// Tensor shapes: dimension sizes, row-major and contiguous (lazy tensors never
// expose strides, as the seeds describe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lazyscope {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[128, 784]"
// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);
// NumPy/PyTorch broadcasting; throws ShapeError naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Normalizes a possibly negative dim against `rank`; throws ShapeError.
int64_t wrap_dim(int64_t dim, size_t rank, const char* op);
// Which dims of `shape` a reduction over `dims` (empty = all, negative
// allowed) reduces; throws ShapeError for an out-of-range or repeated dim.
std::vector<bool> reduced_dims(const Shape& shape, const std::vector<int64_t>& dims, const char* op);
// The shape after reducing `reduced` dims: removed, or kept as 1.
Shape reduced_shape(const Shape& shape, const std::vector<bool>& reduced, bool keepdim);

}  // namespace lazyscope
