// Pooling kernels over 4-D NCHW buffers, one (n, c) plane at a time, and
// their backward ops. Window bounds follow PyTorch's CPU kernels exactly
// (padding, ceil_mode, count_include_pad), so results match it element for
// element, not only in shape. float32 max pooling runs on oneDNN (vectorized,
// its planes split over the pool) when the input holds no NaN or -inf, whose rules oneDNN does
// not share (it starts windows at the lowest finite value and its max does
// not propagate NaN); such inputs, float64 and the average pools take the
// loops here.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/onednn.h"
#include "backend/cpu/thread_pool.h"

namespace lazyscope::cpu {
namespace {

struct PoolGeometry {
  int64_t planes, h, w, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
};

PoolGeometry pool_geometry(const Shape& in, const Shape& out, const Attrs& attrs, bool dilated) {
  const auto& k = attrs.get_ints("kernel_size");
  const auto& s = attrs.get_ints("stride");
  const auto& p = attrs.get_ints("padding");
  PoolGeometry g{in[0] * in[1], in[2], in[3], out[2], out[3], k[0], k[1], s[0], s[1], p[0], p[1]};
  if (dilated) {
    const auto& d = attrs.get_ints("dilation");
    g.dh = d[0];
    g.dw = d[1];
  }
  return g;
}

// f(plane, output index, input index of the window's max) for every output
// element. NaN wins (it propagates, as in PyTorch); on ties the first
// element wins, which is where the gradient goes.
template <typename T, typename F>
void for_each_max(const PoolGeometry& g, const T* x, F&& f, int64_t p0 = 0, int64_t p1 = -1) {
  for (int64_t p = p0; p < (p1 < 0 ? g.planes : p1); ++p) {
    const T* plane = x + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        int64_t best_at = -1;
        T best = -std::numeric_limits<T>::infinity();
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t iy = oy * g.sh - g.ph + i * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t ix = ox * g.sw - g.pw + j * g.dw;
            if (ix < 0 || ix >= g.w) continue;
            const T v = plane[iy * g.w + ix];
            if (best_at < 0 || (!std::isnan(best) && (v > best || std::isnan(v)))) {
              best = v;
              best_at = iy * g.w + ix;
            }
          }
        }
        f(p, oy * g.ow + ox, best_at);  // the shape rule guarantees every window has an element
      }
    }
  }
}

// Planes per part: some 16K input elements.
int64_t plane_grain(const PoolGeometry& g) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.h * g.w)); }

// The common 2x2 window at stride 2, no padding or dilation (MNIST's
// CNN, most CNNs): each output's window as two row pairs, the same rule as
// for_each_max (NaN wins, the first maximum on ties), without its bounds
// checks. f(plane, output index, input index of the max).
bool is_plain_2x2(const PoolGeometry& g) {
  return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && g.dh == 1 && g.dw == 1 &&
         2 * g.oh <= g.h && 2 * g.ow <= g.w;
}

template <typename T, typename F>
void for_each_max_2x2(const PoolGeometry& g, const T* x, F&& f, int64_t p0, int64_t p1) {
  // Without branches: which of four is the maximum is data, and on real
  // activations a branch per comparison mispredicted often enough to make
  // this 3-6x slower than the same loop on patterned test data. Non-short-
  // circuit & and | and selects compile to compares and conditional moves.
  const auto take = [](T& best, int64_t& at, T v, int64_t i) {
    // best not NaN, and v larger or NaN; as a mask of all ones or zeros
    const auto better = static_cast<int64_t>((best == best) & ((v > best) | (v != v)));
    const int64_t mask = -better;
    at ^= (at ^ i) & mask;
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    Bits b, w;
    std::memcpy(&b, &best, sizeof b);
    std::memcpy(&w, &v, sizeof w);
    b ^= (b ^ w) & static_cast<Bits>(mask);
    std::memcpy(&best, &b, sizeof b);
  };
  for (int64_t p = p0; p < p1; ++p) {
    const T* plane = x + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const int64_t r0 = 2 * oy * g.w, r1 = r0 + g.w;
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        int64_t at = r0 + 2 * ox;
        T best = plane[at];
        take(best, at, plane[r0 + 2 * ox + 1], r0 + 2 * ox + 1);
        take(best, at, plane[r1 + 2 * ox], r1 + 2 * ox);
        take(best, at, plane[r1 + 2 * ox + 1], r1 + 2 * ox + 1);
        f(p, oy * g.ow + ox, at);
      }
    }
  }
}

