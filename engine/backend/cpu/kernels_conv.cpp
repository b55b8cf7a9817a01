// conv2d and its two backward ops. float32 with fewer than 16 channels on a
// side, stride 1, one group runs on the direct kernels below (forward; the
// gradients also need no padding and whole-vector output rows); the rest of
// float32 on oneDNN primitives (forward, backward data, backward weights),
// which block the channels for the vector units and thread over the whole
// batch; float64 (oneDNN 2.6 has no f64 convolution) and empty shapes take
// the im2col + OpenBLAS path below.
// im2col: the unfolded columns of one image are [C/groups * kH * kW, oH * oW];
// the group's weight is [O/groups, C/groups * kH * kW], so the forward is
// weight x columns written straight into the output's [O/groups, oH * oW]
// block. A 1x1 kernel with stride 1 and no padding needs no unfolding: the
// input is its own columns.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/onednn.h"
#include "backend/cpu/thread_pool.h"
#include "core/settings.h"

namespace lazyscope::cpu {
namespace {

struct ConvGeometry {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // weight
  int64_t oh, ow;      // output
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  int64_t k() const { return cg() * kh * kw; }  // rows of the columns
  int64_t l() const { return oh * ow; }         // columns of the columns
  bool identity_columns() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

ConvGeometry geometry(const Shape& x, const Shape& w, const Shape& out, const Attrs& attrs) {
  const auto& s = attrs.get_ints("stride");
  const auto& p = attrs.get_ints("padding");
  const auto& d = attrs.get_ints("dilation");
  return {x[0],   x[1], x[2], x[3], w[0], w[2], w[3], out[2],
          out[3], s[0], s[1], p[0], p[1], d[0], d[1], attrs.get_int("groups")};
}

// C = op(A) op(B) (+ C when accumulate), row-major, through OpenBLAS.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) std::fill(c, c + m * n, T(0));
    return;
  }
  const auto ta = trans_a ? CblasTrans : CblasNoTrans;
  const auto tb = trans_b ? CblasTrans : CblasNoTrans;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  const int lda = trans_a ? mi : ki, ldb = trans_b ? ki : ni;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, mi, ni, ki, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, ni);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, mi, ni, ki, 1.0, a, lda, b, ldb, accumulate ? 1.0 : 0.0, c, ni);
  }
}

// f(n0, n1, part) over the images split across the pool, part in [0,
// image_parts(images)). Each part runs on one thread, so a per-thread
// buffer (onednn::thread_buffer) is the part's own. OpenBLAS runs one
// thread per call (thread_pool.cpp), so parts' GEMMs run side by side. Up
// to 4 parts per thread, claimed as threads come: on a loaded machine a
// worker that starts late leaves its parts to the others (parallel_for's
// rule), where one part per thread made the whole region wait for it.
enum Scratch : int { kColumns = 16, kPartials = 17, kGradients = 20 };

int image_parts(int64_t images) {
  const int threads = num_threads();
  return threads <= 1 ? 1 : static_cast<int>(std::min<int64_t>(4 * threads, images));
}

template <typename F> void for_image_parts(int64_t images, F&& f) {
  const int parts = image_parts(images);
  if (parts <= 1) {
    if (images > 0) f(int64_t{0}, images, 0);
    return;
  }
  auto body = [&](int ith, int nth) {
    const auto [b, e] = split(images, ith, nth);
    if (b < e) f(b, e, ith);
  };
  parallel_region(parts, RegionBody(body));
}

// Copies a short row (a few to a few dozen elements): in 32-byte moves
// that the compiler inlines, where std::copy's call to memmove cost more
// than the copy (21% of an im2col weight gradient, perf).
template <typename T> void copy_row(const T* __restrict src, int64_t n, T* __restrict dst) {
  const auto* s = reinterpret_cast<const char*>(src);
  auto* d = reinterpret_cast<char*>(dst);
  int64_t bytes = n * static_cast<int64_t>(sizeof(T));
  for (; bytes >= 32; bytes -= 32, s += 32, d += 32) __builtin_memcpy(d, s, 32);
  for (; bytes >= static_cast<int64_t>(sizeof(T)); bytes -= sizeof(T), s += sizeof(T), d += sizeof(T)) {
    __builtin_memcpy(d, s, sizeof(T));
  }
}

// The output columns [x0, x1) whose tap j reads inside the image:
// 0 <= x*sw - pw + j*dw < w.
std::pair<int64_t, int64_t> tap_columns(const ConvGeometry& g, int64_t j) {
  const int64_t first = g.pw - j * g.dw;  // x*sw >= first
  const int64_t x0 = std::clamp<int64_t>(first <= 0 ? 0 : (first + g.sw - 1) / g.sw, 0, g.ow);
  const int64_t last = g.w - 1 + g.pw - j * g.dw;  // x*sw <= last
  const int64_t x1 = std::clamp<int64_t>(last < 0 ? 0 : last / g.sw + 1, x0, g.ow);
  return {x0, x1};
}

