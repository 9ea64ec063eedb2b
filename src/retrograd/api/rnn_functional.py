"""PyTorch's functional recurrent ops: the cells `rg.lstm_cell`, `gru_cell`, `rnn_tanh_cell`,
`rnn_relu_cell`, and the sequence forms `rg.lstm`, `gru`, `rnn_tanh`, `rnn_relu` that take
the flat parameter list `nn.LSTM` and its kin keep (per layer and direction: w_ih, w_hh,
then b_ih, b_hh with biases, then w_hr for an LSTM with projections).

Each is written with the public element-wise and matrix functions, one time step at a time,
so gradients (any order), forward mode, vmap and `rg.jit` come from those rows; nothing
here is fused (the `nn` layers have their own fast path). Gate orders are torch's: LSTM
(input, forget, cell, output), GRU (reset, update, new) with the reset gate applied to
`W_hn h + b_hn`. Dropout between layers, when `train` and `dropout > 0`, draws from
retrograd's generator (its own random numbers, not torch's).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..tensor import Tensor
from ._args import _t
from .elementwise import relu, sigmoid, tanh
from .linalg import mm
from .shape import cat, stack

__all__ = ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "lstm", "gru",
           "rnn_tanh", "rnn_relu"]


def _linear(x: Tensor, w: Tensor, b) -> Tensor:
    y = mm(x, w.mT)
    return y if b is None else y + b


def _lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh) -> tuple[Tensor, Tensor]:
    i, f, g, o = (_linear(x, w_ih, b_ih) + _linear(h, w_hh, b_hh)).chunk(4, -1)
    c_new = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return sigmoid(o) * tanh(c_new), c_new


def _cell_args(fn: str, input, hx, w_ih, w_hh, gates: int):
    x, h, w_ih, w_hh = _t(input), _t(hx), _t(w_ih), _t(w_hh)
    if x.ndim != 2:
        raise IndexError(f"{fn}(): input must be 2-D (batch, input_size), got shape {x.shape} "
                         "(torch's functional cells take batches only)")
    if h.ndim != 2 or h.shape[0] != x.shape[0]:
        raise RuntimeError(f"{fn}(): hidden state must be 2-D (batch, hidden_size) with "
                           f"input's batch {x.shape[0]}, got shape {h.shape}")
    hidden = w_hh.shape[-1] if w_hh.ndim == 2 else -1
    if w_ih.ndim != 2 or w_ih.shape[0] != gates * hidden or w_ih.shape[1] != x.shape[1]:
        raise RuntimeError(f"{fn}(): weight_ih must be ({gates} * hidden_size, input_size) = "
                           f"({gates * hidden}, {x.shape[1]}), got shape {w_ih.shape}")
    if w_hh.ndim != 2 or w_hh.shape[0] != gates * hidden:
        raise RuntimeError(f"{fn}(): weight_hh must be ({gates} * hidden_size, hidden_size), "
                           f"got shape {w_hh.shape}")
    return x, h, w_ih, w_hh


def _check_bias(fn: str, b, rows: int, name: str):
    if b is None:
        return None
    b = _t(b)
    if b.shape != (rows,):
        raise RuntimeError(f"{fn}(): {name} must have shape ({rows},), got {b.shape}")
    return b


def lstm_cell(input, hx: Sequence, w_ih, w_hh, b_ih=None, b_hh=None  # noqa: A002
              ) -> tuple[Tensor, Tensor]:
    """One LSTM step: (h', c') from input (batch, input_size) and hx = (h, c). Like
    `torch.lstm_cell` (gates input, forget, cell, output)."""
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise RuntimeError("lstm_cell(): hx must be a pair (h, c) of tensors")
    h, c = hx
    x, h, w_ih, w_hh = _cell_args("lstm_cell", input, h, w_ih, w_hh, 4)
    c = _t(c)
    rows = w_ih.shape[0]
    b_ih = _check_bias("lstm_cell", b_ih, rows, "bias_ih")
    b_hh = _check_bias("lstm_cell", b_hh, rows, "bias_hh")
    return _lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:  # noqa: A002
    """One GRU step: h' from input (batch, input_size) and h. Like `torch.gru_cell` (gates
    reset, update, new; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)))."""
    x, h, w_ih, w_hh = _cell_args("gru_cell", input, hx, w_ih, w_hh, 3)
    rows = w_ih.shape[0]
    b_ih = _check_bias("gru_cell", b_ih, rows, "bias_ih")
    b_hh = _check_bias("gru_cell", b_hh, rows, "bias_hh")
    xr, xz, xn = _linear(x, w_ih, b_ih).chunk(3, -1)
    hr, hz, hn = _linear(h, w_hh, b_hh).chunk(3, -1)
    r, z = sigmoid(xr + hr), sigmoid(xz + hz)
    n = tanh(xn + r * hn)
    return n + z * (h - n)


def _simple_cell(fn: str, input, hx, w_ih, w_hh, b_ih, b_hh,  # noqa: A002
                 use_relu: bool) -> Tensor:
    x, h, w_ih, w_hh = _cell_args(fn, input, hx, w_ih, w_hh, 1)
    rows = w_ih.shape[0]
    b_ih, b_hh = _check_bias(fn, b_ih, rows, "bias_ih"), _check_bias(fn, b_hh, rows, "bias_hh")
    pre = _linear(x, w_ih, b_ih) + _linear(h, w_hh, b_hh)
    return relu(pre) if use_relu else tanh(pre)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:  # noqa: A002
    """One Elman step, h' = tanh(W_ih x + b_ih + W_hh h + b_hh). Like `torch.rnn_tanh_cell`."""
    return _simple_cell("rnn_tanh_cell", input, hx, w_ih, w_hh, b_ih, b_hh, use_relu=False)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:  # noqa: A002
    """One Elman step, h' = relu(W_ih x + b_ih + W_hh h + b_hh). Like `torch.rnn_relu_cell`."""
    return _simple_cell("rnn_relu_cell", input, hx, w_ih, w_hh, b_ih, b_hh, use_relu=True)