// The 2x2 kernels below take four windows at a time in SSE2 (every x86-64
// has it: no dispatch) and the rest of a row one window at a time, with the
// same rule in both: NaN wins, the first maximum on ties. Branch-free: which
// of four is the maximum is data, and on real activations a branch per
// comparison mispredicts (the scalar loop compiled to branches and took
// ~15% of the MNIST CNN's step; benchmarks/README.md, branch `cnn`).
inline bool beats(float best, float v) { return (best == best) & ((v > best) | (v != v)); }
inline bool beats(double best, double v) { return (best == best) & ((v > best) | (v != v)); }
inline __m128 beats4(__m128 best, __m128 v) {
  return _mm_and_ps(_mm_cmpord_ps(best, best), _mm_or_ps(_mm_cmpgt_ps(v, best), _mm_cmpunord_ps(v, v)));
}
inline __m128 select4(__m128 m, __m128 x, __m128 y) { return _mm_or_ps(_mm_and_ps(m, x), _mm_andnot_ps(m, y)); }

// Windows ox .. ox+3 of a row pair: a, b the top row's even and odd
// columns, c, d the bottom row's.
struct Windows4 {
  __m128 a, b, c, d;
  Windows4(const float* r0, const float* r1, int64_t ox) {
    const __m128 t0 = _mm_loadu_ps(r0 + 2 * ox), t1 = _mm_loadu_ps(r0 + 2 * ox + 4);
    const __m128 u0 = _mm_loadu_ps(r1 + 2 * ox), u1 = _mm_loadu_ps(r1 + 2 * ox + 4);
    a = _mm_shuffle_ps(t0, t1, _MM_SHUFFLE(2, 0, 2, 0));
    b = _mm_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 1, 3, 1));
    c = _mm_shuffle_ps(u0, u1, _MM_SHUFFLE(2, 0, 2, 0));
    d = _mm_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 1, 3, 1));
  }
};

// The first output column left to the one-window loop.
template <typename T> int64_t scalar_from(int64_t ow) {
  if constexpr (std::is_same_v<T, float>) return ow / 4 * 4;
  return 0;
}

