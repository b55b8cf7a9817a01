"""torch.nn.utils: gradient clipping, parameters as one vector, padded sequences (rnn)."""
from lazyscope.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from lazyscope.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from lazyscope.nn.utils import rnn  # noqa: F401,E402
