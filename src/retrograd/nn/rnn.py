"""Recurrent layers: `RNN` (tanh or relu), `LSTM`, `GRU` and their one-step cells.

PyTorch's parameter names (`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`,
`bias_hh_l0`, `_reverse` for the backward direction), gate order (LSTM: input,
forget, cell, output; GRU: reset, update, new), initialisation U(+-1/sqrt(hidden))
and argument layout: input (L, N, H_in), (N, L, H_in) with `batch_first`, or
unbatched (L, H_in); initial states (num_layers * directions, N, H).

The input projections of a whole sequence are one matrix product per layer and
direction. Each layer direction's recurrence is then one node (`ops.lstm_scan`,
`gru_scan`, `rnn_tanh_scan`, `rnn_relu_scan`: a NumPy loop with a hand-written
backward through time, and a generic unrolled path for higher derivatives). The
cells (`LSTMCell`, ...) apply one step's gates with recorded ops.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import api as _f
from .. import ops
from ..devices import namespace_of
from ..engine import apply
from ..primitive import ArgumentError
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import _dtype
from .module import Module, Parameter
from .utils.rnn import PackedSequence, batch_sizes_of

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _same_dtype(name: str, x: Tensor, w: Tensor) -> None:
    """Refuse an input whose dtype is not the weights' (PyTorch: a ValueError for the
    layers, a RuntimeError for the cells; this is both), rather than promote."""
    if x.dtype != w.dtype:
        raise _RnnDtypeError(f"{name}: input dtype ({x.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({x.dtype})")


def _stored(module, name: str) -> Tensor:
    """The tensor stored for parameter `name`, without running a parametrization on it:
    the dtype checks read this, so that a parametrization (spectral_norm's power
    iteration) runs once per call, where the weight is used, as in PyTorch."""
    v = module.__dict__.get(name)
    if v is not None:
        return v
    plist = module.__dict__.get("_modules", {}).get("parametrizations")
    if plist is not None and name in plist._modules:
        entry = plist._modules[name]
        orig = entry.__dict__.get("original")
        return orig if orig is not None else entry.original0
    return getattr(module, name)


class _RnnDtypeError(ValueError, RuntimeError):
    """An RNN's input of another dtype than its weights."""


def _linear(x, w, b=None):
    return apply(ops.linear, x, w, b)


# ---------------------------------------------------------------- one step of each kind
# `xw` is the input's projection for this step with its bias (and, for RNN and LSTM, the
# hidden bias folded in); `h` the previous hidden state; `w_hh`, `b_hh` the hidden weights.

def _rnn_step(mode, xw, state, w_hh, b_hh):
    pre = xw + _linear(state, w_hh, b_hh)
    return _f.tanh(pre) if mode == "RNN_TANH" else _f.relu(pre)


def _lstm_step(xw, state, w_hh, b_hh):
    h, c = state
    gates = xw + _linear(h, w_hh, b_hh)
    n = gates.shape[-1] // 4  # (h may be projected: its size is then proj_size)
    s = _f.sigmoid(gates)
    i, f, o = s[..., :n], s[..., n:2 * n], s[..., 3 * n:]
    g = _f.tanh(gates[..., 2 * n:3 * n])
    c = f * c + i * g
    return o * _f.tanh(c), c


def _sequence(mode: str, xw, state, w_hh, b_hh, reverse: bool):
    """A whole layer direction's recurrence as one node (`ops.lstm_scan`, `gru_scan`,
    `rnn_tanh_scan`, `rnn_relu_scan`): every step's hidden state (L, N, H) and the final
    state ((h, c) for an LSTM). `xw` holds the input bias, and the hidden one too except
    for a GRU (`b_hh`)."""
    if reverse:
        xw = xw[::-1]
    if mode == "LSTM":
        hc = apply(ops.lstm_scan, xw, state[0], state[1], w_hh)  # (L, 2, N, H): h and c
        last = hc[-1]
        hs, final = hc[:, 0], (last[0], last[1])
    else:
        if mode == "GRU":
            hs = apply(ops.gru_scan, xw, state, w_hh, b_hh)
        else:
            hs = apply(ops.rnn_tanh_scan if mode == "RNN_TANH" else ops.rnn_relu_scan, xw,
                       state, w_hh)
        final = hs[-1]
    return (hs[::-1] if reverse else hs), final


def _gru_step(xw, h, w_hh, b_hh):
    n = h.shape[-1]
    gh = _linear(h, w_hh, b_hh)
    rz = _f.sigmoid(xw[..., :2 * n] + gh[..., :2 * n])
    r, z = rz[..., :n], rz[..., n:]
    new = _f.tanh(xw[..., 2 * n:] + r * gh[..., 2 * n:])
    return new + z * (h - new)