// The 2x2 backward without a scatter: windows do not overlap, so each
// input element gets its window's gradient or 0, written once, a row pair
// at a time.
template <typename T>
void max_pool_2x2_backward_planes(const PoolGeometry& g, const T* x, const T* grad, T* out, int64_t p0, int64_t p1) {
  const int64_t vector_end = scalar_from<T>(g.ow);
  for (int64_t p = p0; p < p1; ++p) {
    const T* xp = x + p * g.h * g.w;
    T* op = out + p * g.h * g.w;
    const T* gp = grad + p * g.oh * g.ow;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      // Not __restrict: `out` may be `x` (written in place by the memory
      // plan, max_pool2d_backward_in_place_ok); each window is read whole
      // before its four results are written.
      const T* r0 = xp + 2 * oy * g.w;
      const T* r1 = r0 + g.w;
      T* o0 = op + 2 * oy * g.w;
      T* o1 = o0 + g.w;
      const T* __restrict gr = gp + oy * g.ow;
      if constexpr (std::is_same_v<T, float>) {
        for (int64_t ox = 0; ox < vector_end; ox += 4) {
          const Windows4 v(r0, r1, ox);
          const __m128 gv = _mm_loadu_ps(gr + ox);
          const __m128 wb = beats4(v.a, v.b), m1 = select4(wb, v.b, v.a);
          const __m128 wc = beats4(m1, v.c), m2 = select4(wc, v.c, m1);
          const __m128 wd = beats4(m2, v.d);
          const __m128 not_d = _mm_andnot_ps(wd, gv), not_cd = _mm_andnot_ps(wc, not_d);
          const __m128 e0 = _mm_andnot_ps(wb, not_cd), d0 = _mm_and_ps(wb, not_cd);  // top row: even, odd
          const __m128 e1 = _mm_and_ps(wc, not_d), d1 = _mm_and_ps(wd, gv);          // bottom row
          _mm_storeu_ps(o0 + 2 * ox, _mm_unpacklo_ps(e0, d0));
          _mm_storeu_ps(o0 + 2 * ox + 4, _mm_unpackhi_ps(e0, d0));
          _mm_storeu_ps(o1 + 2 * ox, _mm_unpacklo_ps(e1, d1));
          _mm_storeu_ps(o1 + 2 * ox + 4, _mm_unpackhi_ps(e1, d1));
        }
      }
      for (int64_t ox = vector_end; ox < g.ow; ++ox) {
        const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1], gv = gr[ox];
        const bool wb = beats(a, b);
        const T m1 = wb ? b : a;
        const bool wc = beats(m1, c);
        const T m2 = wc ? c : m1;
        const bool wd = beats(m2, d);
        o1[2 * ox + 1] = wd ? gv : T(0);
        o1[2 * ox] = (wc & !wd) ? gv : T(0);
        o0[2 * ox + 1] = (wb & !wc & !wd) ? gv : T(0);
        o0[2 * ox] = (!wb & !wc & !wd) ? gv : T(0);
      }
      // A last column no window covers (odd width).
      for (int64_t xx = 2 * g.ow; xx < g.w; ++xx) o0[xx] = o1[xx] = T(0);
    }
    // Last rows no window covers (odd height).
    std::fill(op + 2 * g.oh * g.w, op + g.h * g.w, T(0));
  }
}

// The 2x2 forward the same way: the window's first maximum (NaN wins).
template <typename T> void max_pool_2x2_planes(const PoolGeometry& g, const T* x, T* out, int64_t p0, int64_t p1) {
  const int64_t vector_end = scalar_from<T>(g.ow);
  for (int64_t p = p0; p < p1; ++p) {
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      const T* __restrict r0 = x + p * g.h * g.w + 2 * oy * g.w;
      const T* __restrict r1 = r0 + g.w;
      T* __restrict o = out + (p * g.oh + oy) * g.ow;
      if constexpr (std::is_same_v<T, float>) {
        for (int64_t ox = 0; ox < vector_end; ox += 4) {
          const Windows4 v(r0, r1, ox);
          const __m128 m1 = select4(beats4(v.a, v.b), v.b, v.a);
          const __m128 m2 = select4(beats4(m1, v.c), v.c, m1);
          _mm_storeu_ps(o + ox, select4(beats4(m2, v.d), v.d, m2));
        }
      }
      for (int64_t ox = vector_end; ox < g.ow; ++ox) {
        const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
        const T m1 = beats(a, b) ? b : a;
        const T m2 = beats(m1, c) ? c : m1;
        o[ox] = beats(m2, d) ? d : m2;
      }
    }
  }
}

// for_each_max over planes [p0, p1), through the 2x2 path where it applies.
template <typename T, typename F>
void for_each_max_in(const PoolGeometry& g, const T* x, F&& f, int64_t p0, int64_t p1) {
  if (is_plain_2x2(g)) {
    for_each_max_2x2(g, x, f, p0, p1);
  } else {
    for_each_max(g, x, f, p0, p1);
  }
}

template <typename T> void max_pool2d_kernel(const KernelArgs& k) {
  const PoolGeometry g = pool_geometry(k.inputs[0]->shape(), k.out.shape(), k.attrs, true);
  const T* x = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  // Planes are independent: split across the pool.
  if (is_plain_2x2(g)) {
    parallel_for(g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) { max_pool_2x2_planes(g, x, out, p0, p1); });
    return;
  }
  parallel_for(g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) {
    for_each_max_in(
        g, x, [&](int64_t p, int64_t o, int64_t i) { out[p * g.oh * g.ow + o] = x[p * g.h * g.w + i]; }, p0, p1);
  });
}

