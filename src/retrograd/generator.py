"""`rg.Generator`: a random number generator of one's own, as `torch.Generator`.

Code written for PyTorch passes one to keep a draw apart from the global stream:
`random_split(ds, [0.8, 0.2], generator=torch.Generator().manual_seed(42))`,
`torch.randperm(n, generator=g)`. Here it wraps a NumPy `Generator` seeded the
same way as the global one (`rg.manual_seed(s)` then `rg.randn(3)` draws what
`rg.randn(3, generator=rg.Generator().manual_seed(s))` draws). Every `generator=`
also takes a `numpy.random.Generator` directly. CPU only.
"""

from __future__ import annotations

import json

import numpy as np

from .devices import device as _device
from .primitive import ArgumentError
from .tensor import Tensor

__all__ = ["Generator", "numpy_generator"]

_DEFAULT_SEED = 67280421310721  # torch.Generator().initial_seed()


class Generator:
    """A random stream: `manual_seed(s)` (returns self), `seed()`, `initial_seed()`,
    `get_state()` / `set_state(t)` (a uint8 tensor), `device`."""

    def __init__(self, device="cpu") -> None:
        name = str(getattr(device, "type", device))
        if name.split(":")[0] != "cpu":
            raise RuntimeError(f"Generator(device={device!r}): only 'cpu' generators are "
                               f"supported (a device's draws use rg.manual_seed's stream)")
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed) -> Generator:
        """Restart the stream from `seed` (an int; negatives wrap as unsigned 64-bit)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        self._seed = int(seed) % 2 ** 64
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        """Restart the stream from a fresh, non-deterministic seed and return it."""
        s = int(np.random.SeedSequence().entropy) % 2 ** 63
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed the stream last started from."""
        return self._seed

    def get_state(self) -> Tensor:
        """The stream's position as a uint8 tensor, for `set_state`."""
        raw = json.dumps([self._seed, self._rng.bit_generator.state]).encode()
        return Tensor._wrap(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state) -> Generator:
        """Return the stream to a position `get_state` gave."""
        data = new_state.data if isinstance(new_state, Tensor) else np.asarray(new_state)
        if data.dtype != np.uint8 or data.ndim != 1:
            raise TypeError(f"set_state(): expected a 1-D uint8 tensor from get_state(), got "
                            f"dtype {data.dtype} and shape {data.shape}")
        try:
            seed, state = json.loads(data.tobytes().decode())
            rng = np.random.default_rng(seed)  # (so its seed_seq remembers the seed)
            rng.bit_generator.state = state
        except Exception as e:
            raise ArgumentError("set_state(): not a state from Generator.get_state()") from e
        self._seed, self._rng = seed, rng
        return self

    @property
    def device(self):
        return _device("cpu")

    def __repr__(self) -> str:
        return f"<retrograd.Generator object, seed {self._seed}>"


def numpy_generator(generator, default):
    """The NumPy generator behind `generator=`: `default()` for None, the wrapped one of an
    `rg.Generator`, a `numpy.random.Generator` as it is; anything else is refused."""
    if generator is None:
        return default()
    if isinstance(generator, Generator):
        return generator._rng
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(f"generator must be an rg.Generator or a numpy.random.Generator, got "
                    f"{type(generator).__name__}")
