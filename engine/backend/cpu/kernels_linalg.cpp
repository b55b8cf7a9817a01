// Kernels of the linear-algebra ops (torch.linalg): LU solves and
// inverses, log-determinants, Cholesky, triangular solves, symmetric
// eigendecompositions, QR and SVD, each through LAPACK (the one OpenBLAS
// ships: its Fortran symbols, declared here, so no LAPACKE package is
// needed) or BLAS's trsm.
//
// LAPACK is column-major and the engine's buffers are row-major: each
// matrix is copied into a column-major scratch (O(n^2) beside the O(n^3)
// factorization) and the results copied back. Batches are split over the
// pool, one matrix per LAPACK call, OpenBLAS at one thread inside them (as
// for the GEMM parts). A matrix the op cannot factor (singular for a solve
// or an inverse, not positive-definite for Cholesky) is an error naming
// the op, the batch element and the pivot, as PyTorch's are; on a lazy
// device it surfaces at the sync that runs the graph, before any parameter
// is written (the ops are fallible: may_fail_on_values).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/kernel_util.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"

extern "C" {
// LAPACK (Fortran calling convention: every argument by pointer).
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv,
             float* b, const int* ldb, int* info);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
             double* b, const int* ldb, int* info);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info);
}

namespace lazyscope::cpu {
namespace {

// The single- or double-precision routine of each family.
template <typename T> struct Lapack;
template <> struct Lapack<float> {
  static constexpr auto getrf = sgetrf_;
  static constexpr auto getrs = sgetrs_;
  static constexpr auto potrf = spotrf_;
  static constexpr auto syevd = ssyevd_;
  static constexpr auto geqrf = sgeqrf_;
  static constexpr auto orgqr = sorgqr_;
  static constexpr auto gesdd = sgesdd_;
  static void trsm(CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int n, int k, const float* a, float* b) {
    cblas_strsm(CblasRowMajor, CblasLeft, uplo, trans, diag, n, k, 1.0f, a, n, b, k);
  }
};
template <> struct Lapack<double> {
  static constexpr auto getrf = dgetrf_;
  static constexpr auto getrs = dgetrs_;
  static constexpr auto potrf = dpotrf_;
  static constexpr auto syevd = dsyevd_;
  static constexpr auto geqrf = dgeqrf_;
  static constexpr auto orgqr = dorgqr_;
  static constexpr auto gesdd = dgesdd_;
  static void trsm(CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int n, int k, const double* a, double* b) {
    cblas_dtrsm(CblasRowMajor, CblasLeft, uplo, trans, diag, n, k, 1.0, a, n, b, k);
  }
};

// Row-major [rows, cols] at `src` into column-major at `dst` (the same
// matrix, LAPACK's layout), and back.
template <typename T> void to_columns(const T* src, T* dst, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  }
}
template <typename T> void from_columns(const T* src, T* dst, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = src[c * rows + r];
  }
}

int as_int(int64_t v, const char* op) {
  if (v > std::numeric_limits<int>::max()) {
    throw EngineError(std::string(op) + ": a matrix dimension of " + std::to_string(v) + " is past LAPACK's int range");
  }
  return static_cast<int>(v);
}

// The matrices of a batch [..., rows, cols]: how many.
int64_t batch_count(const Shape& s) {
  int64_t count = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) count *= s[i];
  return count;
}

// f(b) for each batch element, split over the pool (one LAPACK call each:
// OpenBLAS at one thread inside, as the GEMM parts hold it).
template <typename F> void for_each_matrix(int64_t count, F&& f) {
  set_blas_threads(1);
  parallel_for(count, 2, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) f(b);
  });
}

std::string batch_note(int64_t count, int64_t b) {
  return count > 1 ? " (batch element " + std::to_string(b) + ")" : "";
}

