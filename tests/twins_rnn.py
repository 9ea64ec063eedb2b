"""PyTorch twins of the fused recurrences (`ops/fused_rnn.py`), for the generated tests:
PyTorch's own LSTM cell, with the input projection given (an identity input weight)."""

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