// (grad, input): each output's gradient to its window's max.
template <typename T> void max_pool2d_backward_kernel(const KernelArgs& k) {
  const PoolGeometry g = pool_geometry(k.inputs[1]->shape(), k.inputs[0]->shape(), k.attrs, true);
  const T* grad = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  // Per plane: windows only overlap within one, so planes split across the
  // pool, each zeroed and filled by one thread in one pass.
  if (is_plain_2x2(g)) {
    parallel_for(g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) {
      max_pool_2x2_backward_planes(g, k.inputs[1]->as<T>(), grad, out, p0, p1);
    });
    return;
  }
  // A plane is zeroed right before its gradients are added, while it is in
  // L1.
  parallel_for(g.planes, plane_grain(g), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      std::fill(out + p * g.h * g.w, out + (p + 1) * g.h * g.w, T(0));
      for_each_max_in(
          g, k.inputs[1]->as<T>(),
          [&](int64_t q, int64_t o, int64_t i) { out[q * g.h * g.w + i] += grad[q * g.oh * g.ow + o]; }, p, p + 1);
    }
  });
}

// f(plane, output index, y0, y1, x0, x1, divisor): the window clipped to the
// image and what its sum is divided by, as PyTorch's avg_pool2d.
template <typename F> void for_each_average(const PoolGeometry& g, const Attrs& attrs, F&& f) {
  const bool include_pad = attrs.get_bool("count_include_pad");
  const int64_t divisor = attrs.get_int("divisor");
  for (int64_t p = 0; p < g.planes; ++p) {
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
        int64_t y1 = std::min(y0 + g.kh, g.h + g.ph), x1 = std::min(x0 + g.kw, g.w + g.pw);
        const int64_t padded = (y1 - y0) * (x1 - x0);  // the window inside the padded image
        y0 = std::max<int64_t>(y0, 0);
        x0 = std::max<int64_t>(x0, 0);
        y1 = std::min(y1, g.h);
        x1 = std::min(x1, g.w);
        const int64_t count = divisor ? divisor : include_pad ? padded : (y1 - y0) * (x1 - x0);
        f(p, oy * g.ow + ox, y0, y1, x0, x1, count);
      }
    }
  }
}

template <typename T> void avg_pool2d_kernel(const KernelArgs& k) {
  const PoolGeometry g = pool_geometry(k.inputs[0]->shape(), k.out.shape(), k.attrs, false);
  const T* x = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for_each_average(g, k.attrs, [&](int64_t p, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t n) {
    const T* plane = x + p * g.h * g.w;
    T sum = 0;
    for (int64_t y = y0; y < y1; ++y)
      for (int64_t xx = x0; xx < x1; ++xx) sum += plane[y * g.w + xx];
    out[p * g.oh * g.ow + o] = y0 < y1 && x0 < x1 ? sum / static_cast<T>(n) : T(0);
  });
}

template <typename T> void avg_pool2d_backward_kernel(const KernelArgs& k) {
  const PoolGeometry g = pool_geometry(k.out.shape(), k.inputs[0]->shape(), k.attrs, false);
  const T* grad = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  std::fill(out, out + k.out.numel(), T(0));
  for_each_average(g, k.attrs, [&](int64_t p, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t n) {
    T* plane = out + p * g.h * g.w;
    const T share = grad[p * g.oh * g.ow + o] / static_cast<T>(n);
    for (int64_t y = y0; y < y1; ++y)
      for (int64_t xx = x0; xx < x1; ++xx) plane[y * g.w + xx] += share;
  });
}

// Adaptive windows: output i of n over a dim of size s covers
// [floor(i s / n), ceil((i + 1) s / n)), as PyTorch's.
template <typename F> void for_each_adaptive(const Shape& in, const Shape& out, F&& f) {
  const int64_t planes = in[0] * in[1], h = in[2], w = in[3], oh = out[2], ow = out[3];
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t y0 = oy * h / oh, y1 = ((oy + 1) * h + oh - 1) / oh;
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t x0 = ox * w / ow, x1 = ((ox + 1) * w + ow - 1) / ow;
        f(p, oy * ow + ox, y0, y1, x0, x1, (y1 - y0) * (x1 - x0));
      }
    }
  }
}

