"""PyTorch twins of the fused recurrences (`ops/fused_rnn.py`), for the generated tests:
PyTorch's own LSTM, GRU and RNN cells, with the input projection given (an identity input
weight)."""

import torch


def _lstm_scan(xw, h0, c0, w):
    eye = torch.eye(xw.shape[-1], dtype=xw.dtype)
    h, c = h0, c0
    out = []
    for t in range(xw.shape[0]):
        h, c = torch.lstm_cell(xw[t], (h, c), eye, w)
        out.append(torch.stack([h, c]))
    return torch.stack(out)


TWINS = {"lstm_scan": _lstm_scan}


def _gru_scan(xw, h0, w, b):
    eye = torch.eye(xw.shape[-1], dtype=xw.dtype)
    h, out = h0, []
    for t in range(xw.shape[0]):
        h = torch.gru_cell(xw[t], h, eye, w, None, b)
        out.append(h)
    return torch.stack(out)


def _rnn_scan(cell, xw, h0, w):
    eye = torch.eye(xw.shape[-1], dtype=xw.dtype)
    h, out = h0, []
    for t in range(xw.shape[0]):
        h = cell(xw[t], h, eye, w)
        out.append(h)
    return torch.stack(out)


TWINS["gru_scan"] = _gru_scan
TWINS["rnn_tanh_scan"] = lambda *a: _rnn_scan(torch.rnn_tanh_cell, *a)
TWINS["rnn_relu_scan"] = lambda *a: _rnn_scan(torch.rnn_relu_cell, *a)