// The columns of one image's group into rows `ld` apart (several images'
// columns side by side): each row's valid output positions found by
// arithmetic, not tested one by one; a row of a stride-1 tap is a copy.
template <typename T> void im2col_rows(const ConvGeometry& g, const T* image, T* cols, int64_t ld) {
  for (int64_t ci = 0; ci < g.cg(); ++ci) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        T* row = cols + ((ci * g.kh + i) * g.kw + j) * ld;
        const auto [x0, x1] = tap_columns(g, j);
        for (int64_t y = 0; y < g.oh; ++y) {
          T* dst = row + y * g.ow;
          const int64_t iy = y * g.sh - g.ph + i * g.dh;
          if (iy < 0 || iy >= g.h || x0 == x1) {
            std::fill(dst, dst + g.ow, T(0));
            continue;
          }
          const T* src = image + (ci * g.h + iy) * g.w + (x0 * g.sw - g.pw + j * g.dw);  // x0's pixel
          std::fill(dst, dst + x0, T(0));
          if (g.sw == 1) {
            copy_row(src, x1 - x0, dst + x0);
          } else {
            for (int64_t x = x0; x < x1; ++x) dst[x] = src[(x - x0) * g.sw];
          }
          std::fill(dst + x1, dst + g.ow, T(0));
        }
      }
    }
  }
}

// x [N, C, H, W] * w [O, C/G, kH, kW] -> out [N, O, oH, oW]: per image and
// group, weight x columns written straight into the output's block.
template <typename T> void conv2d_kernel(const KernelArgs& k) {
  const ConvGeometry g = geometry(k.inputs[0]->shape(), k.inputs[1]->shape(), k.out.shape(), k.attrs);
  const T* x = k.inputs[0]->as<T>();
  const T* w = k.inputs[1]->as<T>();
  T* out = k.out.as<T>();
  for_image_parts(g.n, [&](int64_t n0, int64_t n1, int) {
    T* cols = static_cast<T*>(onednn::thread_buffer(kColumns, static_cast<size_t>(g.k() * g.l()) * sizeof(T)));
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const T* image = x + (n * g.c + grp * g.cg()) * g.h * g.w;
        if (!g.identity_columns()) im2col_rows(g, image, cols, g.l());
        gemm(false, false, g.og(), g.l(), g.k(), w + grp * g.og() * g.k(), g.identity_columns() ? image : cols,
             out + (n * g.o + grp * g.og()) * g.l(), false);
      }
    }
  });
}

// The inverse of im2col_rows: adds each column row back onto the pixels it
// was read from (`image` zeroed by the caller).
template <typename T> void col2im_rows(const ConvGeometry& g, const T* cols, int64_t ld, T* image) {
  for (int64_t ci = 0; ci < g.cg(); ++ci) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* row = cols + ((ci * g.kh + i) * g.kw + j) * ld;
        const auto [x0, x1] = tap_columns(g, j);
        if (x0 == x1) continue;
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy = y * g.sh - g.ph + i * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          const T* src = row + y * g.ow;
          T* dst = image + (ci * g.h + iy) * g.w + (x0 * g.sw - g.pw + j * g.dw);  // x0's pixel
          if (g.sw == 1) {
            for (int64_t x = 0; x < x1 - x0; ++x) dst[x] += src[x0 + x];
          } else {
            for (int64_t x = x0; x < x1; ++x) dst[(x - x0) * g.sw] += src[x];
          }
        }
      }
    }
  }
}

// Images per chunk of the batched im2col kernels: their columns some 384 KiB
// (float32), to stay in L2.
int64_t chunk_images(const ConvGeometry& g) { return std::max<int64_t>(1, (int64_t{96} << 10) / (g.k() * g.l())); }

// Gathers the chunk's output gradients [images][O/G][L] of group grp into
// [O/G, images * L].
template <typename T>
void gather_rows(const ConvGeometry& g, const T* grad, int64_t n0, int64_t images, int64_t grp, T* dys) {
  const int64_t ld = images * g.l();
  for (int64_t m = 0; m < images; ++m) {
    const T* dy = grad + ((n0 + m) * g.o + grp * g.og()) * g.l();
    for (int64_t o = 0; o < g.og(); ++o) copy_row(dy + o * g.l(), g.l(), dys + o * ld + m * g.l());
  }
}

