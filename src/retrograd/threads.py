"""Intra-op threads: one kernel's independent rows (or batch elements) split over a few
threads, as PyTorch's CPU kernels do. NumPy's loops and LAPACK calls release the GIL, so
the pieces run at once on separate cores.

The number of threads is `rg.set_num_threads`'s (which also sets the BLAS library's);
until it is called, RETROGRAD_NUM_THREADS, else OMP_NUM_THREADS (PyTorch's variable),
else OPENBLAS_NUM_THREADS, else the CPUs this process may use. A kernel asks
`chunks(n, work)` how to split n rows of `work` element-operations in all: one chunk
(run inline, no thread) unless each piece is big enough to pay for a hand-off (tens of
microseconds, and the pieces share the GIL between NumPy calls), so small inputs never
pay. The names transformer's step sets the bar: at 2^17 per piece it was 15% slower on
an earlier host; on a Zen 5 host with two idle cores, its jitted step at two threads was
0.75-1 ms (about 6%) slower with its GELU and attention split at 2^20 than unsplit (A/B
in one process, 100 blocks of 10 steps, twice): between the products, NumPy's OpenBLAS
threads still spin on the second core, so a piece handed there waits for its turn. At
2^23 those stay whole, while convolutions' and batched decompositions' pieces (tens of
millions) still split.
Work split this way gives the same numbers as unsplit work wherever rows are
independent; reductions across rows add per-chunk partial sums, so the last bits can
depend on the number of threads (as in PyTorch).

While pieces run at once, the BLAS libraries NumPy and SciPy loaded are held to one
thread each (through threadpoolctl, a few microseconds): pieces call BLAS on small
blocks, and a multi-threaded OpenBLAS called from several threads at once spins and
stalls (measured: 10x slower). Without threadpoolctl the pieces run one after another.

Where NumPy's BLAS is OpenBLAS with its own pthreads pool, the other pieces run on that
pool's threads (through its `gotoblas_pthread`), not on a pool of ours. After each
multi-threaded product OpenBLAS's threads spin for about 0.1 s waiting for more work;
a thread of ours would share a core with that spin and run at half speed (measured on
two cores: two halves of a NumPy loop just after a product took 7.3 ms on a thread of
ours against 3.8 ms on OpenBLAS's, 3.4 ms with no product before; an LSTM step 4.9 ms
against 3.5). The spinning thread picks the piece up at once instead.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

_MIN_WORK = 1 << 23
"""Element-operations below which a piece is not worth handing to another thread."""

_state = {"n": None, "pool": None, "size": 0}
_local = threading.local()


def _default() -> int:
    for var in ("RETROGRAD_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        v = os.environ.get(var, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def num_threads() -> int:
    """How many threads one kernel may use."""
    if _state["n"] is None:
        _state["n"] = _default()
    return _state["n"]


def set_num_threads(n: int) -> None:
    """Let one kernel use `n` threads (n >= 1; checked by the public caller)."""
    _state["n"] = int(n)


def chunks(n: int, work: float, min_work: float | None = None) -> list[tuple[int, int]]:
    """Split range(n) into contiguous (start, stop) pieces, one per thread, each with at
    least `min_work` of the `work` in all; [(0, n)] when splitting does not pay, and
    inside a piece already running on a pool thread (no nesting)."""
    min_work = _MIN_WORK if min_work is None else min_work
    k = min(num_threads(), n, int(work // min_work) if min_work > 0 else n)
    if k <= 1 or getattr(_local, "inside", False):
        return [(0, n)]
    step, extra = divmod(n, k)
    out, start = [], 0
    for i in range(k):
        stop = start + step + (i < extra)
        out.append((start, stop))
        start = stop
    return out


def _pool(k: int) -> ThreadPoolExecutor:
    if _state["pool"] is None or _state["size"] < k:
        if _state["pool"] is not None:
            _state["pool"].shutdown(wait=False)
        _state["pool"] = ThreadPoolExecutor(k, thread_name_prefix="retrograd")
        _state["size"] = k
    return _state["pool"]


def _inside(fn, a, b):
    _local.inside = True
    try:
        return fn(a, b)
    finally:
        _local.inside = False


_blas: dict = {"libs": None, "key": None, "depth": 0, "saved": []}
_blas_lock = threading.Lock()


def _blas_libs():
    """threadpoolctl's controllers of the loaded BLAS libraries (None without threadpoolctl),
    looked up again once SciPy's own BLAS may have loaded."""
    key = "scipy.linalg" in sys.modules
    if _blas["key"] != key:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            libs = None
        else:
            libs = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
        _blas["libs"], _blas["key"] = libs, key
    return _blas["libs"]


def _hold_blas(libs) -> None:
    with _blas_lock:
        if _blas["depth"] == 0:
            _blas["saved"] = [(c, c.num_threads) for c in libs]
            for c, k in _blas["saved"]:
                if k > 1:
                    c.set_num_threads(1)
        _blas["depth"] += 1


def _release_blas() -> None:
    with _blas_lock:
        _blas["depth"] -= 1
        if _blas["depth"] == 0:
            for c, k in _blas["saved"]:
                if k > 1:
                    c.set_num_threads(k)


