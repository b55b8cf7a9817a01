"""torch.special: the functions training code reaches for. lgamma (gammaln),
digamma and erfinv are compositions of the engine's elementwise ops (so
they run on every device, fuse, and have gradients): lgamma by Lanczos'
approximation (g = 7, 9 terms) with the reflection formula below 0.5;
digamma by six steps of its recurrence and the asymptotic series;
erfinv by Giles' approximation refined with two Newton steps on erf.
i0, i0e, i1, i1e (power series and the asymptotic expansion), zeta
(Hurwitz: a shifted sum and Euler-Maclaurin's tail) and polygamma are
compositions too, evaluated in float64, differentiated by autograd."""
import math

import lazyscope as _ls

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)


def _float(x):
    return x if x.is_floating_point() else x.to(_ls.get_default_dtype())


def _lgamma_right(z):
    """log|Γ(z)| for z >= 0.5 (Lanczos)."""
    z = z - 1.0
    a = _ls.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        a = a + c / (z + float(i))
    t = z + (_LANCZOS_G + 0.5)
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * t.log() - t + a.log()


def gammaln(input):  # noqa: A002
    """log|Γ(x)|, as torch.special.gammaln (torch.lgamma): inf at 0 and the negative integers."""
    x = _float(input)
    right = _lgamma_right(_ls.where(x < 0.5, 1.0 - x, x))
    # Γ(x) Γ(1 - x) = π / sin(πx) below 0.5.
    s = (x * math.pi).sin().abs()
    left = math.log(math.pi) - s.log() - right
    pole = (x <= 0) & (x == x.floor())  # sin(pi x) is not exactly 0 there in floating point
    return _ls.where(pole, _ls.full_like(right, float("inf")), _ls.where(x < 0.5, left, right))


lgamma = gammaln


def digamma(input):  # noqa: A002
    """ψ(x) = d/dx log Γ(x), as torch.special.digamma: -inf... PyTorch gives -inf at 0 and NaN at
    the negative integers."""
    x = _float(input)
    # Reflection for x < 0.5: ψ(1 - x) - π / tan(πx).
    y = _ls.where(x < 0.5, 1.0 - x, x)
    shift = _ls.zeros_like(y)
    for _ in range(6):  # ψ(y) = ψ(y + 6) - Σ 1/(y + k)
        shift = shift + 1.0 / y
        y = y + 1.0
    inv2 = 1.0 / (y * y)
    series = y.log() - 0.5 / y - inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 * (1.0 / 12)))))))
    right = series - shift
    px = x * math.pi
    left = right - math.pi * px.cos() / px.sin()
    out = _ls.where(x < 0.5, left, right)
    at_pole = (x <= 0) & (x == x.floor())
    return _ls.where(at_pole, _ls.where(x == 0, _ls.full_like(out, float("-inf")), _ls.full_like(out, float("nan"))),
                     out)


psi = digamma