// (grad, weight) -> grad input: columns = weight^T x grad, folded back
// (col2im), one GEMM per chunk of images as the weight gradient below.
template <typename T> void conv2d_backward_input_kernel(const KernelArgs& k) {
  const Shape& gs = k.inputs[0]->shape();
  const ConvGeometry g = geometry(k.out.shape(), k.inputs[1]->shape(), gs, k.attrs);
  const T* grad = k.inputs[0]->as<T>();
  const T* w = k.inputs[1]->as<T>();
  T* out = k.out.as<T>();
  std::fill(out, out + k.out.numel(), T(0));
  if (g.l() == 0 || g.k() == 0) return;
  const int64_t chunk = chunk_images(g);
  for_image_parts(g.n, [&](int64_t n0, int64_t n1, int) {
    const int64_t most = std::min(chunk, n1 - n0);
    T* cols = static_cast<T*>(onednn::thread_buffer(kColumns, static_cast<size_t>(most * g.k() * g.l()) * sizeof(T)));
    T* dys = static_cast<T*>(onednn::thread_buffer(kGradients, static_cast<size_t>(most * g.og() * g.l()) * sizeof(T)));
    for (int64_t c0 = n0; c0 < n1; c0 += chunk) {
      const int64_t images = std::min(chunk, n1 - c0), ld = images * g.l();
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        gather_rows(g, grad, c0, images, grp, dys);
        gemm(true, false, g.k(), ld, g.og(), w + grp * g.og() * g.k(), dys, cols, false);
        for (int64_t m = 0; m < images; ++m) {
          col2im_rows(g, cols + m * g.l(), ld, out + ((c0 + m) * g.c + grp * g.cg()) * g.h * g.w);
        }
      }
    }
  });
}

// (input, grad) -> grad weight: the sum over images of grad x columns^T,
// as one GEMM per chunk of images: the chunk's columns side by side
// [C/G * kH * kW, images * oH * oW] (some 384 KiB, to stay in L2) and its
// gradients gathered the same way [O/G, images * oH * oW], so the GEMM's
// inner dimension is the chunk's positions, not one image's (64 for the
// MNIST CNN's second layer). Each part sums its images into its own partial
// (part 0 into the output), added up in part order afterwards, so the
// result does not depend on which thread ran which part.
template <typename T> void conv2d_backward_weight_kernel(const KernelArgs& k) {
  const Shape& gs = k.inputs[1]->shape();
  const ConvGeometry g = geometry(k.inputs[0]->shape(), k.out.shape(), gs, k.attrs);
  const T* x = k.inputs[0]->as<T>();
  const T* grad = k.inputs[1]->as<T>();
  T* out = k.out.as<T>();
  const int64_t size = k.out.numel();
  std::fill(out, out + size, T(0));
  if (g.l() == 0 || g.k() == 0) return;
  const int parts = image_parts(g.n);
  const int64_t chunk = chunk_images(g);
  T* partials = parts > 1 ? static_cast<T*>(
                                onednn::thread_buffer(kPartials, static_cast<size_t>((parts - 1) * size) * sizeof(T)))
                          : nullptr;
  for_image_parts(g.n, [&](int64_t n0, int64_t n1, int part) {
    T* sum = part == 0 ? out : partials + (part - 1) * size;
    const int64_t most = std::min(chunk, n1 - n0);
    T* cols = static_cast<T*>(onednn::thread_buffer(kColumns, static_cast<size_t>(most * g.k() * g.l()) * sizeof(T)));
    T* dys = static_cast<T*>(onednn::thread_buffer(kGradients, static_cast<size_t>(most * g.og() * g.l()) * sizeof(T)));
    for (int64_t c0 = n0; c0 < n1; c0 += chunk) {
      const int64_t images = std::min(chunk, n1 - c0), ld = images * g.l();
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        for (int64_t m = 0; m < images; ++m) {
          im2col_rows(g, x + ((c0 + m) * g.c + grp * g.cg()) * g.h * g.w, cols + m * g.l(), ld);
        }
        gather_rows(g, grad, c0, images, grp, dys);
        gemm(false, true, g.og(), g.k(), ld, dys, cols, sum + grp * g.og() * g.k(), c0 > n0);
      }
    }
  });
  for (int part = 1; part < parts; ++part) {
    const T* p = partials + (part - 1) * size;
    for (int64_t i = 0; i < size; ++i) out[i] += p[i];
  }
}

// --- direct convolution (float32, stride 1, no dilation, one group) ------------
//
// The MNIST CNN's convolutions are small in channels (1 -> 10, 10 -> 20):
// oneDNN blocks channels by 16 (most of each block padding) and reorders
// NCHW to its blocked layout and back on every call, which cost more than
// the arithmetic. Here each image is convolved in its own layout: 8 output
// positions of a row times a block of up to 12 output channels in vector
// registers (conv_direct.inc), the weights packed once per call as [block]
// [C][KH][KW][block size]. The gradients have kernels of their own below
// (the input gradient as the same convolution of the output gradient padded
// by K-1-p, with the weights flipped, multiplied mostly padding on these
// sizes and was 1.6-2.9x slower than oneDNN).

struct DirectGeometry {
  int64_t c, hp, wp;  // input channels, padded height and width
  int64_t o, kh, kw;  // output channels, kernel
  int64_t oh, ow;     // output
};

