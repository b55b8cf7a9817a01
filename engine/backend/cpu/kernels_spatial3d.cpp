// conv3d, its two backward ops and the 3-D pools over NCDHW buffers.
// float32 convolutions run on oneDNN primitives with 3-D descriptors
// (ncdhw / oidhw / goidhw), the batch split over the pool as the 2-D ones
// are (kernels_conv.cpp); float64 (oneDNN 2.6 has no f64 convolution) and
// empty shapes take the direct loops below. The pools are loops for both
// dtypes, with the 2-D loops' window rules (kernels_pool.cpp) in each of the
// three dims: padding, dilation, ceil_mode, count_include_pad, divisor, NaN
// wins a max and the first maximum takes the gradient.
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/onednn.h"
#include "backend/cpu/thread_pool.h"

namespace lazyscope::cpu {
namespace {

using Dims3 = std::array<int64_t, 3>;

Dims3 triple(const Attrs& attrs, const char* name) {
  const auto& v = attrs.get_ints(name);
  return {v[0], v[1], v[2]};
}
Dims3 spatial(const Shape& s) { return {s[2], s[3], s[4]}; }
int64_t volume(const Dims3& d) { return d[0] * d[1] * d[2]; }

struct Conv3dGeometry {
  int64_t n, c, o, groups;
  Dims3 in, k, out, stride, pad, dil;
  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
};

Conv3dGeometry geometry(const Shape& x, const Shape& w, const Shape& y, const Attrs& attrs) {
  return {x[0],
          x[1],
          w[0],
          attrs.get_int("groups"),
          spatial(x),
          spatial(w),
          spatial(y),
          triple(attrs, "stride"),
          triple(attrs, "padding"),
          triple(attrs, "dilation")};
}

// f(input offset, output offset) for every tap `t` (kd, kh, kw) and output
// position whose input position lies inside the volume: the one walk the
// three direct loops share (a conv's taps and a transposed conv's are the
// same pairs of positions).
template <typename F> void for_each_pair(const Conv3dGeometry& g, const Dims3& t, F&& f) {
  for (int64_t z = 0; z < g.out[0]; ++z) {
    const int64_t iz = z * g.stride[0] - g.pad[0] + t[0] * g.dil[0];
    if (iz < 0 || iz >= g.in[0]) continue;
    for (int64_t y = 0; y < g.out[1]; ++y) {
      const int64_t iy = y * g.stride[1] - g.pad[1] + t[1] * g.dil[1];
      if (iy < 0 || iy >= g.in[1]) continue;
      const int64_t in_row = (iz * g.in[1] + iy) * g.in[2], out_row = (z * g.out[1] + y) * g.out[2];
      for (int64_t x = 0; x < g.out[2]; ++x) {
        const int64_t ix = x * g.stride[2] - g.pad[2] + t[2] * g.dil[2];
        if (ix >= 0 && ix < g.in[2]) f(in_row + ix, out_row + x);
      }
    }
  }
}

template <typename F> void for_each_tap(const Conv3dGeometry& g, F&& f) {
  for (int64_t a = 0; a < g.k[0]; ++a)
    for (int64_t b = 0; b < g.k[1]; ++b)
      for (int64_t c = 0; c < g.k[2]; ++c) f(Dims3{a, b, c}, (a * g.k[1] + b) * g.k[2] + c);
}

// x [N, C, D, H, W] * w [O, C/G, kD, kH, kW] -> y [N, O, oD, oH, oW], one
// (image, output channel) volume per task.
template <typename T> void conv3d_loops(const Conv3dGeometry& g, const T* x, const T* w, T* y) {
  const int64_t in_vol = volume(g.in), out_vol = volume(g.out), taps = volume(g.k);
  parallel_for(g.n * g.o, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t n = i / g.o, o = i % g.o, first = o / g.og() * g.cg();
      T* out = y + i * out_vol;
      std::fill(out, out + out_vol, T(0));
      for (int64_t ci = 0; ci < g.cg(); ++ci) {
        const T* image = x + (n * g.c + first + ci) * in_vol;
        for_each_tap(g, [&](const Dims3& t, int64_t ti) {
          const T wv = w[(o * g.cg() + ci) * taps + ti];
          for_each_pair(g, t, [&](int64_t in, int64_t at) { out[at] += wv * image[in]; });
        });
      }
    }
  });
}

