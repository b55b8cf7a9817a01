#include "core/shape.h"

#include "core/error.h"

namespace lazyscope {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                       " cannot be broadcast (dimension " + std::to_string(i) + ": " + std::to_string(da) + " vs " +
                       std::to_string(db) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, size_t rank, const char* op) {
  const auto r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= std::max<int64_t>(r, 1)) {
    throw ShapeError(std::string(op) + ": dimension " + std::to_string(dim) + " is out of range for a tensor of rank " +
                     std::to_string(rank));
  }
  return dim < 0 ? dim + r : dim;
}

std::vector<bool> reduced_dims(const Shape& shape, const std::vector<int64_t>& dims, const char* op) {
  std::vector<bool> reduced(shape.size(), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, shape.size(), op);
    if (shape.empty()) continue;  // dim 0 or -1 of a 0-d tensor: nothing to reduce
    if (reduced[static_cast<size_t>(w)]) {
      throw ShapeError(std::string(op) + ": dim " + std::to_string(w) + " appears multiple times in the list of dims");
    }
    reduced[static_cast<size_t>(w)] = true;
  }
  return reduced;
}

Shape reduced_shape(const Shape& shape, const std::vector<bool>& reduced, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(shape[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

}  // namespace lazyscope