struct WeightGeometry {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // weight
  int64_t oh, ow;      // output
};

// Whether the environment variable `name` is `value`: the direct kernels'
// A/B switches below, each read once (a static), for runs of the old and the
// new code in separate processes.
bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == value;
}

namespace direct_avx2 {
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "backend/cpu/conv_direct.inc"
#pragma GCC pop_options
}  // namespace direct_avx2

namespace direct_baseline {
#include "backend/cpu/conv_direct.inc"
}  // namespace direct_baseline

// AVX-512VL for its 32 vector registers (the same 8-wide vectors): only the
// weight gradient's 4-channel groups are taken from this copy.
namespace direct_avx512 {
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma")
#include "backend/cpu/conv_direct.inc"
#pragma GCC pop_options
}  // namespace direct_avx512

// AVX2 + FMA where the CPU has them and LAZYSCOPE_CPU_ISA allows (as the
// fused kernels' tile functions), else x86-64's SSE2.
bool direct_avx2_allowed() {
  static const bool allowed = [] {
    __builtin_cpu_init();
    const std::string limit = settings::cpu_isa_limit();
    return (limit.empty() || limit == "avx512f" || limit == "avx2") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
  }();
  return allowed;
}

// AVX-512F and VL where the CPU has them and LAZYSCOPE_CPU_ISA allows.
bool direct_avx512_allowed() {
  static const bool allowed = [] {
    __builtin_cpu_init();
    const std::string limit = settings::cpu_isa_limit();
    return (limit.empty() || limit == "avx512f") && direct_avx2_allowed() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512vl");
  }();
  return allowed;
}

// The weight gradient's groups of 4 output channels on AVX-512VL, unless
// LAZYSCOPE_CONV_WEIGHT_GROUP=2 (read once; for A/B runs).
bool weight_groups_of_4() {
  static const bool yes = direct_avx512_allowed() && !env_is("LAZYSCOPE_CONV_WEIGHT_GROUP", "2");
  return yes;
}

// The forward's blocking: output rows in pairs with blocks of up to 12
// output channels on AVX-512VL (24 accumulators), of up to 6 elsewhere (12);
// LAZYSCOPE_CONV_FORWARD_BLOCK (read once) forces `6` (pairs of up to 6) or
// `12` (a row at a time in blocks of up to 12, the kernel before the pairs),
// for A/B runs.
enum class ForwardBlocks { kRows12, kPairs6, kPairs12 };
ForwardBlocks forward_blocks() {
  static const ForwardBlocks mode = env_is("LAZYSCOPE_CONV_FORWARD_BLOCK", "12")  ? ForwardBlocks::kRows12
                                    : env_is("LAZYSCOPE_CONV_FORWARD_BLOCK", "6") ? ForwardBlocks::kPairs6
                                    : direct_avx512_allowed()                     ? ForwardBlocks::kPairs12
                                                                                  : ForwardBlocks::kPairs6;
  return mode;
}

using DirectImageFn = void (*)(const DirectGeometry&, int, const float*, const float*, float*);
DirectImageFn direct_image_fn() {
  switch (forward_blocks()) {
    case ForwardBlocks::kPairs12: return &direct_avx512::direct_conv_image_wide;
    case ForwardBlocks::kRows12:
      return direct_avx2_allowed() ? &direct_avx2::direct_conv_image_rows : &direct_baseline::direct_conv_image_rows;
    case ForwardBlocks::kPairs6: break;
  }
  return direct_avx2_allowed() ? &direct_avx2::direct_conv_image : &direct_baseline::direct_conv_image;
}

using DirectInputFn = void (*)(const WeightGeometry&, const float*, const float*, float*, float*);
DirectInputFn direct_input_fn() {
  return direct_avx2_allowed() ? &direct_avx2::direct_input_image : &direct_baseline::direct_input_image;
}

using DirectWeightFn = void (*)(const WeightGeometry&, const float*, const float*, float*, int64_t, int64_t);
DirectWeightFn direct_weight_fn() {
  if (weight_groups_of_4()) return &direct_avx512::direct_weight_units4;
  return direct_avx2_allowed() ? &direct_avx2::direct_weight_units : &direct_baseline::direct_weight_units;
}
// The units direct_weight_fn() splits the weight gradient into.
int64_t direct_weight_unit_count(const ConvGeometry& g) {
  const int64_t group = weight_groups_of_4() ? 4 : 2;
  return (g.o + group - 1) / group * g.c * g.kh;
}

std::atomic<bool> g_direct_conv{true};

enum DirectScratch : int { kPacked = 18, kPadded = 19 };

// Output channels per register block: as even as blocks of at most 6 or
// 12 go (forward_blocks()).
int direct_block_size(int64_t o) {
  const int64_t most = forward_blocks() == ForwardBlocks::kPairs6 ? 6 : 12;
  const int64_t blocks = (o + most - 1) / most;
  return static_cast<int>((o + blocks - 1) / blocks);
}

