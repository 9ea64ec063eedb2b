"""Language models that make up names, one character at a time: the second worked example.

The lesson built an autograd and a small neural network from scratch. The next
step is to let a network *write*: read thousands of names ("emma", "olivia",
...) and learn to produce new ones that sound like them. Each name is a
sequence of characters; a model reads the characters so far and gives a score
(a logit) for every possible next character. Training makes the true next
character likely (cross-entropy); sampling draws one character after another
until the model chooses the end token.

Every model here maps a batch of token ids `idx` of shape (B, T) to logits of
shape (B, T, V): the logits at position t may use only `idx[:, :t + 1]`, so
one forward pass scores every position of every name at once. Token 0 is both
the start and the end of a name (`.emma.`); the others are the characters.
They are written with `rg.nn` only, as you would write them in PyTorch.

The models, from the simplest up (test loss on the names, nats per character,
after `retrograd train --task names --model M` with its defaults):

1. `Bigram`: the next character from the current one alone: a V x V table of
   logits, learned. Counting pairs gives the same answer; its floor is 2.45.
2. `MLP` (Bengio et al. 2003): the previous `window` characters, each looked
   up in an embedding table, concatenated, through a tanh hidden layer. The
   embedding lets similar characters share what is learned. 2.07.
3. `RNN`: a hidden state carried along the name, updated by each character
   (h = tanh(W x + U h + b)), so the context has no fixed length; gradients
   through many tanh steps fade, but names are short. 1.99.
4. `GRU` (Cho et al. 2014): the RNN with gates that decide how much of the state
   to keep and how much to overwrite, so information survives longer. 1.95.
5. `Transformer` (Vaswani et al. 2017, GPT-style): every position looks at all
   earlier positions at once through causal self-attention, in a few residual
   blocks of attention and MLP with layer normalisation. 1.95 after 3,000
   steps (about 2 minutes of one core); it keeps improving with longer training.
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import numpy as np

import retrograd as rg
from retrograd import nn
from retrograd.nn import functional as F

__all__ = ["DataError", "Vocabulary", "read_items", "default_data", "split", "encode",
           "Bigram", "MLP", "RNN", "GRU", "CausalSelfAttention", "Block", "Transformer",
           "MODELS", "build", "loss", "sample"]


# ---------------------------------------------------------------- the data

class DataError(ValueError):
    """A data file that cannot be trained on (missing, unreadable, too little in it)."""


def default_data() -> Path:
    """The names shipped with the package: 32,032 names, one per line."""
    return Path(str(resources.files("retrograd").joinpath("data_files", "names.txt")))


def read_items(path: str | Path) -> list[str]:
    """The non-blank lines of a UTF-8 text file, stripped; `DataError` if there is nothing
    to learn from (missing or undecodable file, no items, one distinct character)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise DataError(f"no such data file: {str(path)!r}") from None
    except IsADirectoryError:
        raise DataError(f"the data file {str(path)!r} is a directory") from None
    except OSError as e:
        raise DataError(f"cannot read the data file {str(path)!r}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise DataError(f"the data file {str(path)!r} is not UTF-8 text (byte {e.start}: "
                        f"{e.reason})") from None
    items = [line.strip() for line in text.splitlines()]
    items = [w for w in items if w]
    if len(items) < 2:
        raise DataError(f"the data file {str(path)!r} has {len(items)} non-blank line"
                        f"{'s' if len(items) != 1 else ''}; need at least 2 (one item a line)")
    if len(set("".join(items))) < 2:
        raise DataError(f"the data file {str(path)!r} uses a single distinct character; "
                        f"there is nothing to learn")
    return items


class Vocabulary:
    """Token 0 marks the start and the end of an item; tokens 1.. are the characters,
    sorted."""

    def __init__(self, chars: str | list[str]) -> None:
        self.chars = sorted(set(chars))
        self.index = {c: i + 1 for i, c in enumerate(self.chars)}

    @classmethod
    def of(cls, items: list[str]) -> Vocabulary:
        return cls("".join(items))

    def __len__(self) -> int:
        return len(self.chars) + 1

    def encode(self, item: str) -> list[int]:
        return [self.index[c] for c in item]

    def decode(self, tokens: list[int]) -> str:
        return "".join(self.chars[t - 1] for t in tokens)


def split(items: list[str], test_fraction: float = 0.1,
          seed: int = 0) -> tuple[list[str], list[str]]:
    """(train, test): a shuffle fixed by `seed`, then the first ~10% (at least 1) for test."""
    order = np.random.default_rng(seed).permutation(len(items))
    n_test = min(len(items) - 1, max(1, int(len(items) * test_fraction)))
    return [items[i] for i in order[n_test:]], [items[i] for i in order[:n_test]]


def encode(items: list[str], vocab: Vocabulary, context: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets, (N, context) int64 each: inputs `0 c1 c2 .. cn 0 0 ..`,
    targets `c1 c2 .. cn 0 -1 -1 ..` (-1: padding, ignored by the loss)."""
    X = np.zeros((len(items), context), dtype=np.int64)
    Y = np.full((len(items), context), -1, dtype=np.int64)
    for i, item in enumerate(items):
        tokens = vocab.encode(item)[:context - 1]
        X[i, 1:len(tokens) + 1] = tokens
        Y[i, :len(tokens)] = tokens
        Y[i, len(tokens)] = 0
    return X, Y


# ---------------------------------------------------------------- the models


class Bigram(nn.Module):
    """Logits for the next character from the current character only: one table row each."""

    def __init__(self, vocab_size: int, context: int) -> None:
        super().__init__()
        self.logits = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx: rg.Tensor) -> rg.Tensor:
        return self.logits(idx)


class MLP(nn.Module):
    """Bengio's neural language model: embed the last `window` characters, concatenate,
    one tanh hidden layer, logits. Before the start of a name the window sees token 0."""

    def __init__(self, vocab_size: int, context: int, window: int = 3, n_embd: int = 24,
                 n_hidden: int = 256) -> None:
        super().__init__()
        self.window = window
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.hidden = nn.Linear(window * n_embd, n_hidden)
        self.out = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx: rg.Tensor) -> rg.Tensor:
        B, T = idx.shape
        emb = self.wte(idx)  # (B, T, E)
        start = self.wte(rg.zeros((B, self.window - 1), dtype=rg.int64, device=idx.device))
        padded = rg.cat([start, emb], dim=1)  # (B, window - 1 + T, E)
        # position t sees tokens t - window + 1 .. t: the windows, side by side
        x = rg.cat([padded[:, j:j + T] for j in range(self.window)], dim=-1)
        return self.out(rg.tanh(self.hidden(x)))


class RNN(nn.Module):
    """Embedding, an Elman RNN along the name, and a linear read-out of each hidden state."""

    cell = "rnn"

    def __init__(self, vocab_size: int, context: int, n_embd: int = 64,
                 n_hidden: int = 128) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        layer = nn.GRU if self.cell == "gru" else nn.RNN
        self.rnn = layer(n_embd, n_hidden, batch_first=True)
        self.out = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx: rg.Tensor) -> rg.Tensor:
        hidden, _ = self.rnn(self.wte(idx))  # (B, T, H): the state after each character
        return self.out(hidden)


class GRU(RNN):
    """The RNN with a gated recurrent unit: reset and update gates choose what to keep."""

    cell = "gru"


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t attends to positions 0..t only.

    Per head: softmax(q k^T / sqrt(d) + causal mask) v, the mask -inf above the
    diagonal (what `F.scaled_dot_product_attention(..., is_causal=True)` computes).
    """

    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd ({n_embd}) must be a multiple of n_head ({n_head})")
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)  # queries, keys, values in one product
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: rg.Tensor) -> rg.Tensor:
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.reshape(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))  # (B,H,T,d)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    """A transformer block: x + attention(norm(x)), then x + MLP(norm(x)) (pre-norm)."""

    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln2 = nn.LayerNorm(n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: rg.Tensor) -> rg.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.gelu(self.fc(self.ln2(x))))


