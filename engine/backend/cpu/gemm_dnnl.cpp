#include "backend/cpu/gemm_dnnl.h"

#include <dnnl.h>
#include <omp.h>

#include <string>

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

bool dnnl_gemm_avx512() {
  static const bool yes = [] {
    const std::string limit = settings::cpu_isa_limit();
    return (limit.empty() || limit == "avx512f") &&
           (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  }();
  return yes;
}

}  // namespace lazyscope::cpu