// Convolves every image of x [n, d.c, h, w] (padded by ph, pw on the fly)
// with the packed weights into out [n, d.o, d.oh, d.ow], images split
// across the pool.
void direct_conv(const DirectGeometry& d, int64_t n, int64_t h, int64_t w, int64_t ph, int64_t pw, const float* x,
                 const float* wpack, int ob, float* out) {
  const DirectImageFn fn = direct_image_fn();
  const size_t padded = static_cast<size_t>(d.c * d.hp * d.wp);
  for_image_parts(n, [&](int64_t n0, int64_t n1, int) {
    // 8 floats of slack: a row's last vector may read past the image.
    float* img = static_cast<float*>(onednn::thread_buffer(kPadded, (padded + 8) * sizeof(float)));
    std::fill(img, img + padded + 8, 0.0f);
    for (int64_t i = n0; i < n1; ++i) {
      const float* src = x + i * d.c * h * w;
      for (int64_t c = 0; c < d.c; ++c) {
        for (int64_t y = 0; y < h; ++y) {
          std::copy(src + (c * h + y) * w, src + (c * h + y + 1) * w, img + (c * d.hp + y + ph) * d.wp + pw);
        }
      }
      fn(d, ob, img, wpack, out + i * d.o * d.oh * d.ow);
    }
  });
}

bool direct_fits(const ConvGeometry& g) {
  return g.groups == 1 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.n > 0 && g.c > 0 && g.o > 0 &&
         g.oh > 0 && g.ow > 0;
}

void conv2d_direct(const ConvGeometry& g, const float* x, const float* w, float* out) {
  const DirectGeometry d{g.c, g.h + 2 * g.ph, g.w + 2 * g.pw, g.o, g.kh, g.kw, g.oh, g.ow};
  const int ob = direct_block_size(g.o);
  const int64_t blocks = (g.o + ob - 1) / ob, taps = g.c * g.kh * g.kw;
  float* wpack = static_cast<float*>(onednn::thread_buffer(kPacked, static_cast<size_t>(blocks * taps * ob) * 4));
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t t = 0; t < taps; ++t) {
      for (int q = 0; q < ob; ++q) {
        const int64_t o = b * ob + q;
        wpack[(b * taps + t) * ob + q] = o < g.o ? w[o * taps + t] : 0.0f;
      }
    }
  }
  direct_conv(d, g.n, g.h, g.w, g.ph, g.pw, x, wpack, ob, out);
}

// The weight gradient directly (stride 1, no padding, output rows a
// whole number of vectors: the MNIST CNN's 24- and 8-wide rows), split
// across the pool by images: each part (two per thread, claimed as threads
// come; one per thread measured 15% slower on the MNIST CNN's second layer,
// four 3% slower) sums its images over every (output channel pair, input channel,
// kernel row) unit into its own partial (part 0 into the output), added in
// part order afterwards. Split by units instead (each weight summed by one
// thread over the whole batch, LAZYSCOPE_CONV_WEIGHT_SPLIT=units, the
// behaviour before), every thread streamed the whole batch's inputs and
// gradients once per unit: the MNIST CNN's second layer 8 of 8 alternated
// runs slower (benchmarks/README.md, branch `conv`).
bool direct_weight_fits(const ConvGeometry& g) {
  return direct_fits(g) && g.ph == 0 && g.pw == 0 && g.ow % 8 == 0 && g.kw <= 7;
}

// Read once: for A/B runs of the two splits in separate processes.
bool weight_split_by_images() {
  static const bool yes = !env_is("LAZYSCOPE_CONV_WEIGHT_SPLIT", "units");
  return yes;
}

void conv2d_backward_weight_direct(const ConvGeometry& g, const float* x, const float* dy, float* dw) {
  const DirectWeightFn fn = direct_weight_fn();
  const int64_t units = direct_weight_unit_count(g);
  if (!weight_split_by_images()) {
    const WeightGeometry d{g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.oh, g.ow};
    parallel_for(units, 1, [&](int64_t u0, int64_t u1) { fn(d, x, dy, dw, u0, u1); });
    return;
  }
  const int parts = static_cast<int>(std::min<int64_t>(2 * num_threads(), g.n));
  const int64_t size = g.o * g.c * g.kh * g.kw;
  float* partials = parts > 1 ? static_cast<float*>(
                                    onednn::thread_buffer(kPartials, static_cast<size_t>((parts - 1) * size) * 4))
                              : nullptr;
  auto body = [&](int ith, int nth) {
    const auto [n0, n1] = split(g.n, ith, nth);
    float* sum = ith == 0 ? dw : partials + (ith - 1) * size;
    if (n0 == n1) {
      std::fill(sum, sum + size, 0.0f);
      return;
    }
    const WeightGeometry d{n1 - n0, g.c, g.h, g.w, g.o, g.kh, g.kw, g.oh, g.ow};
    fn(d, x + n0 * g.c * g.h * g.w, dy + n0 * g.o * g.oh * g.ow, sum, 0, units);
  };
  parallel_region(parts, RegionBody(body));
  for (int part = 1; part < parts; ++part) {
    const float* p = partials + (part - 1) * size;
    for (int64_t i = 0; i < size; ++i) dw[i] += p[i];
  }
}

