"""Settings for the whole test suite.

Hypothesis runs under one profile, always loaded, which is what CI runs: the
examples are derived from each test itself (`derandomize=True`) and no example
database is read or written, so a run on a clean clone tries exactly the
examples every other run tries and a failure reproduces anywhere. No deadline
and no too-slow health check: how fast a shared machine happens to be must not
decide whether a test passes. A test may still ask for more or fewer examples
with its own `@settings(max_examples=...)`.

BLAS and OpenMP run on one thread unless the environment says otherwise: the
suite's arrays are small, and `pytest -n 2` already gives each core a worker,
so a second BLAS thread per worker only spins against the other worker (it
cost about a quarter more CPU time). Set before NumPy or torch is imported;
the tests' subprocesses inherit it.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _default_dtypes_restored():
    """Each test starts with the default dtypes (float32 in retrograd and in torch) and
    leaves them so: a test module that changes one at import or in a test would
    otherwise change every test collected after it."""
    import numpy as np
    import torch

    import retrograd as rg

    torch.set_default_dtype(torch.float32)
    rg.set_default_dtype(np.float32)
    yield
    torch.set_default_dtype(torch.float32)
    rg.set_default_dtype(np.float32)