// (dy, w) -> dx, one (image, input channel) volume per task: each task
// writes only its own volume.
template <typename T> void conv3d_backward_input_loops(const Conv3dGeometry& g, const T* dy, const T* w, T* dx) {
  const int64_t in_vol = volume(g.in), out_vol = volume(g.out), taps = volume(g.k);
  parallel_for(g.n * g.c, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t n = i / g.c, c = i % g.c, grp = c / g.cg(), ci = c % g.cg();
      T* image = dx + i * in_vol;
      std::fill(image, image + in_vol, T(0));
      for (int64_t o = grp * g.og(); o < (grp + 1) * g.og(); ++o) {
        const T* grad = dy + (n * g.o + o) * out_vol;
        for_each_tap(g, [&](const Dims3& t, int64_t ti) {
          const T wv = w[(o * g.cg() + ci) * taps + ti];
          for_each_pair(g, t, [&](int64_t in, int64_t at) { image[in] += wv * grad[at]; });
        });
      }
    }
  });
}

// (x, dy) -> dw, one output channel per task, summed over the batch in
// image order: the result does not depend on the thread count.
template <typename T> void conv3d_backward_weight_loops(const Conv3dGeometry& g, const T* x, const T* dy, T* dw) {
  const int64_t in_vol = volume(g.in), out_vol = volume(g.out), taps = volume(g.k);
  parallel_for(g.o, 1, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t first = o / g.og() * g.cg();
      for (int64_t ci = 0; ci < g.cg(); ++ci) {
        for_each_tap(g, [&](const Dims3& t, int64_t ti) {
          T sum = 0;
          for (int64_t n = 0; n < g.n; ++n) {
            const T* image = x + (n * g.c + first + ci) * in_vol;
            const T* grad = dy + (n * g.o + o) * out_vol;
            for_each_pair(g, t, [&](int64_t in, int64_t at) { sum += grad[at] * image[in]; });
          }
          dw[(o * g.cg() + ci) * taps + ti] = sum;
        });
      }
    }
  });
}

// --- oneDNN (float32) ----------------------------------------------------------

using dnnl::memory;
using Tag = memory::format_tag;

enum class Pass : int64_t { kForward, kBackwardData, kBackwardWeights };

bool onednn_fits(const Conv3dGeometry& g) {
  // Empty tensors are not primitives' business; the loops handle them.
  return g.n > 0 && g.c > 0 && g.o > 0 && volume(g.out) > 0 && volume(g.k) > 0;
}

