"""torch.nn.utils: gradient clipping, parameters as one vector, padded and packed sequences (rnn),
parametrizations (weight_norm, spectral_norm) and their older hook-based forms."""
from lazyscope.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from lazyscope.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from lazyscope.nn.utils import rnn  # noqa: F401,E402
from lazyscope.nn.utils import parametrize, parametrizations  # noqa: F401,E402
from lazyscope.nn.utils.weight_norm import (  # noqa: F401,E402
    remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm)