// The input gradient directly where the weight gradient's conditions hold
// (no padding, rows of whole vectors): per image on the pool, channel pairs
// of input rows accumulated from the output rows that reach them. The
// weights packed per call as [pair][O][KH][KW][2] (a single last channel's
// second slot zero).
// Input rows in pairs, a channel at a time (direct_input_rows_image), unless
// LAZYSCOPE_CONV_INPUT_BLOCKS=channels (read once): channel pairs a row at
// a time (direct_input_image), the behaviour before, for A/B runs.
bool input_rows_in_pairs() {
  static const bool yes = !env_is("LAZYSCOPE_CONV_INPUT_BLOCKS", "channels");
  return yes;
}

void conv2d_backward_input_direct(const ConvGeometry& g, const float* dy, const float* w, float* dx) {
  const WeightGeometry d{g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.oh, g.ow};
  const int64_t taps = g.kh * g.kw;
  DirectInputFn fn = direct_input_fn();
  float* wpack = nullptr;
  if (input_rows_in_pairs()) {
    // [C][O][KH][KW]
    fn = direct_avx2_allowed() ? &direct_avx2::direct_input_rows_image : &direct_baseline::direct_input_rows_image;
    wpack = static_cast<float*>(onednn::thread_buffer(kPacked, static_cast<size_t>(g.c * g.o * taps) * 4));
    for (int64_t c = 0; c < g.c; ++c) {
      for (int64_t o = 0; o < g.o; ++o) {
        for (int64_t t = 0; t < taps; ++t) wpack[(c * g.o + o) * taps + t] = w[(o * g.c + c) * taps + t];
      }
    }
  } else {
    const int64_t pairs = (g.c + 1) / 2, per_pair = g.o * taps * 2;
    wpack = static_cast<float*>(onednn::thread_buffer(kPacked, static_cast<size_t>(pairs * per_pair) * 4));
    for (int64_t p = 0; p < pairs; ++p) {
      for (int64_t o = 0; o < g.o; ++o) {
        for (int64_t t = 0; t < taps; ++t) {
          for (int64_t q = 0; q < 2; ++q) {
            const int64_t c = 2 * p + q;
            wpack[p * per_pair + (o * taps + t) * 2 + q] = c < g.c ? w[(o * g.c + c) * taps + t] : 0.0f;
          }
        }
      }
    }
  }
  for_image_parts(g.n, [&](int64_t n0, int64_t n1, int) {
    float* rows = static_cast<float*>(onednn::thread_buffer(kPadded, static_cast<size_t>(2 * g.w) * sizeof(float)));
    for (int64_t n = n0; n < n1; ++n) fn(d, dy + n * g.o * g.oh * g.ow, wpack, rows, dx + n * g.c * g.h * g.w);
  });
}

// --- oneDNN (float32) ----------------------------------------------------------

using dnnl::memory;
using Tag = memory::format_tag;

enum class ConvPass : int64_t { kForward, kBackwardData, kBackwardWeights };

bool onednn_fits(const ConvGeometry& g, ConvPass pass) {
  // oneDNN 2.6's backward kernels for one or few input channels per group
  // (the MNIST CNN's first layer) are 3-5x slower than im2col + GEMM
  // (benchmarks/engine_bench conv_kernel/backward_*/64x1x28_k5_to_10); its
  // forward is not.
  if (pass != ConvPass::kForward && g.cg() < 4) return false;
  // Empty tensors are not primitives' business; the loops handle them.
  return !settings::im2col_conv() && g.n > 0 && g.c > 0 && g.o > 0 && g.oh > 0 && g.ow > 0 && g.kh > 0 && g.kw > 0;
}

struct ConvDescs {
  memory::desc src, weights, dst;              // plain: what the caller's buffers hold
  memory::desc src_any, weights_any, dst_any;  // format `any`: the primitive picks its blocking
  memory::dims strides, dilates, padding;
};