// LU with partial pivoting of the n x n column-major `lu`, in place; a zero
// pivot is the error `op` names.
template <typename T> void lu_or_throw(T* lu, int n, int* pivots, const char* op, int64_t count, int64_t b) {
  int info = 0;
  Lapack<T>::getrf(&n, &n, lu, &n, pivots, &info);
  if (info > 0) {
    throw EngineError(std::string(op) + ": the matrix is singular: U[" + std::to_string(info - 1) + ", " +
                      std::to_string(info - 1) + "] of its LU factorization is exactly zero" + batch_note(count, b));
  }
}

// (A [..., n, n], B [..., n, k]), batch dims equal -> X with op(A) X = B,
// op(A) = A^T when attr transpose.
template <typename T> void solve_kernel(const KernelArgs& k) {
  const Shape& as = k.inputs[0]->shape();
  const int n = as_int(as.back(), "linalg.solve"), rhs = as_int(k.out.shape().back(), "linalg.solve");
  const int64_t count = batch_count(as);
  const char trans = k.attrs.get_bool("transpose") ? 'T' : 'N';
  const T* a = k.inputs[0]->as<T>();
  const T* bb = k.inputs[1]->as<T>();
  T* out = k.out.as<T>();
  for_each_matrix(count, [&](int64_t b) {
    std::vector<T> lu(static_cast<size_t>(n) * n), x(static_cast<size_t>(n) * rhs);
    std::vector<int> pivots(static_cast<size_t>(n));
    to_columns(a + b * n * n, lu.data(), n, n);
    to_columns(bb + b * n * rhs, x.data(), n, rhs);
    if (n == 0 || rhs == 0) return;
    lu_or_throw(lu.data(), n, pivots.data(), "linalg.solve", count, b);
    int info = 0;
    Lapack<T>::getrs(&trans, &n, &rhs, lu.data(), &n, pivots.data(), x.data(), &n, &info);
    from_columns(x.data(), out + b * n * rhs, n, rhs);
  });
}

// A [..., n, n] -> A^-1 (the LU's solve against the identity).
template <typename T> void inv_kernel(const KernelArgs& k) {
  const int n = as_int(k.out.shape().back(), "linalg.inv");
  const int64_t count = batch_count(k.out.shape());
  const T* a = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for_each_matrix(count, [&](int64_t b) {
    if (n == 0) return;
    std::vector<T> lu(static_cast<size_t>(n) * n), x(static_cast<size_t>(n) * n, T(0));
    std::vector<int> pivots(static_cast<size_t>(n));
    to_columns(a + b * n * n, lu.data(), n, n);
    lu_or_throw(lu.data(), n, pivots.data(), "linalg.inv", count, b);
    for (int i = 0; i < n; ++i) x[static_cast<size_t>(i) * n + i] = T(1);
    int info = 0;
    const char trans = 'N';
    Lapack<T>::getrs(&trans, &n, &n, lu.data(), &n, pivots.data(), x.data(), &n, &info);
    from_columns(x.data(), out + b * n * n, n, n);
  });
}

// A [..., n, n] -> [..., 2]: the sign of det(A) and log|det(A)|, from the
// LU's diagonal and its row swaps; a singular A gives (0, -inf), as
// PyTorch's slogdet.
template <typename T> void slogdet_kernel(const KernelArgs& k) {
  const Shape& as = k.inputs[0]->shape();
  const int n = as_int(as.back(), "linalg.slogdet");
  const int64_t count = batch_count(as);
  const T* a = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for_each_matrix(count, [&](int64_t b) {
    std::vector<T> lu(static_cast<size_t>(n) * n);
    std::vector<int> pivots(static_cast<size_t>(n));
    to_columns(a + b * n * n, lu.data(), n, n);
    int info = 0;
    if (n > 0) Lapack<T>::getrf(&n, &n, lu.data(), &n, pivots.data(), &info);
    double sign = 1, log_abs = 0;
    if (info > 0) {
      sign = 0;
      log_abs = -std::numeric_limits<double>::infinity();
    } else {
      for (int i = 0; i < n; ++i) {
        const double d = lu[static_cast<size_t>(i) * n + i];
        if (d < 0) sign = -sign;
        if (pivots[static_cast<size_t>(i)] != i + 1) sign = -sign;
        log_abs += std::log(std::abs(d));
      }
      if (std::isnan(log_abs)) sign = std::numeric_limits<double>::quiet_NaN();
    }
    out[2 * b] = static_cast<T>(sign);
    out[2 * b + 1] = static_cast<T>(log_abs);
  });
}

