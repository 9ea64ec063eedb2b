"""`rg.utils.tensorboard.SummaryWriter`: TensorBoard logging, as `torch.utils.tensorboard`.

The event files are written by tensorboardX (`pip install retrograd[tensorboard]`), a
pure-Python writer of TensorBoard's format; without it, importing this module raises
ImportError, as importing PyTorch's does without TensorBoard. Tensors passed to any
`add_*` method (also inside lists, tuples and dicts) are handed over as NumPy arrays.
`add_graph` is refused: it traces a PyTorch model.
"""

from __future__ import annotations

import time
from typing import Any

from ..tensor import Tensor

try:
    import tensorboardX as _tbx
except ImportError as e:
    raise ImportError("rg.utils.tensorboard needs tensorboardX "
                      "(pip install retrograd[tensorboard])") from e

__all__ = ["SummaryWriter"]


def _plain(v: Any) -> Any:
    if isinstance(v, Tensor):
        return v.detach().numpy()
    if isinstance(v, (list, tuple)):
        return type(v)(_plain(x) for x in v)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _passing_arrays(name: str, dropped: tuple = ()):
    """`SummaryWriter.name` with retrograd Tensors in its arguments as NumPy arrays (and
    PyTorch-only keywords that pick an on-disk encoding dropped)."""
    method = getattr(_tbx.SummaryWriter, name)

    def call(self, *args, **kwargs):
        for k in dropped:
            kwargs.pop(k, None)
        return method(self, *_plain(args), **_plain(kwargs))

    call.__name__ = call.__qualname__ = name
    call.__doc__ = method.__doc__
    return call


class SummaryWriter(_tbx.SummaryWriter):
    """Writes TensorBoard event files under `log_dir` (default runs/DATE_HOST[comment]):
    `add_scalar(tag, value, global_step)`, `add_scalars`, `add_histogram`, `add_image`,
    `add_text`, `add_hparams`, ..., `flush()`, `close()`; a context manager."""

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step=None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        super().__init__(logdir=log_dir, comment=comment, purge_step=purge_step,
                         max_queue=max_queue, flush_secs=flush_secs,
                         filename_suffix=filename_suffix)
        self.log_dir = self.logdir

    def get_logdir(self) -> str:
        """The directory the event files go to."""
        return self.logdir

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Refused: PyTorch's traces a torch model (for retrograd's, `retrograd graph`)."""
        raise NotImplementedError("SummaryWriter.add_graph traces a PyTorch model; draw a "
                                  "retrograd model's graph with rg.viz or `retrograd graph`")

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime=None) -> None:
        """Several scalars in one chart: one run per key, in PyTorch's directories
        (log_dir/main_tag_key, '/' in main_tag as '_')."""
        from tensorboardX.summary import scalar
        from tensorboardX.writer import FileWriter

        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = root + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(path)
            if fw is None:
                fw = self.all_writers[path] = FileWriter(
                    logdir=path, max_queue=self._max_queue, flush_secs=self._flush_secs,
                    filename_suffix=self._filename_suffix)
            fw.add_summary(scalar(main_tag, _plain(value)), global_step, walltime)

    add_scalar = _passing_arrays("add_scalar", ("new_style", "double_precision"))
    add_histogram = _passing_arrays("add_histogram")
    add_histogram_raw = _passing_arrays("add_histogram_raw")
    add_image = _passing_arrays("add_image")
    add_images = _passing_arrays("add_images")
    add_image_with_boxes = _passing_arrays("add_image_with_boxes")
    add_figure = _passing_arrays("add_figure")
    add_video = _passing_arrays("add_video")
    add_audio = _passing_arrays("add_audio")
    add_text = _passing_arrays("add_text")
    add_embedding = _passing_arrays("add_embedding")
    add_pr_curve = _passing_arrays("add_pr_curve")
    add_pr_curve_raw = _passing_arrays("add_pr_curve_raw")
    add_custom_scalars = _passing_arrays("add_custom_scalars")
    add_mesh = _passing_arrays("add_mesh")
    add_hparams = _passing_arrays("add_hparams")