onednn::Plan conv3d_plan(const Conv3dGeometry& g, Pass pass) {
  const memory::dims src{g.n, g.c, g.in[0], g.in[1], g.in[2]}, dst{g.n, g.o, g.out[0], g.out[1], g.out[2]};
  // Grouped weights are [G, O/G, C/G, kD, kH, kW], the same bytes as OIDHW.
  const memory::dims wei = g.groups == 1 ? memory::dims{g.o, g.c, g.k[0], g.k[1], g.k[2]}
                                         : memory::dims{g.groups, g.og(), g.cg(), g.k[0], g.k[1], g.k[2]};
  const memory::desc src_d = onednn::plain(src, Tag::ncdhw), dst_d = onednn::plain(dst, Tag::ncdhw);
  const memory::desc wei_d = onednn::plain(wei, g.groups == 1 ? Tag::oidhw : Tag::goidhw);
  const memory::desc src_any = onednn::plain(src, Tag::any), dst_any = onednn::plain(dst, Tag::any),
                     wei_any = onednn::plain(wei, Tag::any);
  const memory::dims strides(g.stride.begin(), g.stride.end()), padding(g.pad.begin(), g.pad.end());
  const memory::dims dilates{g.dil[0] - 1, g.dil[1] - 1, g.dil[2] - 1};  // oneDNN counts the gaps
  const dnnl::convolution_forward::desc fwd_desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                 src_any, wei_any, dst_any, strides, dilates, padding, padding);
  const dnnl::convolution_forward::primitive_desc fwd(fwd_desc, onednn::attributes(), onednn::engine());
  onednn::Plan plan;
  switch (pass) {
    case Pass::kForward:
      plan.primitive = dnnl::convolution_forward(fwd);
      plan.scratchpad = fwd.scratchpad_desc();
      onednn::add_arg(plan, DNNL_ARG_SRC, src_d, fwd.src_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_WEIGHTS, wei_d, fwd.weights_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_DST, dst_d, fwd.dst_desc(), true);
      break;
    case Pass::kBackwardData: {
      const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, src_any, wei_any, dst_any,
                                                       strides, dilates, padding, padding);
      const dnnl::convolution_backward_data::primitive_desc pd(desc, onednn::attributes(), onednn::engine(), fwd);
      plan.primitive = dnnl::convolution_backward_data(pd);
      plan.scratchpad = pd.scratchpad_desc();
      onednn::add_arg(plan, DNNL_ARG_DIFF_DST, dst_d, pd.diff_dst_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_WEIGHTS, wei_d, pd.weights_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_DIFF_SRC, src_d, pd.diff_src_desc(), true);
      break;
    }
    case Pass::kBackwardWeights: {
      const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, src_any, wei_any,
                                                          dst_any, strides, dilates, padding, padding);
      const dnnl::convolution_backward_weights::primitive_desc pd(desc, onednn::attributes(), onednn::engine(), fwd);
      plan.primitive = dnnl::convolution_backward_weights(pd);
      plan.scratchpad = pd.scratchpad_desc();
      onednn::add_arg(plan, DNNL_ARG_SRC, src_d, pd.src_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_DIFF_DST, dst_d, pd.diff_dst_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_DIFF_WEIGHTS, wei_d, pd.diff_weights_desc(), true);
      break;
    }
  }
  return plan;
}

const onednn::Plan& cached_plan(const Conv3dGeometry& g, Pass pass) {
  // -3: a key no 2-D plan has (theirs start with their pass, 0-2).
  std::vector<int64_t> key{-3, static_cast<int64_t>(pass), g.n, g.c, g.o, g.groups};
  for (const Dims3* d : {&g.in, &g.k, &g.out, &g.stride, &g.pad, &g.dil}) key.insert(key.end(), d->begin(), d->end());
  return onednn::cached(key, [&] { return conv3d_plan(g, pass); });
}

// The images split over the pool, one single-threaded primitive per part,
// as kernels_conv.cpp's run_onednn; the weight gradient sums per part
// (part 0 into the output, the others into partials added in part order).
enum Scratch : int { kPartials = 24 };

void run_onednn(const Conv3dGeometry& g, Pass pass, const float* a, const float* b, float* out) {
  const int parts = static_cast<int>(std::min<int64_t>(num_threads(), g.n));
  const int64_t in_image = g.c * volume(g.in), out_image = g.o * volume(g.out);
  const int64_t size = g.o * g.cg() * volume(g.k);
  float* partials = pass == Pass::kBackwardWeights && parts > 1
                        ? static_cast<float*>(
                              onednn::thread_buffer(kPartials, static_cast<size_t>((parts - 1) * size) * sizeof(float)))
                        : nullptr;
  auto body = [&](int ith, int nth) {
    const auto [n0, n1] = split(g.n, ith, nth);
    if (n0 == n1) return;
    Conv3dGeometry part = g;
    part.n = n1 - n0;
    const onednn::Plan& plan = cached_plan(part, pass);
    switch (pass) {
      case Pass::kForward:  // (x, w) -> y
        onednn::execute(plan, {const_cast<float*>(a + n0 * in_image), const_cast<float*>(b), out + n0 * out_image});
        break;
      case Pass::kBackwardData:  // (dy, w) -> dx
        onednn::execute(plan, {const_cast<float*>(a + n0 * out_image), const_cast<float*>(b), out + n0 * in_image});
        break;
      case Pass::kBackwardWeights:  // (x, dy) -> dw
        onednn::execute(plan, {const_cast<float*>(a + n0 * in_image), const_cast<float*>(b + n0 * out_image),
                               ith == 0 ? out : partials + (ith - 1) * size});
        break;
    }
  };
  parallel_region(parts, RegionBody(body));
  if (partials == nullptr) return;
  for (int part = 1; part < parts; ++part) {
    const float* p = partials + (part - 1) * size;
    for (int64_t i = 0; i < size; ++i) out[i] += p[i];
  }
}

