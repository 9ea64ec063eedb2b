"""`rg.nn.utils.rnn`: variable-length sequences, as `torch.nn.utils.rnn`.

A `PackedSequence` holds a batch of sequences of different lengths without padding:
`data` stacks, time step by time step, the rows of the sequences still running at
that step (longest first), and `batch_sizes[t]` says how many there are. `RNN`,
`LSTM` and `GRU` take one and give one back, each sequence run for its own length.

`pack_padded_sequence`, `pad_packed_sequence`, `pad_sequence`, `unpad_sequence`,
`pack_sequence` and `unpack_sequence` move between that layout, a padded tensor and
a list of tensors. They are gathers, slices and concatenations of recorded ops, so
gradients flow through every one of them.

The lengths and batch sizes are read in Python (they decide shapes): inside `rg.jit`
give them as a list (each new value retraces), not as a traced tensor. With
`enforce_sorted=False`, equal lengths keep their order (a stable sort); PyTorch's
sort does the same for up to 16 sequences, and may order ties differently above.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ... import api as _f
from ... import creation
from ..._values import values_of
from ...primitive import ArgumentError
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


def _t(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


class _Fields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_Fields):
    """A batch of variable-length sequences packed time step by time step.

    Fields (a named tuple, as in PyTorch): `data` (sum of lengths, *), `batch_sizes`
    (int64, one per time step), `sorted_indices` (the batch order used for packing, or
    None when the batch was already sorted longest first) and `unsorted_indices` (its
    inverse). Make one with `pack_padded_sequence` or `pack_sequence`.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("PackedSequence: without batch_sizes, data must be a "
                                     "(data, batch_sizes) pair")
            data, batch_sizes = data
        batch_sizes = _t(batch_sizes)
        if batch_sizes.data.__class__ is not np.ndarray:
            raise ArgumentError("PackedSequence: batch_sizes must be on the CPU; make a "
                                "PackedSequence with pack_padded_sequence or pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same sequences with `data` moved or cast as `Tensor.to` does (indices follow
        the device); self when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t):
            return None if t is None else t.to(data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cpu(self) -> PackedSequence:
        """The sequences on the host."""
        return self.to("cpu")

    def cuda(self, device=None) -> PackedSequence:
        """The sequences on a CUDA device."""
        data = self.data.cuda(device)
        return self if data is self.data else self.to(data.device)

    def double(self) -> PackedSequence:
        """`data` as float64."""
        return self.to(np.float64)

    def float(self) -> PackedSequence:
        """`data` as float32."""
        return self.to(np.float32)

    def half(self) -> PackedSequence:
        """`data` as float16."""
        return self.to(np.float16)

    def long(self) -> PackedSequence:
        """`data` as int64."""
        return self.to(np.int64)

    def int(self) -> PackedSequence:
        """`data` as int32."""
        return self.to(np.int32)

    def short(self) -> PackedSequence:
        """`data` as int16."""
        return self.to(np.int16)

    def char(self) -> PackedSequence:
        """`data` as int8."""
        return self.to(np.int8)

    def byte(self) -> PackedSequence:
        """`data` as uint8."""
        return self.to(np.uint8)

    @property
    def is_cuda(self) -> bool:
        """Whether `data` is on a CUDA device."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        """Host memory here is never pinned."""
        return False


def invert_permutation(permutation) -> Tensor | None:
    """The inverse of a permutation of 0..n-1 (None stays None)."""
    if permutation is None:
        return None
    p = _t(permutation)
    arr = _int_array(p, "permutation", "invert_permutation", host_only=False)
    out = np.empty_like(arr)
    out[arr] = np.arange(arr.size, dtype=arr.dtype)
    return Tensor(out) if p.data.__class__ is np.ndarray else Tensor(out).to(p.device)


# ---------------------------------------------------------------- layout helpers

def _int_array(x, what: str, fn: str, host_only: bool = True,
               instead: str | None = None) -> np.ndarray:
    """A host int64 array of `x` (a list, an array or a CPU tensor; a device tensor too
    unless `host_only`), read in Python."""
    if isinstance(x, Tensor):
        if x.data.__class__ is not np.ndarray:
            if host_only:
                raise RuntimeError(f"{fn}: '{what}' should be a 1D CPU int64 tensor, but it "
                                   f"is on {x.device}")
            x = x.cpu()
        arr = values_of(x, f"{fn} with '{what}' as a tensor",
                        instead or f"pass '{what}' as a list (each new value retraces)")
    else:
        arr = np.asarray(x)
    if arr.dtype.kind not in "iufb" and arr.size:
        raise TypeError(f"{fn}: '{what}' must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def batch_sizes_of(packed: PackedSequence) -> np.ndarray:
    """A packed sequence's batch sizes as a host int64 array (read in Python)."""
    return _int_array(packed.batch_sizes, "batch_sizes", "PackedSequence", instead=(
        "its batch sizes decide the shapes: unpack it, run the recurrent layer or "
        "pad_packed_sequence outside rg.jit, or give the jitted function a padded batch"))


def lengths_of(sizes: np.ndarray) -> np.ndarray:
    """Each (sorted) sequence's length from the batch sizes: how many steps it runs."""
    n = int(sizes[0]) if sizes.size else 0
    return (sizes[None, :] > np.arange(n)[:, None]).sum(1).astype(np.int64)


def _rows(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(time, batch) indices of the packed rows, in packed order."""
    t = np.repeat(np.arange(sizes.size), sizes)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    return t, np.arange(t.size) - starts


def _check_sizes(sizes: np.ndarray, rows: int) -> None:
    if sizes.ndim != 1 or (sizes.size and (np.any(sizes <= 0) or np.any(np.diff(sizes) > 0))):
        raise ArgumentError(f"PackedSequence: batch_sizes must be a non-increasing 1-D list of "
                            f"positive counts, got {sizes.tolist()}")
    if int(sizes.sum()) != rows:
        raise ArgumentError(f"PackedSequence: batch_sizes {sizes.tolist()} add up to "
                            f"{int(sizes.sum())}, but data has {rows} rows")


# ---------------------------------------------------------------- packing

def pack_padded_sequence(input, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) ((B, T, *) with `batch_first`) of sequences whose
    lengths are `lengths`. With `enforce_sorted` the lengths must be non-increasing;
    otherwise the batch is sorted here and the order kept in `sorted_indices`."""
    fn = "pack_padded_sequence"
    x = _t(input)
    lens = _int_array(lengths, "lengths", fn)
    if lens.ndim != 1:
        raise RuntimeError(f"{fn}: 'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lens.ndim}D (shape {lens.shape})")
    if x.ndim < 2 - int(batch_first) or x.ndim < 1:
        raise IndexError(f"{fn}: input of shape {x.shape} has no batch dimension "
                         f"({'0' if batch_first else '1'})")
    bdim = 0 if batch_first else 1
    batch = x.shape[bdim]
    if lens.size != batch:
        raise RuntimeError(f"{fn}: expected len(lengths) to be equal to batch_size, but got "
                           f"{lens.size} (batch_size={batch}, input shape {x.shape})")
    if batch == 0:
        raise RuntimeError(f"{fn}: cannot pack empty tensors (input shape {x.shape})")
    sorted_indices = None
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError(f"{fn}: `lengths` array must be sorted in decreasing order when "
                               f"`enforce_sorted` is True, got {lens.tolist()}. You can pass "
                               "`enforce_sorted=False` to pack_padded_sequence and/or "
                               "pack_sequence to sidestep this requirement")
    else:
        order = np.argsort(-lens, kind="stable").astype(np.int64)
        lens = lens[order]
        sorted_indices = Tensor(order)
        if x.data.__class__ is not np.ndarray:
            sorted_indices = sorted_indices.to(x.device)
        x = _f.index_select(x, bdim, sorted_indices)
    if np.any(lens <= 0):
        raise RuntimeError(f"{fn}: length of all samples has to be greater than 0, but found "
                           f"an element in 'lengths' that is <= 0: {lens.tolist()}")
    steps = x.shape[1 - bdim]
    if lens[0] > steps:
        raise RuntimeError(f"{fn}: lengths {lens.tolist()} run past the input's "
                           f"{steps} time steps (input shape {x.shape})")
    sizes = (lens[None, :] > np.arange(int(lens[0]))[:, None]).sum(1).astype(np.int64)
    t, b = _rows(sizes)
    data = x[b, t] if batch_first else x[t, b]
    return PackedSequence(data, Tensor(sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo `pack_padded_sequence`: (padded (T, B, *) or (B, T, *), lengths int64), in the
    batch's original order; T is the longest length, or `total_length`."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence: expected a PackedSequence, got "
                        f"{type(sequence).__name__}")
    data = sequence.data
    sizes = batch_sizes_of(sequence)
    _check_sizes(sizes, data.shape[0] if data.ndim else -1)
    steps = sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ArgumentError(f"Expected total_length to be at least the length of the longest "
                                f"sequence in input, but got total_length={total_length} and max "
                                f"sequence length being {steps}")
        steps = int(total_length)
    batch = int(sizes[0]) if sizes.size else 0
    lens = lengths_of(sizes)
    # each padded slot's row of `data`, or the padding row appended after the data
    where = np.full((steps, batch), data.shape[0], dtype=np.int64)
    t, b = _rows(sizes)
    where[t, b] = np.arange(t.size)
    pad = creation.full((1,) + data.shape[1:], padding_value, dtype=data.dtype,
                        device=data.device)
    padded = _f.cat([data, pad], 0)[where.T if batch_first else where]
    lengths = Tensor(lens)
    if sequence.unsorted_indices is not None:
        order = _int_array(sequence.unsorted_indices, "unsorted_indices", "pad_packed_sequence",
                           host_only=False)
        padded = padded[order] if batch_first else padded[:, order]
        lengths = Tensor(lens[order])
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shapes (L_i, *) into (L_max, B, *) ((B, L_max, *) with
    `batch_first`), padding each on the right (or `padding_side='left'`) with
    `padding_value`; the result has the first tensor's dtype."""
    fn = "pad_sequence"
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"{fn}: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences).__name__}")
    seqs = [_t(s) for s in sequences]
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"{fn}: Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if not seqs:
        raise RuntimeError(f"{fn}: received an empty list of sequences")
    if any(s.ndim == 0 for s in seqs):
        raise RuntimeError(f"{fn}: every sequence needs a length (dimension 0); got shapes "
                           f"{[s.shape for s in seqs]}")
    tail = seqs[0].shape[1:]
    if any(s.shape[1:] != tail for s in seqs):
        raise RuntimeError(f"{fn}: the sequences' trailing dimensions must match; got shapes "
                           f"{[s.shape for s in seqs]}")
    dtype = seqs[0].dtype
    longest = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        s = s if s.dtype == dtype else s.to(dtype)
        gap = longest - s.shape[0]
        if gap:
            fill = creation.full((gap,) + tail, padding_value, dtype=dtype, device=s.device)
            s = _f.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        rows.append(s)
    return _f.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch (T, B, *) ((B, T, *) with `batch_first`) into the list of its
    B sequences, sequence i keeping its first `lengths[i]` steps.

    (PyTorch transposes the caller's tensor in place when `batch_first` is False; this
    leaves it as it is.)"""
    x = _t(padded_sequences)
    lens = _int_array(lengths, "lengths", "unpad_sequence").reshape(-1)
    if not batch_first:
        x = x.transpose(0, 1)
    if lens.size != x.shape[0]:
        raise ArgumentError(f"unpad_sequence: {lens.size} lengths for a batch of {x.shape[0]} "
                            f"sequences (padded shape {_t(padded_sequences).shape})")
    return [x[i, :max(int(n), 0)] for i, n in enumerate(lens)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *) (longest first, unless `enforce_sorted=False`)."""
    seqs = [_t(s) for s in sequences]
    lengths = [s.shape[0] if s.ndim else 0 for s in seqs]
    return pack_padded_sequence(pad_sequence(seqs), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of tensors a `PackedSequence` holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
