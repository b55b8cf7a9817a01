"""Loss modules over the engine's fused losses (PyTorch's arguments)."""
from lazyscope.nn import functional as F
from lazyscope.nn.module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            raise ValueError(f"{type(self).__name__}: size_average and reduce are deprecated and not supported; "
                             f"use reduction=")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: {reduction!r} is not a valid value for reduction "
                             f"(mean, sum, none)")
        self.reduction = reduction

    def extra_repr(self):
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class NLLLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):  # noqa: A002
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):  # noqa: A002
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class MSELoss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.mse_loss(input, target, reduction=self.reduction)


class BCELoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):  # noqa: A002
        if self.weight is not None:
            return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)
        return F.binary_cross_entropy(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):  # noqa: A002
        kwargs = {}
        if self.weight is not None:
            kwargs["weight"] = self.weight
        if self.pos_weight is not None:
            kwargs["pos_weight"] = self.pos_weight
        return F.binary_cross_entropy_with_logits(input, target, reduction=self.reduction, **kwargs)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__()
        if size_average is not None or reduce is not None:
            raise ValueError("KLDivLoss: size_average and reduce are deprecated and not supported; use reduction=")
        if reduction not in ("mean", "sum", "none", "batchmean"):
            raise ValueError(f"KLDivLoss: {reduction!r} is not a valid value for reduction "
                             f"(mean, batchmean, sum, none)")
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input, target):  # noqa: A002
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


def _loss_module(name, fn, params=(), doc=""):
    """A loss module of F.`fn`: keyword arguments `params` (name, default) kept as attributes, reduction too."""
    def __init__(self, *args, size_average=None, reduce=None, reduction="mean", **kwargs):
        _Loss.__init__(self, size_average, reduce, reduction)
        if len(args) > len(params):
            raise TypeError(f"{name}: expected at most {len(params)} positional arguments, got {len(args)}")
        values = dict(params)
        values.update(zip([p for p, _ in params], args))
        for key, value in kwargs.items():
            if key not in values:
                raise TypeError(f"{name}: unexpected argument {key!r}")
            values[key] = value
        for key, value in values.items():
            if key == "weight":
                self.register_buffer("weight", value)
            else:
                setattr(self, key, value)

    def forward(self, *inputs):
        return fn(*inputs, **{p: getattr(self, p) for p, _ in params}, reduction=self.reduction)

    cls = type(name, (_Loss,), {"__init__": __init__, "forward": forward, "__doc__": doc})
    cls.__module__ = __name__
    return cls


MarginRankingLoss = _loss_module("MarginRankingLoss", F.margin_ranking_loss, [("margin", 0.0)])
HingeEmbeddingLoss = _loss_module("HingeEmbeddingLoss", F.hinge_embedding_loss, [("margin", 1.0)])
SoftMarginLoss = _loss_module("SoftMarginLoss", F.soft_margin_loss)
CosineEmbeddingLoss = _loss_module("CosineEmbeddingLoss", F.cosine_embedding_loss, [("margin", 0.0)])
TripletMarginLoss = _loss_module("TripletMarginLoss", F.triplet_margin_loss,
                                 [("margin", 1.0), ("p", 2.0), ("eps", 1e-6), ("swap", False)])
PoissonNLLLoss = _loss_module("PoissonNLLLoss", F.poisson_nll_loss,
                              [("log_input", True), ("full", False), ("eps", 1e-8)])
GaussianNLLLoss = _loss_module("GaussianNLLLoss", F.gaussian_nll_loss, [("full", False), ("eps", 1e-6)])
MultiLabelSoftMarginLoss = _loss_module("MultiLabelSoftMarginLoss", F.multilabel_soft_margin_loss,
                                        [("weight", None)])
MultiMarginLoss = _loss_module("MultiMarginLoss", F.multi_margin_loss, [("p", 1), ("margin", 1.0), ("weight", None)])



class CTCLoss(_Loss):
    """F.ctc_loss as a module: blank, reduction, zero_infinity."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)

class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

