"""Classic NLP programs in plain PyTorch (the pytorch/tutorials seq2seq translation model,
beam search, a BiLSTM-CRF tagger, a pointer-generator and T5's relative position
buckets), re-typed against a module `torch` that is either torch or retrograd, so one
body runs on both. Each test copies torch's weights into retrograd and compares losses,
gradients, a few optimiser steps and decoded outputs; plus the gaps this port found."""

from __future__ import annotations


import numpy as np
import pytest
import torch as _torch
from port_compare import close

import retrograd as rg

# ---------------------------------------------------------------- gaps found by the port


@pytest.mark.parametrize("cls", ["Embedding", "EmbeddingBag"])
def test_from_pretrained_not_2d_is_assertion_error(cls):
    """torch asserts the table is 2-D (AssertionError); retrograd raised only ValueError."""
    with pytest.raises(AssertionError):
        getattr(_torch.nn, cls).from_pretrained(_torch.zeros(5))
    with pytest.raises(AssertionError, match="2-D"):
        getattr(rg.nn, cls).from_pretrained(rg.zeros(5))
    with pytest.raises(ValueError):
        getattr(rg.nn, cls).from_pretrained(rg.zeros(2, 3, 4))