// A [..., n, n] (its lower triangle read) -> L lower with A = L L^T, or U =
// L^T with attr upper; the other triangle zero.
template <typename T> void cholesky_kernel(const KernelArgs& k) {
  const int n = as_int(k.out.shape().back(), "linalg.cholesky");
  const int64_t count = batch_count(k.out.shape());
  const bool upper = k.attrs.get_bool("upper");
  const T* a = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  for_each_matrix(count, [&](int64_t b) {
    std::vector<T> l(static_cast<size_t>(n) * n);
    to_columns(a + b * n * n, l.data(), n, n);
    int info = 0;
    const char uplo = 'L';
    if (n > 0) Lapack<T>::potrf(&uplo, &n, l.data(), &n, &info);
    if (info > 0) {
      throw EngineError("linalg.cholesky: the input is not positive-definite: the leading minor of order " +
                        std::to_string(info) + " is not positive" + batch_note(count, b));
    }
    T* o = out + b * n * n;
    for (int r = 0; r < n; ++r) {
      for (int c = 0; c < n; ++c) {
        const T v = c <= r ? l[static_cast<size_t>(c) * n + r] : T(0);  // L[r][c], lower
        (upper ? o[c * n + r] : o[r * n + c]) = v;
      }
    }
  });
}

// (A [..., n, n] triangular, B [..., n, k]) -> X with op(A) X = B, attrs
// upper (which triangle of A is read), transpose (op(A) = A^T),
// unitriangular (A's diagonal taken as ones). BLAS trsm, row-major as is.
template <typename T> void solve_triangular_kernel(const KernelArgs& k) {
  const Shape& as = k.inputs[0]->shape();
  const int n = as_int(as.back(), "linalg.solve_triangular"),
            rhs = as_int(k.out.shape().back(), "linalg.solve_triangular");
  const int64_t count = batch_count(as);
  const CBLAS_UPLO uplo = k.attrs.get_bool("upper") ? CblasUpper : CblasLower;
  const CBLAS_TRANSPOSE trans = k.attrs.get_bool("transpose") ? CblasTrans : CblasNoTrans;
  const CBLAS_DIAG diag = k.attrs.get_bool("unitriangular") ? CblasUnit : CblasNonUnit;
  const T* a = k.inputs[0]->as<T>();
  const T* bb = k.inputs[1]->as<T>();
  T* out = k.out.as<T>();
  for_each_matrix(count, [&](int64_t b) {
    std::copy(bb + b * n * rhs, bb + (b + 1) * n * rhs, out + b * n * rhs);
    if (n > 0 && rhs > 0) Lapack<T>::trsm(uplo, trans, diag, n, rhs, a + b * n * n, out + b * n * rhs);
  });
}

