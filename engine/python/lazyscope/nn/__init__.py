"""lazyscope.nn: torch.nn's modules, losses, functional API and init."""
from lazyscope.nn import functional, init, utils  # noqa: F401
from lazyscope.nn.layers import (  # noqa: F401
    GELU, AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, Conv2d, Dropout, Dropout2d, Embedding, Flatten,
    Identity, LayerNorm, LeakyReLU, Linear, LogSoftmax, MaxPool2d, MultiheadAttention, ReLU, Sigmoid, SiLU,
    Softmax, Tanh, Softplus, Conv1d, GroupNorm, L1Loss, ELU, Hardtanh, ReLU6, LogSigmoid, Mish, GLU,
    CosineSimilarity, ConvTranspose1d, ConvTranspose2d,
)
from lazyscope.nn.recurrent import GRU, LSTM  # noqa: F401
from lazyscope.nn.transformer import TransformerEncoder, TransformerEncoderLayer  # noqa: F401
from lazyscope.nn.loss import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, MSELoss, NLLLoss, SmoothL1Loss,
)
from lazyscope.nn.module import Module, ModuleDict, ModuleList, Sequential  # noqa: F401
from lazyscope.nn.parameter import Parameter  # noqa: F401
