"""torch.utils.tensorboard.SummaryWriter, writing into LazyScope's history.

A script that logs to TensorBoard runs unchanged: add_scalar, add_scalars
and add_histogram become ``lazyscope.log`` scalars, recorded with the step
that computed them (a lazy value is not read at the call: no sync; it is
published after the next ``mark_step``) and shown by ``lazyscope show`` and
the GUI beside the run's graphs and kernels. No TensorBoard event files are
written (TensorBoard is not a dependency of LazyScope).

What is not a scalar (images, audio, text, figures, graphs, embeddings,
meshes, PR curves, videos) is accepted and not recorded: a warning says so
once per kind, so a script's logging never stops its training.
"""
import warnings

import lazyscope

__all__ = ["SummaryWriter"]

_NOT_RECORDED = ("add_image", "add_images", "add_image_with_boxes", "add_figure", "add_video", "add_audio",
                 "add_text", "add_graph", "add_embedding", "add_pr_curve", "add_pr_curve_raw", "add_mesh",
                 "add_custom_scalars", "add_onnx_graph")


class SummaryWriter:
    """Records scalars into LazyScope's history (see the module's doc).
    global_step and walltime are accepted: the history numbers steps itself
    (the engine's step that computed the value)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        self.log_dir = log_dir if log_dir is not None else "runs" + (comment and "_" + comment)
        self._warned = set()
        self._closed = False

    def get_logdir(self):
        return self.log_dir

    def _check_open(self, what):
        if self._closed:
            raise RuntimeError(f"SummaryWriter.{what}: the writer was closed")

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._check_open("add_scalar")
        lazyscope.log(str(tag), scalar_value)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each value as the scalar ``main_tag/tag``."""
        self._check_open("add_scalars")
        for tag, value in tag_scalar_dict.items():
            lazyscope.log(f"{main_tag}/{tag}", value)

    def add_histogram(self, tag, values, global_step=None, bins="tensorboard", walltime=None, max_bins=None):
        """The values' summary as the scalars ``tag/min``, ``tag/mean``,
        ``tag/max`` and ``tag/std`` (a tensor's stay lazy: no sync)."""
        self._check_open("add_histogram")
        t = values if isinstance(values, lazyscope.Tensor) else lazyscope.tensor(values)
        t = t.detach().float().reshape(-1)
        lazyscope.log(f"{tag}/min", t.amin())
        lazyscope.log(f"{tag}/mean", t.mean())
        lazyscope.log(f"{tag}/max", t.amax())
        lazyscope.log(f"{tag}/std", t.std() if t.numel() > 1 else t.sum() * 0)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """The metrics as scalars, and the numeric hyper-parameters as ``hparam/<name>`` scalars."""
        self._check_open("add_hparams")
        for name, value in hparam_dict.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                lazyscope.log(f"hparam/{name}", value)
        for name, value in metric_dict.items():
            lazyscope.log(str(name), value)

    def flush(self):
        """Scalars are published by the steps that compute them: nothing is buffered here."""

    def close(self):
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _not_recorded(kind):
    def method(self, *args, **kwargs):
        self._check_open(kind)
        if kind not in self._warned:
            self._warned.add(kind)
            warnings.warn(f"SummaryWriter.{kind}: not recorded (LazyScope's history keeps scalars: add_scalar, "
                          f"add_scalars, add_histogram, add_hparams); training goes on", stacklevel=2)
    method.__name__ = kind
    method.__doc__ = f"Accepted and not recorded (a warning, once): {kind} is not a scalar."
    return method


for _kind in _NOT_RECORDED:
    setattr(SummaryWriter, _kind, _not_recorded(_kind))