template <typename T> void adaptive_avg_pool2d_kernel(const KernelArgs& k) {
  const Shape& in = k.inputs[0]->shape();
  const T* x = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  const int64_t hw = in[2] * in[3], ohw = k.out.shape()[2] * k.out.shape()[3];
  for_each_adaptive(in, k.out.shape(),
                    [&](int64_t p, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t n) {
                      const T* plane = x + p * hw;
                      T sum = 0;
                      for (int64_t y = y0; y < y1; ++y)
                        for (int64_t xx = x0; xx < x1; ++xx) sum += plane[y * in[3] + xx];
                      out[p * ohw + o] = sum / static_cast<T>(n);
                    });
}

template <typename T> void adaptive_avg_pool2d_backward_kernel(const KernelArgs& k) {
  const Shape& in = k.out.shape();
  const T* grad = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  std::fill(out, out + k.out.numel(), T(0));
  const int64_t hw = in[2] * in[3], ohw = k.inputs[0]->shape()[2] * k.inputs[0]->shape()[3];
  for_each_adaptive(in, k.inputs[0]->shape(),
                    [&](int64_t p, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t n) {
                      T* plane = out + p * hw;
                      const T share = grad[p * ohw + o] / static_cast<T>(n);
                      for (int64_t y = y0; y < y1; ++y)
                        for (int64_t xx = x0; xx < x1; ++xx) plane[y * in[3] + xx] += share;
                    });
}

// --- oneDNN max pooling (float32) ----------------------------------------------

using dnnl::memory;

// True when every element is finite or +inf: oneDNN's result is then PyTorch's,
// ties included (its windows keep the first maximum, as the loops above).
bool onednn_max_safe(const float* x, int64_t n) {
  // On the bits, so that the loop vectorizes: -inf and the negative NaNs are
  // the patterns above the lowest finite float's, the positive NaNs those
  // above +inf's once the sign is cleared.
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, sizeof b);
    bad |= static_cast<uint32_t>(b > 0xff7fffffu) | static_cast<uint32_t>((b & 0x7fffffffu) > 0x7f800000u);
  }
  return bad == 0;
}

struct PoolDescs {
  memory::desc src, dst;
  memory::dims strides, kernel, dilation, pad_l, pad_r;
};