// float32 on oneDNN where the shapes are not empty; float64 on the loops.
template <typename T> void conv3d_kernel(const KernelArgs& k) {
  const Conv3dGeometry g = geometry(k.inputs[0]->shape(), k.inputs[1]->shape(), k.out.shape(), k.attrs);
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_fits(g)) return run_onednn(g, Pass::kForward, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
  }
  conv3d_loops(g, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
}

template <typename T> void conv3d_backward_input_kernel(const KernelArgs& k) {
  const Conv3dGeometry g = geometry(k.out.shape(), k.inputs[1]->shape(), k.inputs[0]->shape(), k.attrs);
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_fits(g)) {
      return run_onednn(g, Pass::kBackwardData, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
    }
  }
  conv3d_backward_input_loops(g, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
}

template <typename T> void conv3d_backward_weight_kernel(const KernelArgs& k) {
  const Conv3dGeometry g = geometry(k.inputs[0]->shape(), k.out.shape(), k.inputs[1]->shape(), k.attrs);
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_fits(g)) {
      return run_onednn(g, Pass::kBackwardWeights, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
    }
  }
  conv3d_backward_weight_loops(g, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
}

// --- pools ----------------------------------------------------------------------

struct Pool3dGeometry {
  int64_t planes;
  Dims3 in, out, k, stride, pad, dil{1, 1, 1};
};

Pool3dGeometry pool_geometry(const Shape& in, const Shape& out, const Attrs& attrs, bool dilated) {
  Pool3dGeometry g{
      in[0] * in[1],           spatial(in), spatial(out), triple(attrs, "kernel_size"), triple(attrs, "stride"),
      triple(attrs, "padding")};
  if (dilated) g.dil = triple(attrs, "dilation");
  return g;
}

// Planes per task: some 16K input elements.
int64_t plane_grain(const Pool3dGeometry& g) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, volume(g.in)));
}

// The taps [first, last) of a window of output `o` in dim `d` that land
// inside the input: o*s - p + t*dil in [0, size). Found by arithmetic once
// per window row, so the inner loop has no bounds test.
std::pair<int64_t, int64_t> inside_taps(const Pool3dGeometry& g, size_t d, int64_t o) {
  const int64_t start = o * g.stride[d] - g.pad[d];
  const int64_t first = start >= 0 ? 0 : (-start + g.dil[d] - 1) / g.dil[d];
  const int64_t last = start >= g.in[d] ? 0 : std::min(g.k[d], (g.in[d] - 1 - start) / g.dil[d] + 1);
  return {first, std::max(first, last)};
}

// f(plane, output offset, input offset of the window's max) for the planes
// [p0, p1). NaN wins (it propagates, as in PyTorch); on ties the first
// element wins, which is where the gradient goes. The comparison is
// branch-free (selects): which element is the maximum is data, and a branch
// per element mispredicts on real activations (kernels_pool.cpp's note).
// The common 2x2x2 window at stride 2 (no padding, no dilation, every
// window whole): its eight elements unrolled in the general loop's order
// (depth, row, column), so ties and NaN go the same way.
bool is_plain_2x2x2(const Pool3dGeometry& g) {
  for (size_t d = 0; d < 3; ++d) {
    if (g.k[d] != 2 || g.stride[d] != 2 || g.pad[d] != 0 || g.dil[d] != 1 || 2 * g.out[d] > g.in[d]) return false;
  }
  return true;
}