// A [..., n, n] symmetric (attr upper: its upper triangle read, else its
// lower) -> [..., n + n*n]: the eigenvalues ascending, then the [n, n]
// matrix whose columns are their eigenvectors (the front end slices both).
template <typename T> void eigh_kernel(const KernelArgs& k) {
  const Shape& as = k.inputs[0]->shape();
  const int n = as_int(as.back(), "linalg.eigh");
  const int64_t count = batch_count(as);
  const char jobz = 'V', uplo = k.attrs.get_bool("upper") ? 'U' : 'L';
  const T* a = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  const int64_t per = int64_t{n} + int64_t{n} * n;
  for_each_matrix(count, [&](int64_t b) {
    if (n == 0) return;
    std::vector<T> v(static_cast<size_t>(n) * n), w(static_cast<size_t>(n));
    to_columns(a + b * n * n, v.data(), n, n);
    int info = 0, lwork = -1, liwork = -1, iwork_size = 0;
    T work_size = 0;
    Lapack<T>::syevd(&jobz, &uplo, &n, v.data(), &n, w.data(), &work_size, &lwork, &iwork_size, &liwork, &info);
    lwork = static_cast<int>(work_size);
    liwork = iwork_size;
    std::vector<T> work(static_cast<size_t>(std::max(1, lwork)));
    std::vector<int> iwork(static_cast<size_t>(std::max(1, liwork)));
    Lapack<T>::syevd(&jobz, &uplo, &n, v.data(), &n, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info);
    if (info > 0) {
      throw EngineError("linalg.eigh: the eigenvalue algorithm did not converge (" + std::to_string(info) +
                        " off-diagonal elements left)" + batch_note(count, b));
    }
    T* o = out + b * per;
    std::copy(w.begin(), w.end(), o);
    from_columns(v.data(), o + n, n, n);
  });
}

// A [..., m, n] -> [..., m*q + q*n] packed [Q | R], q = min(m, n) (reduced)
// or m (attr complete): Q [m, q] with orthonormal columns, R [q, n] upper.
template <typename T> void qr_kernel(const KernelArgs& k) {
  const Shape& as = k.inputs[0]->shape();
  const int m = as_int(as[as.size() - 2], "linalg.qr"), n = as_int(as.back(), "linalg.qr");
  const int kk = std::min(m, n), q = k.attrs.get_bool("complete") ? m : kk;
  const int64_t count = batch_count(as);
  const T* a = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  const int64_t per = int64_t{m} * q + int64_t{q} * n;
  for_each_matrix(count, [&](int64_t b) {
    T* o = out + b * per;
    std::fill(o, o + per, T(0));
    if (m == 0 || n == 0) {
      for (int i = 0; i < std::min(m, q); ++i) o[i * q + i] = T(1);  // Q of an empty A: the identity's columns
      return;
    }
    const int cols = std::max(n, q);  // room for Q's q columns
    const int lda = m;
    std::vector<T> f(static_cast<size_t>(m) * cols, T(0)), tau(static_cast<size_t>(kk));
    to_columns(a + b * m * n, f.data(), m, n);
    int info = 0, lwork = -1;
    T size = 0;
    Lapack<T>::geqrf(&m, &n, f.data(), &lda, tau.data(), &size, &lwork, &info);
    lwork = std::max(1, static_cast<int>(size));
    std::vector<T> work(static_cast<size_t>(lwork));
    Lapack<T>::geqrf(&m, &n, f.data(), &lda, tau.data(), work.data(), &lwork, &info);
    // R: the upper triangle of the first q rows (column-major f).
    T* r = o + int64_t{m} * q;
    for (int i = 0; i < std::min(q, m); ++i) {
      for (int j = i; j < n; ++j) r[static_cast<int64_t>(i) * n + j] = f[static_cast<size_t>(j) * m + i];
    }
    lwork = -1;
    Lapack<T>::orgqr(&m, &q, &kk, f.data(), &lda, tau.data(), &size, &lwork, &info);
    lwork = std::max(1, static_cast<int>(size));
    work.assign(static_cast<size_t>(lwork), T(0));
    Lapack<T>::orgqr(&m, &q, &kk, f.data(), &lda, tau.data(), work.data(), &lwork, &info);
    from_columns(f.data(), o, m, q);
  });
}