class Transformer(nn.Module):
    """GPT in miniature: token and position embeddings, `n_layer` blocks, a final norm and
    a linear head. Default 4 layers, 4 heads, 64 channels; context = the longest name + 1."""

    def __init__(self, vocab_size: int, context: int, n_layer: int = 4, n_head: int = 4,
                 n_embd: int = 64) -> None:
        super().__init__()
        self.context = context
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(context, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx: rg.Tensor) -> rg.Tensor:
        T = idx.shape[1]
        if T > self.context:
            raise ValueError(f"a sequence of {T} tokens is longer than the context "
                             f"({self.context})")
        x = self.wte(idx) + self.wpe(rg.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


MODELS: dict[str, type[nn.Module]] = {"bigram": Bigram, "mlp": MLP, "rnn": RNN, "gru": GRU,
                                      "transformer": Transformer}


def build(name: str, vocab_size: int, context: int) -> nn.Module:
    """The model called `name` (a key of `MODELS`) for this vocabulary and context (the
    longest sequence, end token included: only the transformer's position table needs it)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")
    return MODELS[name](vocab_size, context)


def loss(model: nn.Module, x: rg.Tensor, y: rg.Tensor) -> rg.Tensor:
    """Mean cross-entropy of `model`'s next-token logits for inputs `x` against targets `y`
    (both (B, T)); targets -1 mark padding and are ignored."""
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=-1)


def sample(model: nn.Module, n: int, context: int, *, temperature: float = 1.0,
           top_k: int | None = None, seed: int = 0) -> list[list[int]]:
    """`n` token sequences drawn from `model`, each starting after token 0 and ending before
    the first 0 (or at `context - 1` tokens); never empty. Reproducible: only `seed` draws.

    At each step the logits of the last position are divided by `temperature`
    (lower: safer, more common names), cut to the `top_k` best when given,
    and a token is drawn from their softmax.
    """
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a positive number, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    rng = np.random.default_rng(seed)
    idx = np.zeros((n, 1), dtype=np.int64)
    was_training = model.training
    model.eval()
    with rg.no_grad():
        for _ in range(context - 1):
            logits = model(rg.tensor(idx)).numpy()[:, -1, :].astype(np.float64) / temperature
            if idx.shape[1] == 1:
                logits[:, 0] = -np.inf  # no empty names: the data has none
            if top_k is not None and top_k < logits.shape[1]:
                kth = np.sort(logits, axis=1)[:, -top_k][:, None]
                logits = np.where(logits < kth, -np.inf, logits)
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            u = rng.random((n, 1))
            nxt = np.minimum((p.cumsum(axis=1) < u).sum(axis=1), p.shape[1] - 1)
            idx = np.concatenate([idx, nxt[:, None]], axis=1)
            if (idx[:, 1:] == 0).any(axis=1).all():
                break
    model.train(was_training)
    names = []
    for row in idx[:, 1:].tolist():
        names.append(row[:row.index(0)] if 0 in row else row)
    return names
