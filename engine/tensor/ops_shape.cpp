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
#include "tensor/views.h"

// Shape and layout ops: reshape-like views, transpose, squeeze, cat, stack, slice, split.

namespace lazyscope::ops {
using detail::at_call;
using detail::at_line;

Tensor sum_to_size(const Tensor& a, const Shape& shape) {
  const Shape& s = a.shape();
  if (s == shape) return a;
  if (shape.size() > s.size()) {
    throw ShapeError("sum_to_size: cannot sum shape " + shape_str(s) + " to " + shape_str(shape));
  }
  const size_t lead = s.size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i < lead) {
      dims.push_back(static_cast<int64_t>(i));
    } else if (shape[i - lead] == 1 && s[i] != 1) {
      dims.push_back(static_cast<int64_t>(i));
    } else if (shape[i - lead] != s[i]) {
      throw ShapeError("sum_to_size: cannot sum shape " + shape_str(s) + " to " + shape_str(shape));
    }
  }
  return reshape(sum(a, std::move(dims), /*keepdim=*/true), shape);
}

Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  const size_t rank = a.shape().size();
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) dims[i] = static_cast<int64_t>(i);
  if (rank == 0) return a;  // PyTorch accepts dims 0 and -1 of a 0-d tensor
  at_call([&] {
    std::swap(dims[static_cast<size_t>(wrap_dim(dim0, rank, "transpose"))],
              dims[static_cast<size_t>(wrap_dim(dim1, rank, "transpose"))]);
    return 0;
  });
  return permute(a, std::move(dims));
}

Tensor t(const Tensor& a) {
  if (a.shape().size() > 2) {
    throw ShapeError("t(): expects a tensor with at most 2 dimensions, got shape " + shape_str(a.shape()) +
                     at_line(current_source_location()));
  }
  return a.shape().size() < 2 ? a : transpose(a, 0, 1);
}

Tensor squeeze(const Tensor& a, std::optional<int64_t> dim) {
  const Shape& s = a.shape();
  Shape out;
  const int64_t d = dim ? at_call([&] { return wrap_dim(*dim, s.size(), "squeeze"); }) : -1;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool drop = s[i] == 1 && (!dim || static_cast<int64_t>(i) == d);
    if (!drop) out.push_back(s[i]);
  }
  return reshape(a, std::move(out));
}

Tensor unsqueeze(const Tensor& a, int64_t dim) {
  Shape s = a.shape();
  const int64_t d = at_call([&] { return wrap_dim(dim, s.size() + 1, "unsqueeze"); });
  s.insert(s.begin() + d, 1);
  return reshape(a, std::move(s));
}

Tensor flatten(const Tensor& a, int64_t start_dim, int64_t end_dim) {
  const Shape& s = a.shape();
  if (s.empty()) return reshape(a, {1});
  const auto [start, end] = at_call([&] {
    return std::pair{wrap_dim(start_dim, s.size(), "flatten"), wrap_dim(end_dim, s.size(), "flatten")};
  });
  if (start > end) {
    throw ShapeError("flatten: start_dim " + std::to_string(start_dim) + " comes after end_dim " +
                     std::to_string(end_dim) + at_line(current_source_location()));
  }
  Shape out(s.begin(), s.begin() + start);
  int64_t n = 1;
  for (int64_t i = start; i <= end; ++i) n *= s[static_cast<size_t>(i)];
  out.push_back(n);
  out.insert(out.end(), s.begin() + end + 1, s.end());
  return reshape(a, std::move(out));
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.size() == 1) return tensors[0];
  return apply(OpKind::kCat, tensors, {{"dim", dim}});
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty())
    throw ShapeError("stack: expected a non-empty list of tensors" + at_line(current_source_location()));
  const Shape& first = tensors[0].shape();
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != first) {
      throw ShapeError("stack: expects each tensor to be equal size, but got " + shape_str(first) + " at entry 0 and " +
                       shape_str(tensors[i].shape()) + " at entry " + std::to_string(i) +
                       at_line(current_source_location()));
    }
    parts.push_back(unsqueeze(tensors[i], dim));
  }
  return apply(OpKind::kCat, parts, {{"dim", at_call([&] { return wrap_dim(dim, first.size() + 1, "stack"); })}});
}

Tensor slice(const Tensor& a, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> steps) {
  bool identity = a.defined() && starts.size() == a.shape().size();
  for (size_t d = 0; identity && d < starts.size(); ++d) {
    identity = starts[d] == 0 && ends[d] == a.shape()[d] && steps[d] == 1;
  }
  if (identity) return a;
  return apply(OpKind::kSlice, {a},
               {{"starts", std::move(starts)}, {"ends", std::move(ends)}, {"steps", std::move(steps)}});
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  const Shape& s = a.shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "narrow"); }));
  if (start < 0 || length < 0 || start + length > s[d]) {
    throw ShapeError("narrow: start " + std::to_string(start) + " and length " + std::to_string(length) +
                     " are out of range for dimension " + std::to_string(d) + " of size " + std::to_string(s[d]) +
                     at_line(current_source_location()));
  }
  std::vector<int64_t> starts(s.size(), 0), ends(s.begin(), s.end()), steps(s.size(), 1);
  starts[d] = start;
  ends[d] = start + length;
  return slice(a, std::move(starts), std::move(ends), std::move(steps));
}

std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& sizes, int64_t dim) {
  const Shape& s = a.shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "split"); }));
  int64_t total = 0;
  bool negative = false;
  for (int64_t n : sizes) {
    total += n;
    negative = negative || n < 0;
  }
  if (total != s[d] || negative) {
    throw ShapeError("split: sizes " + shape_str(sizes) + " do not sum to the size " + std::to_string(s[d]) +
                     " of dimension " + std::to_string(d) + at_line(current_source_location()));
  }
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t n : sizes) {
    out.push_back(narrow(a, static_cast<int64_t>(d), start, n));
    start += n;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  const Shape& s = a.shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "split"); }));
  if (split_size <= 0 && !(split_size == 0 && s[d] == 0)) {
    throw ShapeError("split: split_size must be positive, got " + std::to_string(split_size) +
                     at_line(current_source_location()));
  }
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < s[d]; start += split_size) sizes.push_back(std::min(split_size, s[d] - start));
  if (sizes.empty()) sizes.push_back(0);
  return split(a, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  if (chunks <= 0) {
    throw ShapeError("chunk: chunks must be positive, got " + std::to_string(chunks) +
                     at_line(current_source_location()));
  }
  const Shape& s = a.shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "chunk"); }));
  return split(a, std::max<int64_t>(1, (s[d] + chunks - 1) / chunks), dim);
}

}  // namespace lazyscope::ops