class _ShapeError(ValueError, RuntimeError):
    """An input or state of the wrong shape for a recurrent layer (PyTorch raises
    RuntimeError; a ValueError too)."""


class _HxError(TypeError, IndexError, RuntimeError):
    """An LSTM state that is not an (h, c) pair (RuntimeError in PyTorch, or IndexError for a
    1-tuple or a tensor of one layer, which it indexes; a TypeError too)."""


class _RnnInputDtypeError(TypeError, ValueError, RuntimeError):
    """An RNN's input that is not floating: PyTorch's ValueError (its dtype is not the
    weights'), or RuntimeError for packed data; a TypeError too."""


class _DtypeError(TypeError, RuntimeError):
    """A state whose dtype is not the input's (RuntimeError in PyTorch; a TypeError too)."""


def _check_state(h, want: tuple, what: str, x: Tensor) -> Tensor:
    h = h if isinstance(h, Tensor) else Tensor(h)
    if h.shape != want:
        raise _ShapeError(f"expected {what} of shape {want}, got {h.shape}")
    if h.dtype != x.dtype:
        raise _DtypeError(f"{what} has dtype {h.dtype}, the input {x.dtype}")
    return h


def _lstm_proj_sequence(xw, state, w_hh, w_hr, reverse: bool):
    """An LSTM layer direction with a projection (`proj_size`): h = W_hr (o * tanh(c)),
    unrolled step by step with recorded ops (every step's h (L, N, P), and (h, c))."""
    h, c = state
    steps = range(xw.shape[0] - 1, -1, -1) if reverse else range(xw.shape[0])
    hs = [None] * xw.shape[0]
    for t in steps:
        full, c = _lstm_step(xw[t], (h, c), w_hh, None)
        h = hs[t] = _linear(full, w_hr)
    return _f.stack(hs, 0), (h, c)


def _rows(state, start: int, stop: int):
    """Rows start:stop of a state (a tensor, or LSTM's (h, c))."""
    if isinstance(state, tuple):
        return tuple(s[start:stop] for s in state)
    return state[start:stop]


def _cat_rows(states: list):
    """States stacked along the batch (tensors, or (h, c) pairs)."""
    if len(states) == 1:
        return states[0]
    if isinstance(states[0], tuple):
        return tuple(_f.cat([s[k] for s in states], 0) for k in range(len(states[0])))
    return _f.cat(states, 0)


