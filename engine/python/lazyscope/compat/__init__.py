"""Aliases with the seeds' module names, so their snippets run with only the
import lines changed:

    import lazyscope as torch
    from lazyscope import nn, optim
    import lazyscope.compat.torch_xla as torch_xla
    import lazyscope.compat.torch_xla.core.xla_model as xm
    import lazyscope.compat.torch_xla.distributed.parallel_loader as pl
    import lazyscope.compat.torch_xla.distributed.data_parallel as dp
    import lazyscope.compat.torch_xla.distributed.xla_multiprocessing as xmp
    import lazyscope.compat.torch_xla.utils.utils as xu
    import lazyscope.compat.torch_xla.debug.metrics as met
    import lazyscope.compat.torch_xla_py.xla_model as xm      # the early API guide's names
    import lazyscope.compat.torch_xla_py.data_parallel as dp

Each module re-exports LazyScope's implementation; nothing here has its own
behaviour.
"""
