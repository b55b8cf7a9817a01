#include "backend/cpu/gemm_dnnl.h"

#include <dnnl.h>
#include <omp.h>

#include <string>

#include "backend/cpu/onednn.h"
#include "core/error.h"
#include "core/settings.h"

namespace lazyscope::cpu {

void dnnl_gemm(const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb, float* out, int64_t ldc,
               int64_t m, int64_t k, int64_t n, int threads) {
  // oneDNN's OpenMP build splits a product over omp_get_max_threads() of
  // the calling thread: a per-thread setting in libgomp, so setting it here
  // changes neither the pool's other threads nor the convolutions' count
  // once restored.
  const int before = omp_get_max_threads();
  if (before != threads) omp_set_num_threads(threads);
  const dnnl_status_t status = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, out,
                                          ldc);
  if (before != threads) omp_set_num_threads(before);
  if (status != dnnl_success) {
    throw EngineError("matmul: dnnl_sgemm failed (status " + std::to_string(static_cast<int>(status)) + ") on " +
                      std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
  }
}

namespace {

// Sets the calling thread's OpenMP thread count for a scope (libgomp's count
// is per thread; oneDNN reads it per call, and its matmul primitives also
// when they are created, to plan their split).
class OmpThreads {
 public:
  explicit OmpThreads(int n) : before_(omp_get_max_threads()) {
    if (before_ != n) omp_set_num_threads(n);
    n_ = n;
  }
  ~OmpThreads() {
    if (before_ != n_) omp_set_num_threads(before_);
  }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int before_, n_ = 1;
};

}  // namespace

bool dnnl_batched_gemm(const float* a, const std::vector<int64_t>& a_strides, const float* b,
                       const std::vector<int64_t>& b_strides, float* out, const std::vector<int64_t>& out_strides,
                       const std::vector<int64_t>& batch, int64_t m, int64_t k, int64_t n) {
  const size_t rank = batch.size() + 2;
  if (a_strides.size() != rank || b_strides.size() != rank || out_strides.size() != rank) {
    throw EngineError("matmul: batched oneDNN product given strides of the wrong rank");
  }
  // The key: a tag no convolution or pooling plan starts with (they use
  // their pass, 0-2, and 100), then the geometry.
  std::vector<int64_t> key{200, m, k, n};
  for (const auto* v : {&batch, &a_strides, &b_strides, &out_strides}) key.insert(key.end(), v->begin(), v->end());
  const OmpThreads one(1);  // on this thread only: created and run single-threaded
  const onednn::Plan& plan = onednn::cached(key, [&] {
    const auto desc = [&](int64_t rows, int64_t cols, const std::vector<int64_t>& strides) {
      dnnl::memory::dims dims(batch.begin(), batch.end());
      dims.push_back(rows);
      dims.push_back(cols);
      return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::dims(strides.begin(), strides.end()));
    };
    const auto src = desc(m, k, a_strides), weights = desc(k, n, b_strides), dst = desc(m, n, out_strides);
    onednn::Plan p;
    dnnl::matmul::primitive_desc pd;
    try {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), onednn::attributes(), onednn::engine());
    } catch (const dnnl::error&) {
      return p;  // no implementation for these strides: not taken
    }
    // Only the brgemm kernels: for layouts they refuse, oneDNN falls back
    // to a gemm-based or reference matmul, slower than OpenBLAS's calls.
    if (std::string(pd.impl_info_str()).rfind("brg", 0) != 0) return p;  // no arguments: not taken
    p.primitive = dnnl::matmul(pd);
    onednn::add_arg(p, DNNL_ARG_SRC, src, src, false);
    onednn::add_arg(p, DNNL_ARG_WEIGHTS, weights, weights, false);
    onednn::add_arg(p, DNNL_ARG_DST, dst, dst, true);
    p.scratchpad = pd.scratchpad_desc();
    return p;
  });
  if (plan.args.empty()) return false;
  if (out) onednn::execute(plan, {const_cast<float*>(a), const_cast<float*>(b), out});
  return true;
}

bool dnnl_gemm_avx512() {
  static const bool yes = [] {
    const std::string limit = settings::cpu_isa_limit();
    return (limit.empty() || limit == "avx512f") &&
           (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  }();
  return yes;
}

}  // namespace lazyscope::cpu