def run_one_blas(fn: Callable[[int, int], object], pieces: Sequence[tuple[int, int]]) -> list:
    """`run`, with the BLAS libraries held to one thread even for a single piece: for
    compiled kernels that call BLAS (SciPy's, through Numba) on small blocks step after
    step, where NumPy's OpenBLAS threads still spinning from a product just before and
    SciPy's own would share the cores (measured: an LSTM step 5x slower)."""
    libs = _blas_libs() if len(pieces) == 1 else None
    if libs is None:
        return run(fn, pieces)
    _hold_blas(libs)
    try:
        return [fn(*pieces[0])]
    finally:
        _release_blas()


def run(fn: Callable[[int, int], object], pieces: Sequence[tuple[int, int]]) -> list:
    """[fn(start, stop) for each piece], the first piece on this thread and the others on
    BLAS's threads or the pool at the same time; an exception in any piece is raised here."""
    if len(pieces) == 1:
        return [fn(*pieces[0])]
    libs = _blas_libs()
    if libs is None or getattr(_local, "inside", False):  # BLAS's threads cannot be held,
        return [fn(a, b) for a, b in pieces]               # or already inside a piece
    _hold_blas(libs)
    try:
        lent = _lent_threads(len(pieces) - 1)
        if lent is not None:
            return lent(fn, pieces)
        pool = _pool(len(pieces) - 1)
        futures = [pool.submit(_inside, fn, a, b) for a, b in pieces[1:]]
        try:
            first = _inside(fn, *pieces[0])
        finally:
            rest = [f.result() for f in futures]  # wait for all before raising
    finally:
        _release_blas()
    return [first, *rest]


# ---------------------------------------------------------------- OpenBLAS's threads lent

_PIECE = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_int64))
_lent: dict = {"key": None, "run": None, "count": None}
_calls: dict = {}
_call_ids = itertools.count()


def _run_piece(p) -> None:
    """One piece on the thread OpenBLAS gave it: p -> (call id, piece index). Its result or
    exception is stored for the caller (an exception must not escape into C)."""
    fn, pieces, out = _calls[p[0]]
    i = p[1]
    try:
        out[i] = (True, _inside(fn, *pieces[i]))
    except BaseException as e:  # noqa: BLE001 - handed to the caller, raised there
        out[i] = (False, e)


_piece_callback = _PIECE(_run_piece)


def _openblas_lender(lib):
    """A run(fn, pieces) over OpenBLAS's pool of `lib` (its pthreads build), and that
    pool's thread count (caller included); None where the symbols are missing."""
    try:
        pthread = lib.gotoblas_pthread
        count = ctypes.c_int.in_dll(lib, "blas_num_threads")
    except (AttributeError, ValueError):
        return None
    pthread.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    pthread.restype = ctypes.c_int
    address = ctypes.cast(_piece_callback, ctypes.c_void_p)
    import numpy as np

    def lend(fn, pieces):
        k = len(pieces)
        call = next(_call_ids)
        out: list = [None] * k
        block = np.empty((k, 2), np.int64)
        block[:, 0] = call
        block[:, 1] = np.arange(k)
        _calls[call] = (fn, pieces, out)
        try:  # ctypes lets the GIL go; OpenBLAS runs piece 0 here, the others on its threads
            pthread(k, address, block.ctypes.data, block.strides[0])
        finally:
            del _calls[call]
        for ok, value in out:
            if not ok:
                raise value
        return [value for _, value in out]
    return lend, count


def _lent_threads(extra: int):
    """The runner over NumPy's OpenBLAS's threads when it has `extra` of them besides the
    caller's (its pthreads pool, as `threading_layer` says; not its OpenMP build), else
    None (the pool of ours runs the pieces). RETROGRAD_BLAS_THREADS=0 turns it off."""
    key = _blas["key"]
    if _lent["key"] != key:
        _lent["key"], _lent["run"], _lent["count"] = key, None, None
        if os.environ.get("RETROGRAD_BLAS_THREADS", "1").strip() != "0":
            ours = [c for c in _blas["libs"] or ()
                    if getattr(c, "internal_api", "") == "openblas"
                    and getattr(c, "threading_layer", "") == "pthreads"]
            numpys = [c for c in ours if "numpy" in str(getattr(c, "filepath", ""))]
            for c in numpys[:1] or ours[:1]:
                lib = getattr(c, "dynlib", None) or ctypes.CDLL(c.filepath)
                found = _openblas_lender(lib)
                if found is not None:
                    _lent["run"], _lent["count"] = found
    if _lent["run"] is None or _lent["count"].value - 1 < extra:
        return None
    return _lent["run"]


def lends(extra: int) -> bool:
    """Whether `run` would hand `extra` pieces to NumPy's OpenBLAS's own threads (for
    kernels whose pieces stall one another on a pool of ours, as the GRU's)."""
    return _blas_libs() is not None and _lent_threads(extra) is not None


def _after_fork() -> None:  # a forked child has no pool threads: start afresh
    _state["pool"] = None
    _state["size"] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
