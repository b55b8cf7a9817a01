"""torch.special: the functions training code reaches for. lgamma (gammaln),
digamma and erfinv are compositions of the engine's elementwise ops (so
they run on every device, fuse, and have gradients): lgamma by Lanczos'
approximation (g = 7, 9 terms) with the reflection formula below 0.5;
digamma by six steps of its recurrence and the asymptotic series;
erfinv by Giles' approximation refined with two Newton steps on erf."""
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