// A [..., m, n] -> [..., m*q + q + q*n] packed [U | S | Vh], q = min(m, n)
// (attr full: U [m, m] and Vh [n, n] instead, S still q): the singular
// values descending (divide and conquer, gesdd).
template <typename T> void svd_kernel(const KernelArgs& k) {
  const Shape& as = k.inputs[0]->shape();
  const int m = as_int(as[as.size() - 2], "linalg.svd"), n = as_int(as.back(), "linalg.svd");
  const int kk = std::min(m, n);
  const bool full = k.attrs.get_bool("full");
  const int ucols = full ? m : kk, vrows = full ? n : kk;
  const int64_t count = batch_count(as);
  const T* a = k.inputs[0]->as<T>();
  T* out = k.out.as<T>();
  const int64_t per = int64_t{m} * ucols + kk + int64_t{vrows} * n;
  for_each_matrix(count, [&](int64_t b) {
    T* o = out + b * per;
    std::fill(o, o + per, T(0));
    if (m == 0 || n == 0) {
      for (int i = 0; i < std::min(m, ucols); ++i) o[i * ucols + i] = T(1);
      T* vh = o + int64_t{m} * ucols + kk;
      for (int i = 0; i < std::min(vrows, n); ++i) vh[i * n + i] = T(1);
      return;
    }
    std::vector<T> f(static_cast<size_t>(m) * n), s(static_cast<size_t>(kk)), u(static_cast<size_t>(m) * ucols),
        vt(static_cast<size_t>(vrows) * n);
    std::vector<int> iwork(static_cast<size_t>(8) * kk);
    to_columns(a + b * m * n, f.data(), m, n);
    const char jobz = full ? 'A' : 'S';
    int info = 0, lwork = -1;
    T size = 0;
    Lapack<T>::gesdd(&jobz, &m, &n, f.data(), &m, s.data(), u.data(), &m, vt.data(), &vrows, &size, &lwork,
                     iwork.data(), &info);
    lwork = std::max(1, static_cast<int>(size));
    std::vector<T> work(static_cast<size_t>(lwork));
    Lapack<T>::gesdd(&jobz, &m, &n, f.data(), &m, s.data(), u.data(), &m, vt.data(), &vrows, work.data(), &lwork,
                     iwork.data(), &info);
    if (info > 0) {
      throw EngineError("linalg.svd: the algorithm did not converge" + batch_note(count, b) +
                        " (the input may contain NaN or infinite values)");
    }
    if (info < 0) {
      throw EngineError("linalg.svd: LAPACK refused argument " + std::to_string(-info) +
                        " (the input may contain NaN or infinite values)" + batch_note(count, b));
    }
    from_columns(u.data(), o, m, ucols);
    std::copy(s.begin(), s.end(), o + int64_t{m} * ucols);
    from_columns(vt.data(), o + int64_t{m} * ucols + kk, vrows, n);
  });
}

}  // namespace

void add_linalg_kernels(Table& t) {
  rows<float, double>(t, OpKind::kLinalgSolve, LAZYSCOPE_KERNEL(solve_kernel));
  rows<float, double>(t, OpKind::kLinalgInv, LAZYSCOPE_KERNEL(inv_kernel));
  rows<float, double>(t, OpKind::kLinalgSlogdet, LAZYSCOPE_KERNEL(slogdet_kernel));
  rows<float, double>(t, OpKind::kLinalgCholesky, LAZYSCOPE_KERNEL(cholesky_kernel));
  rows<float, double>(t, OpKind::kLinalgSolveTriangular, LAZYSCOPE_KERNEL(solve_triangular_kernel));
  rows<float, double>(t, OpKind::kLinalgEigh, LAZYSCOPE_KERNEL(eigh_kernel));
  rows<float, double>(t, OpKind::kLinalgQr, LAZYSCOPE_KERNEL(qr_kernel));
  rows<float, double>(t, OpKind::kLinalgSvd, LAZYSCOPE_KERNEL(svd_kernel));
}

}  // namespace lazyscope::cpu