def erfinv(input):  # noqa: A002
    """The inverse of erf on (-1, 1) (±inf at ±1, NaN outside), as torch.special.erfinv."""
    x = _float(input)
    w = -((1.0 - x) * (1.0 + x)).log()
    small = w - 2.5
    p1 = _ls.full_like(x, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p1 = p1 * small + c
    big = w.clamp(min=5.0).sqrt() - 3.0
    p2 = _ls.full_like(x, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p2 = p2 * big + c
    y = _ls.where(w < 5.0, p1, p2) * x
    # Two Newton steps on erf(y) = x: Giles' float accuracy to double's.
    for _ in range(2):
        err = y.erf() - x
        y = y - err / (2.0 / math.sqrt(math.pi) * (-(y * y)).exp())
    inf = _ls.where(x > 0, _ls.full_like(y, float("inf")), _ls.full_like(y, float("-inf")))
    return _ls.where(x.abs() == 1.0, inf, _ls.where(x.abs() > 1.0, _ls.full_like(y, float("nan")), y))


def expit(input):  # noqa: A002
    return input.sigmoid()


def logit(input, eps=None):  # noqa: A002
    return _ls.logit(input, eps)


def ndtr(input):  # noqa: A002
    """The standard normal CDF: through erfc below 0 (no cancellation in the left tail)."""
    x = _float(input) * (1 / math.sqrt(2))
    return _ls.where(x < 0, 0.5 * _ls.erfc(-x), 0.5 * (1.0 + x.erf()))


def ndtri(input):  # noqa: A002
    """The standard normal quantile (ndtr's inverse), as sqrt(2) erfinv(2p - 1): 2p - 1 rounds to
    float's precision near 1, so p under ~1e-4 keeps ~1e-11 relative accuracy in float64 (Cephes'
    ndtri, PyTorch's, is exact there)."""
    return math.sqrt(2) * erfinv(2.0 * _float(input) - 1.0)


def log_ndtr(input):  # noqa: A002
    """log of the standard normal CDF (accurate in the left tail through erfc)."""
    x = _float(input)
    return (0.5 * _ls.erfc(-x * (1 / math.sqrt(2)))).log()


def entr(input):  # noqa: A002
    """-x log x (0 at 0, -inf below 0)."""
    x = _float(input)
    v = -x * x.log()
    return _ls.where(x == 0, _ls.zeros_like(v), _ls.where(x < 0, _ls.full_like(v, float("-inf")), v))


def xlog1py(input, other):  # noqa: A002
    """x * log1p(y), 0 where x == 0 (unless y is NaN)."""
    y = other
    v = input * y.log1p()
    return _ls.where((input == 0) & ~y.isnan(), _ls.zeros_like(v), v)


def _same(name):
    def fn(*args, **kwargs):
        return getattr(_ls, name)(*args, **kwargs)
    fn.__name__ = name
    return fn


erf, erfc, exp2, expm1, log1p, sinc, round, xlogy = (_same(n) for n in (  # noqa: A001
    "erf", "erfc", "exp2", "expm1", "log1p", "sinc", "round", "xlogy"))
logsumexp, softmax, log_softmax = _same("logsumexp"), _same("softmax"), _same("log_softmax")


# --- modified Bessel functions of the first kind (orders 0 and 1) ------------
#
# |x| <= 25: the power series, I0 = sum y^k / (k!)^2 and I1 = (x/2) sum
# y^k / (k! (k+1)!) with y = x^2/4, in nested form (s = 1 + s y / (k (k+1)),
# positive terms: no cancellation, and no coefficient underflows in float32);
# 40 terms reach 1e-17 of the sum at 25. Beyond, the asymptotic expansion
# I_v(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k a_k(v) / x^k, 20 terms (its
# smallest term at 25 is ~4e-18). Evaluated in float64 (float32 results
# rounded once). Plain compositions, so autograd differentiates them: the
# series is written in x itself (I1 odd), which gives PyTorch's i1'(0) = 1/2,
# and each branch reads x clamped to its own range, so the branch `where`
# drops never sees a value that would make its gradient NaN. (Not an
# autograd.Function: its hooks live on the output tensor, and an output the
# caller drops at once, as in i0(x).sum(), never receives its gradient.)

_BESSEL_SPLIT, _BESSEL_SERIES_TERMS, _BESSEL_ASYMPTOTIC_TERMS = 25.0, 40, 20


def _bessel(x, order, scaled):
    """I_order(x), or e^-|x| I_order(x) if scaled, for order 0 or 1 (x a float64 tensor)."""
    a = x.abs()
    near = x.clamp(-_BESSEL_SPLIT, _BESSEL_SPLIT)
    y = near * near * 0.25
    s = _ls.ones_like(y)
    for k in range(_BESSEL_SERIES_TERMS, 0, -1):
        s = 1.0 + s * y * (1.0 / (k * (k + order)))
    series = s * (near * 0.5) if order == 1 else s
    if scaled:
        series = series * (-near.abs()).exp()
    far = a.clamp(min=_BESSEL_SPLIT)
    inv = 1.0 / far
    t = _ls.ones_like(far)
    nu2 = 4.0 * order * order
    for k in range(_BESSEL_ASYMPTOTIC_TERMS, 0, -1):
        # a_k / a_{k-1} = (4 v^2 - (2k - 1)^2) / (8k), with the series' (-1)^k.
        t = 1.0 + t * inv * (-(nu2 - (2 * k - 1) ** 2) / (8.0 * k))
    asymptotic = t / (2.0 * math.pi * far).sqrt()
    if not scaled:
        # Overflows to inf past ~709, as e^x; at |x| = inf, inf (not 0 * inf).
        asymptotic = _ls.where(far == math.inf, _ls.full_like(far, math.inf), asymptotic * far.exp())
    if order == 1:
        asymptotic = _ls.where(x < 0, -asymptotic, asymptotic)
    v = _ls.where(a <= _BESSEL_SPLIT, series, asymptotic)
    return _ls.where(x.isnan(), x, v)


def _bessel_of(input, order, scaled):
    x = _float(input)
    return _bessel(x.to(_ls.float64), order, scaled).to(x.dtype)


def i0(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 0, as torch.special.i0."""
    return _bessel_of(input, 0, False)


def i0e(input):  # noqa: A002
    """exp(-|x|) i0(x), as torch.special.i0e (no overflow for large |x|)."""
    return _bessel_of(input, 0, True)


def i1(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 1 (odd), as torch.special.i1."""
    return _bessel_of(input, 1, False)


def i1e(input):  # noqa: A002
    """exp(-|x|) i1(x), as torch.special.i1e."""
    return _bessel_of(input, 1, True)


# --- the Hurwitz zeta function and polygamma ---------------------------------
#
# zeta(s, q) = sum_k (q + k)^-s: the first 12 terms, then Euler-Maclaurin's
# tail at a = q + 12, a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! (s)_(2j-1)
# a^(-s-2j+1), 10 terms (relative error under 1e-20 for s = 2, less for
# larger s, whose sum the first terms dominate). In float64; float32 results
# rounded once. polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 1,
# with the reflection formula for x < 0 (below).

_ZETA_SHIFT = 12
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
              -174611 / 330)  # B_2, B_4, ..., B_20


def _hurwitz(s, q):
    """zeta(s, q) for q > 0 (float64 tensors, or s a Python number)."""
    total = _ls.zeros_like(q)
    for k in range(_ZETA_SHIFT):
        total = total + (q + float(k)).pow(-s)
    a = q + float(_ZETA_SHIFT)
    a_s = a.pow(-s)
    tail = a / (s - 1.0) + 0.5
    rising = s  # (s)_(2j-1), the rising factorial
    inv = 1.0 / a
    power = inv  # a^-(2j-1)
    for j, b in enumerate(_BERNOULLI, start=1):
        tail = tail + rising * power * (b / math.factorial(2 * j))
        rising = rising * (s + (2 * j - 1)) * (s + 2 * j)
        power = power * inv * inv
    return total + a_s * tail


def zeta(input, other):  # noqa: A002
    """The Hurwitz zeta function sum_k (other + k)^-input, as torch.special.zeta: inf at input = 1
    and at other = 0, -1, ...; NaN for input < 1. other < 0 (not an integer) gives NaN, where
    PyTorch (Cephes) sums the series for an integer input."""
    tensors = [a for a in (input, other) if isinstance(a, _ls.Tensor)]
    if not tensors:
        raise TypeError(f"zeta: expected a tensor operand, got {type(input).__name__} and {type(other).__name__}")
    dtype = tensors[0].dtype if len(tensors) == 1 else _ls.promote_types(tensors[0].dtype, tensors[1].dtype)
    if not _ls.empty((), dtype=dtype).is_floating_point():
        dtype = _ls.get_default_dtype()
    s = input.to(_ls.float64) if isinstance(input, _ls.Tensor) else _ls.full_like(other, float(input),
                                                                                    dtype=_ls.float64)
    q = other.to(_ls.float64) if isinstance(other, _ls.Tensor) else _ls.full_like(input, float(other),
                                                                                   dtype=_ls.float64)
    s, q = _ls.broadcast_tensors(s, q)
    ok = (s > 1.0) & (q > 0.0)
    value = _hurwitz(_ls.where(ok, s, _ls.full_like(s, 2.0)), _ls.where(ok, q, _ls.ones_like(q)))
    inf, nan = _ls.full_like(value, float("inf")), _ls.full_like(value, float("nan"))
    value = _ls.where(q <= 0.0, _ls.where(q == q.floor(), inf, nan), value)
    value = _ls.where(q == math.inf, _ls.zeros_like(value), value)  # the tail's 0 * inf
    value = _ls.where(s == 1.0, inf, _ls.where(s < 1.0, nan, value))
    value = _ls.where(s.isnan() | q.isnan(), nan, value)
    return value.to(dtype)


def _cot_derivative_polynomial(n):
    """Coefficients (constant first) of P_n with d^n/dx^n cot(x) = P_n(cot x): P_0 = c,
    P_(k+1) = -(1 + c^2) P_k'(c)."""
    p = [0, 1]
    for _ in range(n):
        dp = [i * p[i] for i in range(1, len(p))] or [0]
        nxt = [0] * (len(dp) + 2)
        for i, c in enumerate(dp):
            nxt[i] -= c
            nxt[i + 2] -= c
        p = nxt
    return p


def _polygamma_positive(n, x):
    """polygamma(n, x) for n >= 1 and x > 0 (float64)."""
    return ((-1) ** (n + 1) * math.factorial(n)) * _hurwitz(float(n + 1), x)


def _polygamma_value(n, x):
    """polygamma(n, x) for n >= 1, in x's float dtype (computed in float64)."""
    x64 = x.to(_ls.float64)
    right = _polygamma_positive(n, _ls.where(x64 > 0, x64, 1.0 - x64))
    # Reflection: polygamma(n, x) = (-1)^n polygamma(n, 1 - x) - pi^(n+1) P_n(cot(pi x)), read at
    # -1/2 where x > 0 (cot is huge near the positive integers: an unused branch's inf would make
    # the gradient NaN).
    px = _ls.where(x64 > 0, _ls.full_like(x64, -0.5), x64) * math.pi
    c = px.cos() / px.sin()
    poly = _ls.zeros_like(c)
    for coefficient in reversed(_cot_derivative_polynomial(n)):
        poly = poly * c + float(coefficient)
    left = (-1) ** n * right - math.pi ** (n + 1) * poly
    out = _ls.where(x64 > 0, right, left)
    pole = (x64 <= 0) & (x64 == x64.floor())
    out = _ls.where(pole, _ls.full_like(out, float("inf") if n % 2 == 1 else float("-inf")), out)
    out = _ls.where(x64 == math.inf, _ls.zeros_like(out), out)  # the tail's 0 * inf
    return out.to(x.dtype)


def polygamma(n, input):  # noqa: A002
    """The n-th derivative of digamma, as torch.special.polygamma: n = 0 is digamma; at 0 and the
    negative integers +inf for odd n, -inf for even n >= 2 (PyTorch's). A composition, so its
    gradient is the derivative of the same sums (polygamma(n + 1, x), checked by finite
    differences)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"polygamma: n must be a non-negative integer, got {n!r}")
    x = _float(input)
    if n == 0:
        return digamma(x)
    return _polygamma_value(n, x)


def multigammaln(input, p):  # noqa: A002
    return _ls.mvlgamma(input, p)