template <typename T, typename F>
void for_each_max_2x2x2(const Pool3dGeometry& g, const T* x, int64_t p0, int64_t p1, F&& f) {
  const int64_t w = g.in[2], hw = g.in[1] * g.in[2];
  const int64_t offsets[8] = {0, 1, w, w + 1, hw, hw + 1, hw + w, hw + w + 1};
  for (int64_t p = p0; p < p1; ++p) {
    const T* plane = x + p * volume(g.in);
    for (int64_t z = 0; z < g.out[0]; ++z) {
      for (int64_t y = 0; y < g.out[1]; ++y) {
        const int64_t row = (2 * z * g.in[1] + 2 * y) * w;
        for (int64_t xo = 0; xo < g.out[2]; ++xo) {
          const int64_t first = row + 2 * xo;
          int64_t best_at = first;
          T best = plane[first];
          for (int64_t i = 1; i < 8; ++i) {
            const int64_t at = first + offsets[i];
            const T v = plane[at];
            const bool take = (best == best) & ((v > best) | (v != v));
            best = take ? v : best;
            best_at = take ? at : best_at;
          }
          f(p, (z * g.out[1] + y) * g.out[2] + xo, best_at);
        }
      }
    }
  }
}

template <typename T, typename F>
void for_each_max(const Pool3dGeometry& g, const T* x, int64_t p0, int64_t p1, F&& f) {
  if (is_plain_2x2x2(g)) return for_each_max_2x2x2(g, x, p0, p1, f);
  for (int64_t p = p0; p < p1; ++p) {
    const T* plane = x + p * volume(g.in);
    for (int64_t z = 0; z < g.out[0]; ++z) {
      const auto [a0, a1] = inside_taps(g, 0, z);
      for (int64_t y = 0; y < g.out[1]; ++y) {
        const auto [b0, b1] = inside_taps(g, 1, y);
        for (int64_t xo = 0; xo < g.out[2]; ++xo) {
          const auto [c0, c1] = inside_taps(g, 2, xo);
          const int64_t ix0 = xo * g.stride[2] - g.pad[2];
          // The shape rule guarantees every window an element: start at the first.
          int64_t best_at = ((z * g.stride[0] - g.pad[0] + a0 * g.dil[0]) * g.in[1] + y * g.stride[1] - g.pad[1] +
                             b0 * g.dil[1]) *
                                g.in[2] +
                            ix0 + c0 * g.dil[2];
          T best = plane[best_at];
          for (int64_t a = a0; a < a1; ++a) {
            const int64_t iz = z * g.stride[0] - g.pad[0] + a * g.dil[0];
            for (int64_t b = b0; b < b1; ++b) {
              const int64_t row = (iz * g.in[1] + y * g.stride[1] - g.pad[1] + b * g.dil[1]) * g.in[2] + ix0;
              for (int64_t c = c0; c < c1; ++c) {
                const int64_t at = row + c * g.dil[2];
                const T v = plane[at];
                const bool take = (best == best) & ((v > best) | (v != v));
                best = take ? v : best;
                best_at = take ? at : best_at;
              }
            }
          }
          f(p, (z * g.out[1] + y) * g.out[2] + xo, best_at);
        }
      }
    }
  }
}

template <typename T> void max_pool3d_kernel(const KernelArgs& k) {
  const Pool3dGeometry g = pool_geometry(k.inputs[0]->shape(), k.out.shape(), k.attrs, true);
  const T* x = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  parallel_for(g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) {
    for_each_max(g, x, p0, p1,
                 [&](int64_t p, int64_t o, int64_t i) { out[p * volume(g.out) + o] = x[p * volume(g.in) + i]; });
  });
}

// (grad, input): each output's gradient to its window's max; planes split
// over the pool, each zeroed and filled by one thread.
template <typename T> void max_pool3d_backward_kernel(const KernelArgs& k) {
  const Pool3dGeometry g = pool_geometry(k.inputs[1]->shape(), k.inputs[0]->shape(), k.attrs, true);
  const T* grad = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  parallel_for(g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) {
    std::fill(out + p0 * volume(g.in), out + p1 * volume(g.in), T(0));
    for_each_max(g, k.inputs[1]->as<T>(), p0, p1,
                 [&](int64_t p, int64_t o, int64_t i) { out[p * volume(g.in) + i] += grad[p * volume(g.out) + o]; });
  });
}

