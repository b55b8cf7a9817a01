"""torch.nn.utils.parametrizations: weight_norm and spectral_norm as
parametrizations (nn.utils.parametrize), PyTorch's formulas:

- weight_norm: weight = g * v / |v|, the norm over every dim but `dim`
  (originals: original0 = g, original1 = v);
- spectral_norm: weight / sigma, sigma the largest singular value of the
  weight as a matrix (dim first), estimated by power iteration on buffers
  u and v, n_power_iterations per call in training mode (none in eval)."""
import lazyscope
from lazyscope.nn.module import Module
from lazyscope.nn.parameter import _NoGrad
from lazyscope.nn.utils import parametrize

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v, dim):
    """|v| over every dim but `dim`, keeping dims (dim None: over all)."""
    if dim is None or dim == -1 and v.dim() == 0:
        return (v * v).sum().sqrt()
    dim = dim % v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    return (v * v).sum(others, keepdim=True).sqrt() if others else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """module.<name> = g * v / |v| (g of the norm's shape, v the weight's)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


def _normalize(x, eps):
    return x / (x * x).sum().sqrt().clamp_min(eps)


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be positive, got {n_power_iterations}")
        ndim = weight.dim()
        self.dim = dim % ndim if ndim else 0
        self.eps = eps
        self.n_power_iterations = n_power_iterations
        if ndim > 1:
            matrix = self._as_matrix(weight.detach())
            h, w = matrix.shape
            u = _normalize(lazyscope.randn(h, dtype=weight.dtype, device=weight.device), eps)
            v = _normalize(lazyscope.randn(w, dtype=weight.dtype, device=weight.device), eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(matrix, 15)

    def _as_matrix(self, weight):
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, matrix, iterations):
        with _NoGrad():
            u, v = self._u, self._v
            for _ in range(iterations):
                u = _normalize(matrix @ v, self.eps)
                v = _normalize(matrix.t() @ u, self.eps)
            self._u.copy_(u)
            self._v.copy_(v)

    def forward(self, weight):
        if weight.dim() == 1:
            return _normalize(weight, self.eps)
        matrix = self._as_matrix(weight)
        if self.training:
            self._power_method(matrix.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (matrix @ v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """module.<name> divided by its largest singular value (power iteration)."""
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