PoolDescs pool_descs(const Shape& in, const Shape& out, const PoolGeometry& g) {
  // The right padding makes oneDNN's output size the caller's (ceil_mode adds
  // some); never negative, and floor division makes the rest agree.
  const int64_t pr_h = std::max<int64_t>(0, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1 - g.h - g.ph);
  const int64_t pr_w = std::max<int64_t>(0, (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1 - g.w - g.pw);
  return {onednn::plain({in[0], in[1], in[2], in[3]}, memory::format_tag::nchw),
          onednn::plain({out[0], out[1], out[2], out[3]}, memory::format_tag::nchw),
          {g.sh, g.sw},
          {g.kh, g.kw},
          {g.dh - 1, g.dw - 1},
          {g.ph, g.pw},
          {pr_h, pr_w}};
}

dnnl::pooling_v2_forward::primitive_desc max_forward_pd(const PoolDescs& d, dnnl::prop_kind kind) {
  const dnnl::pooling_v2_forward::desc desc(kind, dnnl::algorithm::pooling_max, d.src, d.dst, d.strides, d.kernel,
                                            d.dilation, d.pad_l, d.pad_r);
  return {desc, onednn::attributes(), onednn::engine()};
}

const onednn::Plan& max_pool_plan(const Shape& in, const Shape& out, const PoolGeometry& g, int omp_threads = 1) {
  const std::vector<int64_t> key{100,  in[0], in[1], in[2], in[3], g.oh, g.ow, g.kh,
                                 g.kw, g.sh,  g.sw,  g.ph,  g.pw,  g.dh, g.dw};
  return onednn::cached(
      key,
      [&] {
        const PoolDescs d = pool_descs(in, out, g);
        onednn::Plan plan;
        const auto pd = max_forward_pd(d, dnnl::prop_kind::forward_inference);
        plan.primitive = dnnl::pooling_v2_forward(pd);
        plan.scratchpad = pd.scratchpad_desc();
        onednn::add_arg(plan, DNNL_ARG_SRC, d.src, pd.src_desc(), false);
        onednn::add_arg(plan, DNNL_ARG_DST, d.dst, pd.dst_desc(), true);
        return plan;
      },
      omp_threads);
}

bool onednn_pool_fits(const PoolGeometry& g) { return g.planes > 0 && g.h > 0 && g.w > 0 && g.oh > 0 && g.ow > 0; }

template <typename T> void max_pool2d_onednn_kernel(const KernelArgs& k) {
  const PoolGeometry g = pool_geometry(k.inputs[0]->shape(), k.out.shape(), k.attrs, true);
  const float* x = k.inputs[0]->as<float>();
  float* out = k.out.as<float>();
  // The plain 2x2 window: the SSE loop above is faster than oneDNN (no
  // reorders, no NaN scan) and keeps PyTorch's NaN rule itself.
  if (is_plain_2x2(g) || !onednn_pool_fits(g) || !onednn_max_safe(x, k.inputs[0]->numel())) {
    return max_pool2d_kernel<T>(k);
  }
  if (!onednn::on_pool()) {  // one primitive on oneDNN's OpenMP team (A/B runs)
    onednn::execute(max_pool_plan(k.inputs[0]->shape(), k.out.shape(), g, 0), {const_cast<float*>(x), out}, 0);
    return;
  }
  // Planes are independent: split over the pool as [1, planes, h, w], one
  // single-threaded primitive per part (a plan per part size).
  const int parts = static_cast<int>(std::min<int64_t>(num_threads(), g.planes));
  auto body = [&](int ith, int nth) {
    const auto [p0, p1] = split(g.planes, ith, nth);
    if (p0 == p1) return;
    const auto& plan = max_pool_plan({1, p1 - p0, g.h, g.w}, {1, p1 - p0, g.oh, g.ow}, g);
    onednn::execute(plan, {const_cast<float*>(x + p0 * g.h * g.w), out + p0 * g.oh * g.ow});
  };
  parallel_region(parts, RegionBody(body));
}

}  // namespace

bool max_pool2d_backward_in_place_ok(const Shape& input, const Shape& grad, const Attrs& attrs) {
  return input.size() == 4 && grad.size() == 4 && is_plain_2x2(pool_geometry(input, grad, attrs, true));
}

void add_pool_kernels(Table& t) {
  // Forward on oneDNN but for the plain 2x2 window; the backward on the
  // loops above, threaded by plane: one pass, where oneDNN runs the forward
  // again for its workspace and then the backward (figures:
  // benchmarks/README.md, branch `cnn`).
  rows<float>(t, OpKind::kMaxPool2d, LAZYSCOPE_KERNEL(max_pool2d_onednn_kernel));
  rows<double>(t, OpKind::kMaxPool2d, LAZYSCOPE_KERNEL(max_pool2d_kernel));
  rows<float, double>(t, OpKind::kMaxPool2dBackward, LAZYSCOPE_KERNEL(max_pool2d_backward_kernel));
  rows<float, double>(t, OpKind::kAvgPool2d, LAZYSCOPE_KERNEL(avg_pool2d_kernel));
  rows<float, double>(t, OpKind::kAvgPool2dBackward, LAZYSCOPE_KERNEL(avg_pool2d_backward_kernel));
  rows<float, double>(t, OpKind::kAdaptiveAvgPool2d, LAZYSCOPE_KERNEL(adaptive_avg_pool2d_kernel));
  rows<float, double>(t, OpKind::kAdaptiveAvgPool2dBackward, LAZYSCOPE_KERNEL(adaptive_avg_pool2d_backward_kernel));
}

}  // namespace lazyscope::cpu