// One dim's window [lo, hi) clipped to the input, and its length inside
// the padded input (what count_include_pad divides by).
struct Span {
  int64_t lo, hi, padded;
};

// f(plane, output offset, the three spans, divisor) for planes [p0, p1),
// as PyTorch's avg_pool3d.
template <typename F>
void for_each_average(const Pool3dGeometry& g, const Attrs& attrs, int64_t p0, int64_t p1, F&& f) {
  const bool include_pad = attrs.get_bool("count_include_pad");
  const int64_t divisor = attrs.get_int("divisor");
  const auto span = [&](size_t d, int64_t o) {
    const int64_t lo = o * g.stride[d] - g.pad[d], hi = std::min(lo + g.k[d], g.in[d] + g.pad[d]);
    return Span{std::max<int64_t>(lo, 0), std::min(hi, g.in[d]), hi - lo};
  };
  for (int64_t p = p0; p < p1; ++p) {
    for (int64_t z = 0; z < g.out[0]; ++z) {
      const Span sz = span(0, z);
      for (int64_t y = 0; y < g.out[1]; ++y) {
        const Span sy = span(1, y);
        for (int64_t x = 0; x < g.out[2]; ++x) {
          const Span sx = span(2, x);
          const int64_t count = divisor       ? divisor
                                : include_pad ? sz.padded * sy.padded * sx.padded
                                              : (sz.hi - sz.lo) * (sy.hi - sy.lo) * (sx.hi - sx.lo);
          f(p, (z * g.out[1] + y) * g.out[2] + x, std::array<Span, 3>{sz, sy, sx}, count);
        }
      }
    }
  }
}

// Adaptive windows: output i of n over a dim of size s covers
// [floor(i s / n), ceil((i + 1) s / n)), as PyTorch's.
template <typename F> void for_each_adaptive(const Pool3dGeometry& g, int64_t p0, int64_t p1, F&& f) {
  const auto span = [&](size_t d, int64_t o) {
    const int64_t lo = o * g.in[d] / g.out[d], hi = ((o + 1) * g.in[d] + g.out[d] - 1) / g.out[d];
    return Span{lo, hi, hi - lo};
  };
  for (int64_t p = p0; p < p1; ++p) {
    for (int64_t z = 0; z < g.out[0]; ++z) {
      for (int64_t y = 0; y < g.out[1]; ++y) {
        for (int64_t x = 0; x < g.out[2]; ++x) {
          const std::array<Span, 3> s{span(0, z), span(1, y), span(2, x)};
          f(p, (z * g.out[1] + y) * g.out[2] + x, s, s[0].padded * s[1].padded * s[2].padded);
        }
      }
    }
  }
}

// f(input offset) over a window's elements.
template <typename F> void for_window(const Pool3dGeometry& g, const std::array<Span, 3>& s, F&& f) {
  for (int64_t z = s[0].lo; z < s[0].hi; ++z)
    for (int64_t y = s[1].lo; y < s[1].hi; ++y)
      for (int64_t x = s[2].lo; x < s[2].hi; ++x) f((z * g.in[1] + y) * g.in[2] + x);
}

// The average pools' forward and backward, over the windows `walk` gives
// (for_each_average or for_each_adaptive): an empty window averages to 0.
template <typename T, typename Walk> void average_forward(const Pool3dGeometry& g, const T* x, T* out, Walk&& walk) {
  parallel_for(g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) {
    walk(p0, p1, [&](int64_t p, int64_t o, const std::array<Span, 3>& s, int64_t n) {
      const T* plane = x + p * volume(g.in);
      T sum = 0;
      for_window(g, s, [&](int64_t i) { sum += plane[i]; });
      const bool empty = s[0].lo >= s[0].hi || s[1].lo >= s[1].hi || s[2].lo >= s[2].hi;
      out[p * volume(g.out) + o] = empty ? T(0) : sum / static_cast<T>(n);
    });
  });
}