ConvDescs conv_descs(const ConvGeometry& g) {
  const memory::dims src{g.n, g.c, g.h, g.w}, dst{g.n, g.o, g.oh, g.ow};
  // Grouped weights are [G, O/G, C/G, kH, kW], the same bytes as OIHW.
  const memory::dims wei = g.groups == 1 ? memory::dims{g.o, g.c, g.kh, g.kw}
                                         : memory::dims{g.groups, g.og(), g.cg(), g.kh, g.kw};
  ConvDescs d;
  d.src = onednn::plain(src, Tag::nchw);
  d.dst = onednn::plain(dst, Tag::nchw);
  d.weights = onednn::plain(wei, g.groups == 1 ? Tag::oihw : Tag::goihw);
  d.src_any = onednn::plain(src, Tag::any);
  d.dst_any = onednn::plain(dst, Tag::any);
  d.weights_any = onednn::plain(wei, Tag::any);
  d.strides = {g.sh, g.sw};
  d.dilates = {g.dh - 1, g.dw - 1};  // oneDNN counts the gaps, PyTorch the step
  d.padding = {g.ph, g.pw};          // symmetric; the output size is PyTorch's floor rule either side
  return d;
}

dnnl::convolution_forward::primitive_desc forward_pd(const ConvDescs& d) {
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                             d.src_any, d.weights_any, d.dst_any, d.strides, d.dilates, d.padding,
                                             d.padding);
  return {desc, onednn::attributes(), onednn::engine()};
}

onednn::Plan conv_plan(const ConvGeometry& g, ConvPass pass) {
  const ConvDescs d = conv_descs(g);
  const auto fwd = forward_pd(d);
  onednn::Plan plan;
  switch (pass) {
    case ConvPass::kForward:
      plan.primitive = dnnl::convolution_forward(fwd);
      plan.scratchpad = fwd.scratchpad_desc();
      onednn::add_arg(plan, DNNL_ARG_SRC, d.src, fwd.src_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_WEIGHTS, d.weights, fwd.weights_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_DST, d.dst, fwd.dst_desc(), true);
      break;
    case ConvPass::kBackwardData: {
      const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d.src_any, d.weights_any,
                                                       d.dst_any, d.strides, d.dilates, d.padding, d.padding);
      const dnnl::convolution_backward_data::primitive_desc pd(desc, onednn::attributes(), onednn::engine(), fwd);
      plan.primitive = dnnl::convolution_backward_data(pd);
      plan.scratchpad = pd.scratchpad_desc();
      onednn::add_arg(plan, DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_WEIGHTS, d.weights, pd.weights_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_DIFF_SRC, d.src, pd.diff_src_desc(), true);
      break;
    }
    case ConvPass::kBackwardWeights: {
      const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, d.src_any, d.weights_any,
                                                          d.dst_any, d.strides, d.dilates, d.padding, d.padding);
      const dnnl::convolution_backward_weights::primitive_desc pd(desc, onednn::attributes(), onednn::engine(), fwd);
      plan.primitive = dnnl::convolution_backward_weights(pd);
      plan.scratchpad = pd.scratchpad_desc();
      onednn::add_arg(plan, DNNL_ARG_SRC, d.src, pd.src_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), false);
      onednn::add_arg(plan, DNNL_ARG_DIFF_WEIGHTS, d.weights, pd.diff_weights_desc(), true);
      break;
    }
  }
  return plan;
}

const onednn::Plan& cached_plan(const ConvGeometry& g, ConvPass pass, int omp_threads = 1) {
  const std::vector<int64_t> key{static_cast<int64_t>(pass),
                                 g.n,
                                 g.c,
                                 g.h,
                                 g.w,
                                 g.o,
                                 g.kh,
                                 g.kw,
                                 g.oh,
                                 g.ow,
                                 g.sh,
                                 g.sw,
                                 g.ph,
                                 g.pw,
                                 g.dh,
                                 g.dw,
                                 g.groups};
  return onednn::cached(
      key, [&] { return conv_plan(g, pass); }, omp_threads);
}

