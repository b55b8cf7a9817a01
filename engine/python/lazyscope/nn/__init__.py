"""lazyscope.nn: torch.nn's modules, losses, functional API and init."""
from lazyscope.nn import functional, init, utils  # noqa: F401
from lazyscope.nn.layers import (  # noqa: F401
    GELU, AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, Conv2d, Dropout, Dropout2d, Embedding, Flatten,
    Identity, LayerNorm, LeakyReLU, Linear, LogSoftmax, MaxPool2d, MultiheadAttention, ReLU, Sigmoid, SiLU,
    Softmax, Tanh, Softplus, Conv1d, GroupNorm, L1Loss, ELU, Hardtanh, ReLU6, LogSigmoid, Mish, GLU,
    CosineSimilarity, ConvTranspose1d, ConvTranspose2d, Hardswish, Hardsigmoid, SELU, Softsign, Tanhshrink, CELU,
    PReLU, Softmin, Threshold, Softshrink, Hardshrink, Bilinear, EmbeddingBag,
    Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d, AdaptiveAvgPool3d,
)
from lazyscope.nn.layers_spatial import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
    Dropout1d, InstanceNorm1d, InstanceNorm2d, MaxPool1d, PixelShuffle, PixelUnshuffle, ReflectionPad1d,
    ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, Unflatten, Upsample, UpsamplingBilinear2d,
    UpsamplingNearest2d, ZeroPad1d, ZeroPad2d, Fold, Unfold,
)
from lazyscope.nn.parameter_containers import ParameterDict, ParameterList  # noqa: F401
from lazyscope.nn.recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: F401
from lazyscope.nn.transformer import (  # noqa: F401
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)
from lazyscope.nn.loss import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, MSELoss, NLLLoss, SmoothL1Loss,
    CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss, MultiLabelSoftMarginLoss,
    MultiMarginLoss, PairwiseDistance, PoissonNLLLoss, CTCLoss, SoftMarginLoss, TripletMarginLoss,
)
from lazyscope.nn.module import Module, ModuleDict, ModuleList, Sequential  # noqa: F401
from lazyscope.nn.layers_more import (  # noqa: F401
    RMSNorm, LazyLinear, AlphaDropout, Dropout3d, Softmax2d, RReLU, LocalResponseNorm, LPPool1d, LPPool2d,
    ChannelShuffle, CircularPad1d, CircularPad2d)
from lazyscope.nn.parameter import Parameter  # noqa: F401