template <typename T, typename Walk>
void average_backward(const Pool3dGeometry& g, const T* grad, T* out, Walk&& walk) {
  parallel_for(g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) {
    std::fill(out + p0 * volume(g.in), out + p1 * volume(g.in), T(0));
    walk(p0, p1, [&](int64_t p, int64_t o, const std::array<Span, 3>& s, int64_t n) {
      T* plane = out + p * volume(g.in);
      const T share = grad[p * volume(g.out) + o] / static_cast<T>(n);
      for_window(g, s, [&](int64_t i) { plane[i] += share; });
    });
  });
}

template <typename T> void avg_pool3d_kernel(const KernelArgs& k) {
  const Pool3dGeometry g = pool_geometry(k.inputs[0]->shape(), k.out.shape(), k.attrs, false);
  average_forward(g, k.inputs[0]->as<T>(), k.out.as<T>(),
                  [&](int64_t p0, int64_t p1, auto&& f) { for_each_average(g, k.attrs, p0, p1, f); });
}

template <typename T> void avg_pool3d_backward_kernel(const KernelArgs& k) {
  const Pool3dGeometry g = pool_geometry(k.out.shape(), k.inputs[0]->shape(), k.attrs, false);
  average_backward(g, k.inputs[0]->as<T>(), k.out.as<T>(),
                   [&](int64_t p0, int64_t p1, auto&& f) { for_each_average(g, k.attrs, p0, p1, f); });
}

// The adaptive pool's geometry: only the planes and sizes are read.
Pool3dGeometry adaptive_geometry(const Shape& in, const Shape& out) {
  return {in[0] * in[1], spatial(in), spatial(out), {1, 1, 1}, {1, 1, 1}, {0, 0, 0}};
}

template <typename T> void adaptive_avg_pool3d_kernel(const KernelArgs& k) {
  const Pool3dGeometry g = adaptive_geometry(k.inputs[0]->shape(), k.out.shape());
  average_forward(g, k.inputs[0]->as<T>(), k.out.as<T>(),
                  [&](int64_t p0, int64_t p1, auto&& f) { for_each_adaptive(g, p0, p1, f); });
}

template <typename T> void adaptive_avg_pool3d_backward_kernel(const KernelArgs& k) {
  const Pool3dGeometry g = adaptive_geometry(k.out.shape(), k.inputs[0]->shape());
  average_backward(g, k.inputs[0]->as<T>(), k.out.as<T>(),
                   [&](int64_t p0, int64_t p1, auto&& f) { for_each_adaptive(g, p0, p1, f); });
}

}  // namespace

void add_spatial3d_kernels(Table& t) {
  rows<float, double>(t, OpKind::kConv3d, LAZYSCOPE_KERNEL(conv3d_kernel));
  rows<float, double>(t, OpKind::kConv3dBackwardInput, LAZYSCOPE_KERNEL(conv3d_backward_input_kernel));
  rows<float, double>(t, OpKind::kConv3dBackwardWeight, LAZYSCOPE_KERNEL(conv3d_backward_weight_kernel));
  rows<float, double>(t, OpKind::kMaxPool3d, LAZYSCOPE_KERNEL(max_pool3d_kernel));
  rows<float, double>(t, OpKind::kMaxPool3dBackward, LAZYSCOPE_KERNEL(max_pool3d_backward_kernel));
  rows<float, double>(t, OpKind::kAvgPool3d, LAZYSCOPE_KERNEL(avg_pool3d_kernel));
  rows<float, double>(t, OpKind::kAvgPool3dBackward, LAZYSCOPE_KERNEL(avg_pool3d_backward_kernel));
  rows<float, double>(t, OpKind::kAdaptiveAvgPool3d, LAZYSCOPE_KERNEL(adaptive_avg_pool3d_kernel));
  rows<float, double>(t, OpKind::kAdaptiveAvgPool3dBackward, LAZYSCOPE_KERNEL(adaptive_avg_pool3d_backward_kernel));
}

}  // namespace lazyscope::cpu
