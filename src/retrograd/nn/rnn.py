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

import numpy as np

from .. import api as _f
from .. import ops
from ..devices import namespace_of
from ..engine import apply
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import _dtype
from .module import Module, Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


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
    n = h.shape[-1]
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


def _check_state(h, want: tuple, what: str, x: Tensor) -> Tensor:
    h = h if isinstance(h, Tensor) else Tensor(h)
    if h.shape != want:
        raise ValueError(f"expected {what} of shape {want}, got {h.shape}")
    if h.dtype != x.dtype:
        raise TypeError(f"{what} has dtype {h.dtype}, the input {x.dtype}")
    return h


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters per layer and direction, and the loop."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, dtype=None) -> None:
        super().__init__()
        name = type(self).__name__
        for arg, v in (("input_size", input_size), ("hidden_size", hidden_size),
                       ("num_layers", num_layers)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"{name}: {arg} must be a positive int, got {v!r}")
        if not 0.0 <= dropout <= 1.0 or isinstance(dropout, bool):
            raise ValueError(f"{name}: dropout must be a number in [0, 1], got {dropout!r}")
        if proj_size:
            raise NotImplementedError(f"{name}: proj_size is not supported")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = 0
        gates = _GATES[mode] * hidden_size
        dt = _dtype(dtype)
        dirs = 2 if bidirectional else 1
        self._flat_names = []
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gates, in_size)), ("weight_hh", (gates, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                for pname, shape in shapes:
                    setattr(self, pname + sfx, Parameter(np.empty(shape, dtype=dt)))
                    self._flat_names.append(pname + sfx)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        k = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for name in self._flat_names:
            init.uniform_(getattr(self, name), -k, k)

    @property
    def all_weights(self) -> list:
        per = 4 if self.bias else 2
        names = self._flat_names
        return [[getattr(self, n) for n in names[i:i + per]] for i in range(0, len(names), per)]

    def _params(self, layer: int, d: int):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        g = self.__dict__
        w_ih, w_hh = g["weight_ih" + sfx], g["weight_hh" + sfx]
        if self.bias:
            return w_ih, w_hh, g["bias_ih" + sfx], g["bias_hh" + sfx]
        return w_ih, w_hh, None, None

    def _check_input(self, x) -> tuple[Tensor, bool]:
        name = type(self).__name__
        if not isinstance(x, Tensor):
            x = Tensor(x)
        if x.ndim not in (2, 3):
            raise ValueError(f"{name}: expected input to be 2-D (L, H_in) or 3-D "
                             f"({'N, L' if self.batch_first else 'L, N'}, H_in), got shape "
                             f"{x.shape}")
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {x.shape[-1]} (input shape {x.shape})")
        if x.dtype.kind != "f":
            raise TypeError(f"{name}: expected a floating input, got {x.dtype}")
        return x, x.ndim == 2

    def _initial(self, hx, x: Tensor, batch: int, unbatched: bool, what: str = "hx"):
        dirs = 2 if self.bidirectional else 1
        want = (self.num_layers * dirs,) + (() if unbatched else (batch,)) + (self.hidden_size,)
        if hx is None:
            return None
        h = _check_state(hx, want, f"{type(self).__name__}: {what}", x)
        return h if not unbatched else h.unsqueeze(1)

    def _run(self, x: Tensor, states: list):
        """x (L, N, H_in); states: per layer and direction, the initial state (or None).
        Returns the output (L, N, dirs * H) and the final state per layer and direction."""
        dirs = 2 if self.bidirectional else 1
        L = x.shape[0]
        finals = []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = self._params(layer, d)
                state = states[layer * dirs + d]
                if self.mode != "GRU" and b_ih is not None:
                    xw = _linear(layer_in, w_ih, b_ih + b_hh)
                    b_step = None
                else:
                    xw = _linear(layer_in, w_ih, b_ih)
                    b_step = b_hh
                if L:
                    out, state = _sequence(self.mode, xw, state, w_hh, b_step, bool(d))
                else:
                    out = xw[..., :0]
                outs.append(out)
                finals.append(state)
            layer_in = outs[0] if dirs == 1 else _f.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        return layer_in, finals

    def _zeros(self, x: Tensor, n: int) -> Tensor:
        return Tensor._wrap(namespace_of(x.data).zeros((n, self.hidden_size), dtype=x.dtype))

    def _forward(self, x, hx, cx=None):
        x, unbatched = self._check_input(x)
        if unbatched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        n = x.shape[1]
        dirs = 2 if self.bidirectional else 1
        h0 = self._initial(hx, x, n, unbatched, "h_0" if cx is not None or
                           self.mode == "LSTM" else "hx")
        c0 = self._initial(cx, x, n, unbatched, "c_0") if self.mode == "LSTM" else None
        count = self.num_layers * dirs
        hs = [self._zeros(x, n) if h0 is None else h0[k] for k in range(count)]
        if self.mode == "LSTM":
            cs = [self._zeros(x, n) if c0 is None else c0[k] for k in range(count)]
            states = list(zip(hs, cs))
        else:
            states = hs
        out, finals = self._run(x, states)
        if self.mode == "LSTM":
            h_n = _f.stack([s[0] for s in finals], 0)
            c_n = _f.stack([s[1] for s in finals], 0)
        else:
            h_n, c_n = _f.stack(finals, 0), None
        if unbatched:
            out = out.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = None if c_n is None else c_n.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, h_n, c_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
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
                 dropout: float = 0.0, bidirectional: bool = False, dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         dtype=dtype)

    def forward(self, input, hx=None):
        out, h_n, _ = self._forward(input, hx)
        return out, h_n


class LSTM(RNNBase):
    """Long short-term memory. Returns (output, (h_n, c_n)); `hx` is (h_0, c_0) or None."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, dtype=dtype)

    def forward(self, input, hx=None):
        h0 = c0 = None
        if hx is not None:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0)")
            h0, c0 = hx
        out, h_n, c_n = self._forward(input, h0, c0)
        return out, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit. Returns (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype=None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, dtype=dtype)

    def forward(self, input, hx=None):
        out, h_n, _ = self._forward(input, hx)
        return out, h_n


# ---------------------------------------------------------------- cells

class _CellBase(Module):
    _mode = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 dtype=None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = _GATES[self._mode] * hidden_size
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
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: expected input of shape (N, {self.input_size}) or "
                             f"({self.input_size},), got {x.shape}")
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


class RNNCell(_CellBase):
    """One step of an Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", dtype=None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, dtype)

    def forward(self, input, hx=None):
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched, "hx")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        out = _rnn_step(mode, _linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                        self.bias_hh)
        return out.squeeze(0) if unbatched else out


class LSTMCell(_CellBase):
    """One LSTM step; returns (h', c')."""

    _mode = "LSTM"

    def forward(self, input, hx=None):
        x, unbatched = self._input(input)
        if hx is None:
            h = c = self._state(None, x, unbatched, "h")
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTMCell: hx must be a tuple (h, c)")
            h = self._state(hx[0], x, unbatched, "h")
            c = self._state(hx[1], x, unbatched, "c")
        h, c = _lstm_step(_linear(x, self.weight_ih, self.bias_ih), (h, c), self.weight_hh,
                          self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(_CellBase):
    """One GRU step."""

    _mode = "GRU"

    def forward(self, input, hx=None):
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched, "hx")
        out = _gru_step(_linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                        self.bias_hh)
        return out.squeeze(0) if unbatched else out
