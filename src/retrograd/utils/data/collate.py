"""Turning a list of samples into a batch, as `torch.utils.data` does: `default_collate`
(what a `DataLoader` with a batch size uses) and `default_convert` (with
`batch_size=None`: NumPy arrays become tensors, nothing is stacked)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...api.shape import stack
from ...creation import share_tensor, tensor
from ...primitive import ShapeError
from ...tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_UNSUPPORTED = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                "or lists; found {}")


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _numpy_value(x) -> bool:
    """A NumPy array or scalar that is not a string."""
    return type(x).__module__ == "numpy" and not isinstance(x, (np.str_, np.bytes_))


def _rebuild(elem, items: list):
    """`items` in a container of `elem`'s type (a list when that type cannot be built)."""
    try:
        return type(elem)(items)
    except TypeError:
        return items


def default_collate(batch):
    """Stack a list of samples into a batch: tensors are stacked (along a new first
    dimension), NumPy arrays and numbers become tensors (Python ints int64, floats
    float64, bools bool, as in PyTorch), strings stay a list, and dicts, namedtuples,
    tuples and lists are collated field by field (a tuple sample gives a list)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        shapes = [t.shape for t in batch]
        for k, s in enumerate(shapes):
            if s != shapes[0]:
                raise ShapeError(f"stack expects each tensor to be equal size, but got "
                                 f"{list(shapes[0])} at entry 0 and {list(s)} at entry {k}")
        return stack(batch, 0)
    if _numpy_value(elem):
        if isinstance(elem, np.ndarray) and elem.ndim > 0:
            if elem.dtype.char in "SaUO":
                raise TypeError(_UNSUPPORTED.format(elem.dtype))
            return default_collate([share_tensor(b) for b in batch])  # as torch.as_tensor
        return Tensor(np.array(batch))  # NumPy scalars keep their dtype
    if isinstance(elem, float):
        return tensor(batch, dtype=np.float64)
    if isinstance(elem, int):  # bools too: a batch of bools is a bool tensor
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        fields = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        n = len(elem)
        if any(len(e) != n for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [default_collate(s) for s in zip(*batch)]
        return columns if isinstance(elem, tuple) else _rebuild(elem, columns)
    raise TypeError(_UNSUPPORTED.format(type(elem)))


def default_convert(data):
    """NumPy arrays and scalars (not strings) in `data` become tensors, through dicts,
    namedtuples, tuples (which become lists) and lists; everything else is kept."""
    if isinstance(data, Tensor):
        return data
    if _numpy_value(data):
        if isinstance(data, np.ndarray) and data.dtype.char in "SaUO":
            return data
        return Tensor(np.asarray(data))
    if isinstance(data, Mapping):
        fields = {key: default_convert(v) for key, v in data.items()}
        try:
            return type(data)(fields)
        except TypeError:
            return fields
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data])
    return data
