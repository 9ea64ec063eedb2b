"""Worked examples of models written with `rg.nn`, as a user would write them.

    names.py  character-level language models that make up names: bigram, MLP,
              RNN, GRU and a small transformer, with the data handling and sampling
"""

from . import names

__all__ = ["names"]
