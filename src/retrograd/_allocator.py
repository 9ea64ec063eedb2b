"""Keep freed large buffers inside the process, so large eager steps don't page-fault.

An eager training step allocates its large arrays afresh every time (op
outputs, gradients) and frees them when the graph dies. With glibc's default
settings, a freed block above a few megabytes goes back to the operating system
(unmapped, or trimmed off the top of the heap), so the next step's array of the
same size is fresh memory again: every one of its pages faults on first touch,
and the kernel zeroes it. On a 1024x1024 matmul step that costs about a tenth
of the step. Raising glibc's thresholds (`mallopt`) keeps such blocks for reuse,
as PyTorch's caching allocator does for its device memory: blocks below 64 MB
come from the heap, and up to 128 MB of free heap stays mapped.

Applied once at import, on glibc only; a no-op anywhere else, and turned off by
setting the environment variable `RETROGRAD_KEEP_MEMORY=0` before the import
(then the process's memory returns to the OS sooner, at that cost in speed).
"""

from __future__ import annotations

import os
import platform

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 128 << 20


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds; True when they were set."""
    if os.environ.get("RETROGRAD_KEEP_MEMORY", "1") == "0":
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # glibc returns 1 on success; both must take, or neither is left changed
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


ACTIVE = keep_freed_memory()
