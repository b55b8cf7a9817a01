"""lazyscope.optim: torch.optim's optimizers and schedulers."""
from lazyscope.optim import lr_scheduler  # noqa: F401
from lazyscope.optim.adagrad import Adagrad  # noqa: F401
from lazyscope.optim.adam import Adam, AdamW  # noqa: F401
from lazyscope.optim.adaptive_rules import Adadelta, Adamax, NAdam, RAdam  # noqa: F401
from lazyscope.optim.lbfgs import LBFGS  # noqa: F401
from lazyscope.optim.optimizer import Optimizer  # noqa: F401
from lazyscope.optim.rmsprop import RMSprop  # noqa: F401
from lazyscope.optim.sgd import SGD  # noqa: F401