# ---------------------------------------------------------------- over a sequence

def _run(fn: str, kind: str, input, hx, params, has_biases: bool, num_layers: int,  # noqa: A002
         dropout: float, train: bool, bidirectional: bool, batch_first: bool):
    """(output, final states): the stacked, maybe bidirectional recurrence of `kind`
    ('lstm', 'gru', 'tanh', 'relu'); hx is h0 (c0 too, as a pair, for lstm)."""
    from .dropout import dropout as _dropout
    x = _t(input)
    if x.ndim != 3:
        order = "batch, seq" if batch_first else "seq, batch"
        raise RuntimeError(f"{fn}(): input must be 3-D ({order}, features), got shape "
                           f"{x.shape}")
    if batch_first:
        x = x.transpose(0, 1)
    dirs = 2 if bidirectional else 1
    if kind == "lstm":
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise RuntimeError("lstm(): hx must be a pair (h0, c0) of tensors")
        h0, c0 = _t(hx[0]), _t(hx[1])
        proj = h0.shape[-1] != c0.shape[-1]
    else:
        h0, c0, proj = _t(hx), None, False
    per = (4 if has_biases else 2) + (1 if proj else 0)
    params = [_t(p) for p in params]
    if len(params) != per * num_layers * dirs:
        raise RuntimeError(f"{fn}(): expected {per * num_layers * dirs} parameters ({per} per "
                           f"layer and direction for {num_layers} layer(s), "
                           f"{'bidirectional' if bidirectional else 'one direction'}), got "
                           f"{len(params)}")
    if h0.shape[0] != num_layers * dirs or h0.shape[1] != x.shape[1]:
        raise RuntimeError(f"{fn}(): expected hidden state of shape ({num_layers * dirs}, "
                           f"{x.shape[1]}, hidden), got {h0.shape}")
    steps = x.shape[0]
    hs, cs = [], []
    layer_in = x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            p = params[k * per:(k + 1) * per]
            w_ih, w_hh = p[0], p[1]
            b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
            w_hr = p[-1] if proj else None
            h = h0[k]
            c = c0[k] if c0 is not None else None
            seq = []
            order = range(steps - 1, -1, -1) if d else range(steps)
            for t in order:
                xt = layer_in[t]
                if kind == "lstm":
                    if w_hr is None:
                        h, c = lstm_cell(xt, (h, c), w_ih, w_hh, b_ih, b_hh)
                    else:  # projections: the cell's h is w_hr @ h
                        h, c = _lstm_step(xt, h, c, w_ih, w_hh, b_ih, b_hh)
                        h = _linear(h, w_hr, None)
                elif kind == "gru":
                    h = gru_cell(xt, h, w_ih, w_hh, b_ih, b_hh)
                else:
                    h = _simple_cell(fn, xt, h, w_ih, w_hh, b_ih, b_hh, use_relu=kind == "relu")
                seq.append(h)
            if d:
                seq.reverse()
            outs.append(stack(seq, 0) if steps else layer_in.new_zeros(
                (0, x.shape[1], h0.shape[-1])))
            hs.append(h)
            if c is not None:
                cs.append(c)
        layer_in = outs[0] if dirs == 1 else cat(outs, -1)
        if dropout and train and layer < num_layers - 1:
            layer_in = _dropout(layer_in, float(dropout), True)
    out = layer_in.transpose(0, 1) if batch_first else layer_in
    return out, stack(hs, 0), (stack(cs, 0) if c0 is not None else None)


