"""NumPy's floating-point warnings, raised inside retrograd's own ops, are not shown.

PyTorch's ops compute log(0) = -inf, 1/0 = inf and sqrt(-1) = nan without a word; NumPy
warns ("divide by zero encountered in log") from the Python line that called the ufunc,
which for a tensor op is a line of retrograd. One filter, added once at import, ignores
RuntimeWarnings attributed to retrograd's modules only: a user's own NumPy code warns as
before, and nothing is paid on an op that raises no warning (an `np.errstate` around every
op would cost about a microsecond each).
"""

from __future__ import annotations

import warnings

PATTERN = r"retrograd(\.|$)"
"""The modules whose RuntimeWarnings are ignored (the filter's `module` regex)."""


def quiet() -> None:
    """Add the filter (once)."""
    for f in warnings.filters:
        if f[0] == "ignore" and f[2] is RuntimeWarning and getattr(f[3], "pattern", None) \
                == PATTERN:
            return
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=PATTERN)


quiet()
