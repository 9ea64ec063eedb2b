"""Tensors in memory shared between processes: `t.share_memory_()`, `module.share_memory()`.

PyTorch moves a shared tensor's storage into shared memory, so worker processes (Hogwild
training: `model.share_memory()`, then `mp.Process(target=train, args=(model,))`) update
the parent's parameters. Here the array moves into a file-backed memory map on a memory
file system (/dev/shm where it exists), in place of the tensor's array:
- a process forked afterwards inherits the mapping (MAP_SHARED: writes are seen by all);
- a pickled shared tensor (multiprocessing's spawn, a Queue) carries the file's path, and
  unpickling maps the same file, so the receiver's writes reach the sender's tensor.
The file is removed when the array that owns the mapping is freed in the process that
made it (or when that process exits); mappings already open stay valid.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref

import numpy as np

__all__ = ["share", "is_shared", "shared_path"]

_made: dict[int, str] = {}        # id(mmap) -> path, for mappings this process created
_mapped: dict[int, str] = {}      # id(mmap) -> path, for every mapping this process holds
_by_path: dict[str, mmap.mmap] = {}  # path -> mapping opened by unpickling (reused)


def _directory() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
        else tempfile.gettempdir()


def _forget(key: int, path: str, owner: bool, pid: int) -> None:
    _mapped.pop(key, None)
    if owner:
        _made.pop(key, None)
        if os.getpid() == pid:  # not in a forked child, which inherited the finalizer
            try:
                os.unlink(path)
            except OSError:
                pass


def _map(path: str, nbytes: int, owner: bool) -> mmap.mmap:
    fd = os.open(path, os.O_RDWR)
    try:
        mm = mmap.mmap(fd, max(nbytes, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    key = id(mm)
    _mapped[key] = path
    if owner:
        _made[key] = path
    weakref.finalize(mm, _forget, key, path, owner, os.getpid())
    return mm


def _array(mm: mmap.mmap, dtype, shape) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(mm, dtype=dtype, count=n).reshape(shape)


def shared_path(arr) -> str | None:
    """The file behind `arr` when it is a whole shared array (None otherwise)."""
    if arr.__class__ is not np.ndarray or not arr.flags.c_contiguous:
        return None
    base = arr.base
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):  # (np.frombuffer's view of the mapping)
        base = base.obj
    if base is None or id(base) not in _mapped:
        return None
    if arr.nbytes != max(len(base), 1) and not (arr.nbytes == 0 and len(base) == 1):
        return None
    return _mapped[id(base)]


def is_shared(arr) -> bool:
    return shared_path(arr) is not None


def share(arr: np.ndarray) -> np.ndarray:
    """A copy of `arr` in a new shared mapping (row-major), or `arr` if it is one already."""
    if shared_path(arr) is not None:
        return arr
    if arr.__class__ is not np.ndarray:
        raise RuntimeError("share_memory_: only tensors in CPU memory can be shared, "
                           f"not a {type(arr).__name__}")
    fd, path = tempfile.mkstemp(prefix="retrograd-shm-", dir=_directory())
    try:
        os.ftruncate(fd, max(arr.nbytes, 1))
    finally:
        os.close(fd)
    out = _array(_map(path, arr.nbytes, owner=True), arr.dtype, arr.shape)
    out[...] = arr
    return out


def attach(path: str, dtype: str, shape: tuple) -> np.ndarray:
    """The shared array in file `path` (as pickled by another process), mapped here."""
    mm = _by_path.get(path)
    if mm is None or mm.closed:
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        mm = _by_path[path] = _map(path, nbytes, owner=False)
    return _array(mm, np.dtype(dtype), tuple(shape))