// Runs the pass on oneDNN: a, b are the pass's inputs, out its output, in
// the kernel's argument order. The images are split over the pool, one
// part per thread, each part one single-threaded primitive over its images
// (onednn::execute; a primitive per part size, cached like the rest: at
// most two sizes per split). Before, one primitive ran on oneDNN's OpenMP
// team beside the pool. The weight gradient sums per part: part 0 into
// the output, the others into partials added in part order afterwards, so
// the result does not depend on which thread ran which part.
// set_onednn_on_pool(false) runs one primitive over the whole batch on
// the calling thread's OpenMP count instead, for A/B measurements.
void run_onednn(const ConvGeometry& g, ConvPass pass, const float* a, const float* b, float* out) {
  if (!onednn::on_pool()) {
    onednn::execute(cached_plan(g, pass, 0), {const_cast<float*>(a), const_cast<float*>(b), out}, 0);
    return;
  }
  const int parts = static_cast<int>(std::min<int64_t>(num_threads(), g.n));
  const int64_t in_image = g.c * g.h * g.w, out_image = g.o * g.oh * g.ow;
  const int64_t size = g.o * g.cg() * g.kh * g.kw;  // the weight gradient's
  float* partials = pass == ConvPass::kBackwardWeights && parts > 1
                        ? static_cast<float*>(
                              onednn::thread_buffer(kPartials, static_cast<size_t>((parts - 1) * size) * sizeof(float)))
                        : nullptr;
  auto body = [&](int ith, int nth) {
    const auto [n0, n1] = split(g.n, ith, nth);
    if (n0 == n1) return;
    ConvGeometry part = g;
    part.n = n1 - n0;
    const onednn::Plan& plan = cached_plan(part, pass);
    switch (pass) {
      case ConvPass::kForward:  // (x, w) -> y
        onednn::execute(plan, {const_cast<float*>(a + n0 * in_image), const_cast<float*>(b), out + n0 * out_image});
        break;
      case ConvPass::kBackwardData:  // (dy, w) -> dx
        onednn::execute(plan, {const_cast<float*>(a + n0 * out_image), const_cast<float*>(b), out + n0 * in_image});
        break;
      case ConvPass::kBackwardWeights:  // (x, dy) -> dw
        onednn::execute(plan, {const_cast<float*>(a + n0 * in_image), const_cast<float*>(b + n0 * out_image),
                               ith == 0 ? out : partials + (ith - 1) * size});
        break;
    }
  };
  parallel_region(parts, RegionBody(body));
  if (partials == nullptr) return;
  parallel_for(size, 4096, [&](int64_t i0, int64_t i1) {
    for (int part = 1; part < parts; ++part) {
      const float* p = partials + (part - 1) * size;
      for (int64_t i = i0; i < i1; ++i) out[i] += p[i];
    }
  });
}

// The direct kernels where oneDNN's blocks of 16 channels would be mostly
// padding (fewer than 16 channels on either side): measured one thread,
// engine_bench conv_kernel (benchmarks/README.md, branch `cnn`): the MNIST
// CNN's 1 -> 10 and 10 -> 20 forward 283 vs 542 and 506 vs 613 us, their
// weight gradients 310 vs 425 (im2col) and 962 vs 1223 us; 16 -> 32
// channels, 3x3, forward 3708 vs oneDNN's 2507 us.
bool use_direct(const ConvGeometry& g) {
  return g_direct_conv && !settings::im2col_conv() && direct_fits(g) && (g.c < 16 || g.o < 16);
}

template <typename T> void conv2d_onednn_kernel(const KernelArgs& k) {
  const ConvGeometry g = geometry(k.inputs[0]->shape(), k.inputs[1]->shape(), k.out.shape(), k.attrs);
  if (use_direct(g)) return conv2d_direct(g, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
  if (!onednn_fits(g, ConvPass::kForward)) return conv2d_kernel<T>(k);
  run_onednn(g, ConvPass::kForward, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
}

template <typename T> void conv2d_backward_input_onednn_kernel(const KernelArgs& k) {
  const ConvGeometry g = geometry(k.out.shape(), k.inputs[1]->shape(), k.inputs[0]->shape(), k.attrs);
  if (use_direct(g) && direct_weight_fits(g)) {
    return conv2d_backward_input_direct(g, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
  }
  if (!onednn_fits(g, ConvPass::kBackwardData)) return conv2d_backward_input_kernel<T>(k);
  run_onednn(g, ConvPass::kBackwardData, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
}

template <typename T> void conv2d_backward_weight_onednn_kernel(const KernelArgs& k) {
  const ConvGeometry g = geometry(k.inputs[0]->shape(), k.out.shape(), k.inputs[1]->shape(), k.attrs);
  if (use_direct(g) && direct_weight_fits(g)) {
    return conv2d_backward_weight_direct(g, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
  }
  if (!onednn_fits(g, ConvPass::kBackwardWeights)) return conv2d_backward_weight_kernel<T>(k);
  run_onednn(g, ConvPass::kBackwardWeights, k.inputs[0]->as<T>(), k.inputs[1]->as<T>(), k.out.as<T>());
}

}  // namespace

bool set_direct_conv(bool on) { return g_direct_conv.exchange(on); }
bool set_onednn_on_pool(bool on) { return onednn::set_on_pool(on); }

void add_conv_kernels(Table& t) {
  rows<float>(t, OpKind::kConv2d, LAZYSCOPE_KERNEL(conv2d_onednn_kernel));
  rows<float>(t, OpKind::kConv2dBackwardInput, LAZYSCOPE_KERNEL(conv2d_backward_input_onednn_kernel));
  rows<float>(t, OpKind::kConv2dBackwardWeight, LAZYSCOPE_KERNEL(conv2d_backward_weight_onednn_kernel));
  rows<double>(t, OpKind::kConv2d, LAZYSCOPE_KERNEL(conv2d_kernel));
  rows<double>(t, OpKind::kConv2dBackwardInput, LAZYSCOPE_KERNEL(conv2d_backward_input_kernel));
  rows<double>(t, OpKind::kConv2dBackwardWeight, LAZYSCOPE_KERNEL(conv2d_backward_weight_kernel));
}

}  // namespace lazyscope::cpu