def _segments(sizes: np.ndarray) -> list[tuple[int, int, int, int]]:
    """The time spans of a packed batch over which the batch size holds:
    (first row in the data, last row + 1, steps, batch size), in time order."""
    out, t, r = [], 0, 0
    while t < sizes.size:
        bs = int(sizes[t])
        t1 = t
        while t1 < sizes.size and sizes[t1] == bs:
            t1 += 1
        out.append((r, r + (t1 - t) * bs, t1 - t, bs))
        r += (t1 - t) * bs
        t = t1
    return out


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters per layer and direction, and the loop.

    `forward` takes a padded batch or a `PackedSequence` (`rg.nn.utils.rnn`); for a
    packed one each sequence runs for its own length (the backward direction starts at
    its last step) and h_n (c_n) is its state there, as in PyTorch.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None) -> None:
        super().__init__()
        name = type(self).__name__
        for arg, v in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(v, bool):  # PyTorch refuses 0/1 and strings too
                raise TypeError(f"{name}: {arg} should be of type bool, got: {type(v).__name__}")
        for arg, v in (("input_size", input_size), ("hidden_size", hidden_size),
                       ("num_layers", num_layers)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise TypeError(f"{name}: {arg} should be of type int, got {v!r}")
            if v <= 0:
                raise ArgumentError(f"{name}: {arg} must be greater than zero, got {v!r}")
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) \
                or not 0.0 <= dropout <= 1.0:
            raise ArgumentError(f"{name}: dropout must be a number in [0, 1] (the probability of "
                                f"an element being zeroed), got {dropout!r}")
        if not isinstance(proj_size, (int, np.integer)) or isinstance(proj_size, bool) \
                or proj_size < 0:
            raise ArgumentError(f"{name}: proj_size should be a positive integer or zero to "
                                f"disable projections, got {proj_size!r}")
        if proj_size >= hidden_size:
            raise ArgumentError(f"{name}: proj_size has to be smaller than hidden_size, got "
                                f"proj_size={proj_size} and hidden_size={hidden_size}")
        if proj_size and mode != "LSTM":
            raise ArgumentError(f"{name}: proj_size argument is only supported for LSTM, not RNN "
                                "or GRU")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = int(proj_size)
        gates = _GATES[mode] * hidden_size
        real = self.proj_size or hidden_size
        dt = _dtype(dtype)
        dirs = 2 if bidirectional else 1
        self._flat_names = []
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else real * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gates, in_size)), ("weight_hh", (gates, real))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if self.proj_size:
                    shapes += [("weight_hr", (self.proj_size, hidden_size))]
                for pname, shape in shapes:
                    setattr(self, pname + sfx, Parameter(np.empty(shape, dtype=dt)))
                    self._flat_names.append(pname + sfx)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        k = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for name in self._flat_names:
            init.uniform_(getattr(self, name), -k, k)

    def flatten_parameters(self) -> None:
        """Nothing to do (PyTorch compacts the weights for cuDNN); kept so ported code runs."""

    @property
    def _flat_weights_names(self) -> list[str]:
        return list(self._flat_names)

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n) for n in self._flat_names]

    @property
    def _all_weights(self) -> list[list[str]]:
        """The parameters' names per layer and direction, as PyTorch's attribute
        (ported code walks it to find the biases, e.g. DeepAR's forget-gate init)."""
        per = (4 if self.bias else 2) + (1 if self.proj_size else 0)
        names = self._flat_names
        return [list(names[i:i + per]) for i in range(0, len(names), per)]

    @property
    def all_weights(self) -> list:
        return [[getattr(self, n) for n in group] for group in self._all_weights]

    def _params(self, layer: int, d: int):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        d_ = self.__dict__

        def g(name: str):
            # the instance dict is the fast path; a parametrized weight (weight_norm,
            # spectral_norm, register_parametrization) is a property of the class
            v = d_.get(name + sfx)
            return v if v is not None else getattr(self, name + sfx)

        w_ih, w_hh = g("weight_ih"), g("weight_hh")
        w_hr = g("weight_hr") if self.proj_size else None
        if self.bias:
            return w_ih, w_hh, g("bias_ih"), g("bias_hh"), w_hr
        return w_ih, w_hh, None, None, w_hr

    def _check_input(self, x) -> tuple[Tensor, bool]:
        name = type(self).__name__
        if not isinstance(x, Tensor):
            x = Tensor(x)
        if x.ndim not in (2, 3):
            raise ArgumentError(f"{name}: expected input to be 2-D (L, H_in) or 3-D "
                                f"({'N, L' if self.batch_first else 'L, N'}, H_in), got shape "
                                f"{x.shape}")
        if x.shape[-1] != self.input_size:
            raise _ShapeError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                              f"{self.input_size}, got {x.shape[-1]} (input shape {x.shape})")
        if x.dtype.kind != "f":
            raise _RnnInputDtypeError(f"{name}: expected a floating input, got {x.dtype}")
        _same_dtype(name, x, _stored(self, "weight_ih_l0"))
        return x, x.ndim == 2

    def _check_packed(self, packed: PackedSequence) -> tuple[Tensor, np.ndarray]:
        name = type(self).__name__
        x = packed.data if isinstance(packed.data, Tensor) else Tensor(packed.data)
        if x.ndim != 2:
            raise _ShapeError(f"{name}: a PackedSequence's data must be 2-D (rows, H_in), got "
                              f"shape {x.shape}")
        if x.shape[-1] != self.input_size:
            raise _ShapeError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                              f"{self.input_size}, got {x.shape[-1]} (packed data shape "
                              f"{x.shape})")
        if x.dtype.kind != "f":
            raise _RnnInputDtypeError(f"{name}: expected a floating input, got {x.dtype}")
        sizes = batch_sizes_of(packed)
        if sizes.ndim != 1 or not sizes.size or np.any(sizes <= 0) \
                or np.any(np.diff(sizes) > 0) or int(sizes.sum()) != x.shape[0]:
            raise _ShapeError(f"{name}: batch_sizes {sizes.tolist()} must be non-increasing "
                              f"positive counts adding up to the data's {x.shape[0]} rows")
        return x, sizes

    def _initial(self, hx, x: Tensor, batch: int, unbatched: bool, what: str = "hx",
                 size: int | None = None):
        dirs = 2 if self.bidirectional else 1
        size = self.hidden_size if size is None else size
        want = (self.num_layers * dirs,) + (() if unbatched else (batch,)) + (size,)
        if hx is None:
            return None
        h = _check_state(hx, want, f"{type(self).__name__}: {what}", x)
        return h if not unbatched else h.unsqueeze(1)

    def _direction(self, xw, state, w_hh, b_step, w_hr, reverse: bool):
        """One layer direction over a padded (L, N, G) projection: (outputs, final state)."""
        if w_hr is not None:
            return _lstm_proj_sequence(xw, state, w_hh, w_hr, reverse)
        return _sequence(self.mode, xw, state, w_hh, b_step, reverse)

    def _packed_direction(self, xw, state, w_hh, b_step, w_hr, reverse: bool, segments):
        """One layer direction over packed rows (T, G): each span of steps with one batch
        size runs as one recurrence; a sequence's final state is taken at its last step
        (forward), and the backward direction starts each sequence at its last step."""
        outs = [None] * len(segments)
        if not reverse:
            done, cur = [], state
            for k, (r0, r1, steps, bs) in enumerate(segments):
                seg = xw[r0:r1].reshape(steps, bs, xw.shape[-1])
                hs, cur = self._direction(seg, _rows(cur, 0, bs), w_hh, b_step, w_hr, False)
                outs[k] = hs.reshape(steps * bs, hs.shape[-1])
                after = segments[k + 1][3] if k + 1 < len(segments) else 0
                if after < bs:
                    done.append(_rows(cur, after, bs))
            return _f.cat(outs, 0), _cat_rows(done[::-1])
        cur, have = None, 0
        for k in range(len(segments) - 1, -1, -1):
            r0, r1, steps, bs = segments[k]
            start = _rows(state, 0, bs) if cur is None else \
                (cur if have == bs else _cat_rows([cur, _rows(state, have, bs)]))
            seg = xw[r0:r1].reshape(steps, bs, xw.shape[-1])
            hs, cur = self._direction(seg, start, w_hh, b_step, w_hr, True)
            have = bs
            outs[k] = hs.reshape(steps * bs, hs.shape[-1])
        return _f.cat(outs, 0), cur

    def _run(self, x: Tensor, states: list, segments=None):
        """x (L, N, H_in), or packed rows (T, H_in) with their `segments`; states: per
        layer and direction, the initial state. Returns the output (L, N, dirs * H_out)
        (or (T, dirs * H_out)) and the final state per layer and direction."""
        dirs = 2 if self.bidirectional else 1
        finals = []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._params(layer, d)
                state = states[layer * dirs + d]
                if self.mode != "GRU" and b_ih is not None:
                    xw = _linear(layer_in, w_ih, b_ih + b_hh)
                    b_step = None
                else:
                    xw = _linear(layer_in, w_ih, b_ih)
                    b_step = b_hh
                if segments is not None:
                    out, state = self._packed_direction(xw, state, w_hh, b_step, w_hr, bool(d),
                                                        segments)
                elif xw.shape[0]:
                    out, state = self._direction(xw, state, w_hh, b_step, w_hr, bool(d))
                else:
                    out = xw[..., :self.proj_size or self.hidden_size]
                outs.append(out)
                finals.append(state)
            layer_in = outs[0] if dirs == 1 else _f.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        return layer_in, finals

    def _zeros(self, x: Tensor, n: int, size: int | None = None) -> Tensor:
        size = self.hidden_size if size is None else size
        return Tensor._wrap(namespace_of(x.data).zeros((n, size), dtype=x.dtype))

    def _forward(self, x, hx, cx=None):
        packed = x if isinstance(x, PackedSequence) else None
        segments = None
        if packed is not None:
            x, sizes = self._check_packed(packed)
            n, unbatched = int(sizes[0]), False
            segments = _segments(sizes)
        else:
            x, unbatched = self._check_input(x)
            if unbatched:
                x = x.unsqueeze(1)
            elif self.batch_first:
                x = x.transpose(0, 1)
            n = x.shape[1]
        dirs = 2 if self.bidirectional else 1
        real = self.proj_size or self.hidden_size
        lstm = self.mode == "LSTM"
        h0 = self._initial(hx, x, n, unbatched, "h_0" if lstm else "hx", real)
        c0 = self._initial(cx, x, n, unbatched, "c_0") if lstm else None
        if packed is not None and packed.sorted_indices is not None:
            order = packed.sorted_indices
            h0 = None if h0 is None else _f.index_select(h0, 1, order)
            c0 = None if c0 is None else _f.index_select(c0, 1, order)
        count = self.num_layers * dirs
        hs = [self._zeros(x, n, real) if h0 is None else h0[k] for k in range(count)]
        if lstm:
            cs = [self._zeros(x, n) if c0 is None else c0[k] for k in range(count)]
            states = list(zip(hs, cs))
        else:
            states = hs
        out, finals = self._run(x, states, segments)
        if lstm:
            h_n = _f.stack([s[0] for s in finals], 0)
            c_n = _f.stack([s[1] for s in finals], 0)
        else:
            h_n, c_n = _f.stack(finals, 0), None
        if packed is not None:
            out = PackedSequence(out, packed.batch_sizes, packed.sorted_indices,
                                 packed.unsorted_indices)
            if packed.unsorted_indices is not None:
                h_n = _f.index_select(h_n, 1, packed.unsorted_indices)
                c_n = None if c_n is None else _f.index_select(c_n, 1, packed.unsorted_indices)
        elif unbatched:
            out = out.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, h_n, c_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu). Returns
    (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ArgumentError(f"RNN: nonlinearity must be 'tanh' or 'relu', got "
                                f"{nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, dtype=dtype)

    def forward(self, input, hx=None):
        out, h_n, _ = self._forward(input, hx)
        return out, h_n


class LSTM(RNNBase):
    """Long short-term memory. Returns (output, (h_n, c_n)); `hx` is (h_0, c_0) or None.

    With `proj_size` P > 0 each step's h is projected, h = W_hr (o * tanh(c)) (parameters
    `weight_hr_l{k}` (P, hidden_size)): h and the output have size P, c keeps hidden_size.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, dtype=dtype)

    def forward(self, input, hx=None):
        h0 = c0 = None
        if hx is not None:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise _HxError("LSTM: hx must be a tuple (h_0, c_0)")
            h0, c0 = hx
        out, h_n, c_n = self._forward(input, h0, c0)
        return out, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit. Returns (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, dtype=dtype)

    def forward(self, input, hx=None):
        out, h_n, _ = self._forward(input, hx)
        return out, h_n


# ---------------------------------------------------------------- cells

class RNNCellBase(Module):
    """What the one-step cells share: `weight_ih` (num_chunks * hidden_size, input_size),
    `weight_hh` (num_chunks * hidden_size, hidden_size), `bias_ih`, `bias_hh`, all
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch's `RNNCellBase`."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = num_chunks * hidden_size
        dt = _dtype(dtype)
        self.weight_ih = Parameter(np.empty((gates, input_size), dtype=dt))
        self.weight_hh = Parameter(np.empty((gates, hidden_size), dtype=dt))
        if bias:
            self.bias_ih = Parameter(np.empty(gates, dtype=dt))
            self.bias_hh = Parameter(np.empty(gates, dtype=dt))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        k = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            init.uniform_(p, -k, k)

    def _input(self, x) -> tuple[Tensor, bool]:
        name = type(self).__name__
        x = x if isinstance(x, Tensor) else Tensor(x)
        if x.ndim not in (1, 2):
            raise ArgumentError(f"{name}: expected input of shape (N, {self.input_size}) or "
                                f"({self.input_size},), got {x.shape}")
        if x.shape[-1] != self.input_size:
            raise _ShapeError(f"{name}: expected input of shape (N, {self.input_size}) or "
                              f"({self.input_size},), got {x.shape}")
        _same_dtype(name, x, _stored(self, "weight_ih"))
        return (x.unsqueeze(0), True) if x.ndim == 1 else (x, False)

    def _state(self, h, x: Tensor, unbatched: bool, what: str) -> Tensor:
        if h is None:
            return Tensor._wrap(namespace_of(x.data).zeros((x.shape[0], self.hidden_size),
                                                           dtype=x.dtype))
        want = ((self.hidden_size,) if unbatched else (x.shape[0], self.hidden_size))
        h = _check_state(h, want, f"{type(self).__name__}: {what}", x)
        return h.unsqueeze(0) if unbatched else h

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ArgumentError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                                f"{nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, dtype=dtype)

    def forward(self, input, hx=None):
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched, "hx")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        out = _rnn_step(mode, _linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                        self.bias_hh)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else f"{s}, nonlinearity={self.nonlinearity}"


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, dtype=dtype)

    def forward(self, input, hx=None):
        x, unbatched = self._input(input)
        if hx is None:
            h = c = self._state(None, x, unbatched, "h")
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise _HxError("LSTMCell: hx must be a tuple (h, c)")
            h = self._state(hx[0], x, unbatched, "h")
            c = self._state(hx[1], x, unbatched, "c")
        h, c = _lstm_step(_linear(x, self.weight_ih, self.bias_ih), (h, c), self.weight_hh,
                          self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, dtype=dtype)

    def forward(self, input, hx=None):
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched, "hx")
        out = _gru_step(_linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                        self.bias_hh)
        return out.squeeze(0) if unbatched else out