def lstm(input, hx: Sequence, params: Sequence, has_biases: bool, num_layers: int,  # noqa: A002
         dropout: float, train: bool, bidirectional: bool, batch_first: bool
         ) -> tuple[Tensor, Tensor, Tensor]:
    """(output, h_n, c_n) of a stacked LSTM over a padded sequence, from nn.LSTM's flat
    parameter list; projections (w_hr) when h0 and c0 differ in size. Like `torch.lstm`
    (its packed-sequence form is not provided)."""
    return _run("lstm", "lstm", input, hx, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first)


def gru(input, hx, params: Sequence, has_biases: bool, num_layers: int,  # noqa: A002
        dropout: float, train: bool, bidirectional: bool, batch_first: bool
        ) -> tuple[Tensor, Tensor]:
    """(output, h_n) of a stacked GRU over a padded sequence, from nn.GRU's flat parameter
    list. Like `torch.gru`."""
    out, h, _ = _run("gru", "gru", input, hx, params, has_biases, num_layers, dropout, train,
                     bidirectional, batch_first)
    return out, h


def rnn_tanh(input, hx, params: Sequence, has_biases: bool, num_layers: int,  # noqa: A002
             dropout: float, train: bool, bidirectional: bool, batch_first: bool
             ) -> tuple[Tensor, Tensor]:
    """(output, h_n) of a stacked tanh Elman RNN, from nn.RNN's flat parameter list. Like
    `torch.rnn_tanh`."""
    out, h, _ = _run("rnn_tanh", "tanh", input, hx, params, has_biases, num_layers, dropout,
                     train, bidirectional, batch_first)
    return out, h


def rnn_relu(input, hx, params: Sequence, has_biases: bool, num_layers: int,  # noqa: A002
             dropout: float, train: bool, bidirectional: bool, batch_first: bool
             ) -> tuple[Tensor, Tensor]:
    """(output, h_n) of a stacked ReLU Elman RNN, from nn.RNN's flat parameter list. Like
    `torch.rnn_relu`."""
    out, h, _ = _run("rnn_relu", "relu", input, hx, params, has_biases, num_layers, dropout,
                     train, bidirectional, batch_first)
    return out, h
