"""`rg.multiprocessing`: Python's `multiprocessing`, plus PyTorch's `spawn`, as
`torch.multiprocessing`.

Tensors moved to shared memory (`t.share_memory_()`, `module.share_memory()`) are shared
with processes forked afterwards and with those they are pickled to, so Hogwild-style
training (`model.share_memory()`, then `mp.Process(target=train, args=(model,))`)
updates the parent's model as with PyTorch. Other tensors are copied when pickled
(PyTorch would move them to shared memory on the way).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from multiprocessing import *  # noqa: F403  (torch.multiprocessing re-exports them all)

__all__ = [*multiprocessing.__all__, "spawn", "start_processes", "ProcessContext",
           "ProcessRaisedException", "ProcessExitedException", "get_sharing_strategy",
           "set_sharing_strategy", "get_all_sharing_strategies"]

_strategy = ["file_system"]


def get_all_sharing_strategies() -> set:
    """The ways tensors can be shared: a file on a memory file system, here."""
    return {"file_system"}


def get_sharing_strategy() -> str:
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Accepts PyTorch's names; every tensor is shared through a file here."""
    if new_strategy not in ("file_system", "file_descriptor"):
        raise ValueError(f"unknown sharing strategy {new_strategy!r}")
    _strategy[0] = new_strategy


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid


class ProcessRaisedException(ProcessException):
    """A spawned process raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code (or a signal)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name


def _wrap(fn: Callable, i: int, args: tuple, errors) -> None:
    import traceback

    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1) from None


class ProcessContext:
    """The processes `start_processes` made: `join()` waits for them (True when all have
    ended) and raises if one failed, as PyTorch's."""

    def __init__(self, processes: list, errors) -> None:
        self.processes = processes
        self.error_queue = errors

    def pids(self) -> list:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        for p in self.processes:
            p.join(timeout)
        if any(p.is_alive() for p in self.processes):
            return False
        failed = [(i, p) for i, p in enumerate(self.processes) if p.exitcode != 0]
        if not failed:
            return True
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        if not self.error_queue.empty():
            i, tb = self.error_queue.get()
            raise ProcessRaisedException(f"\n\n-- Process {i} terminated with the following "
                                         f"error:\n{tb}", i, self.processes[i].pid)
        i, p = failed[0]
        raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}",
                                     i, p.pid, p.exitcode)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn"):
    """Run `fn(i, *args)` in `nprocs` new processes (i = 0 .. nprocs-1); with `join`, wait
    and re-raise a failure, else return the ProcessContext."""
    ctx = multiprocessing.get_context(start_method)
    errors = ctx.SimpleQueue()
    procs = []
    for i in range(nprocs):
        p = ctx.Process(target=_wrap, args=(fn, i, tuple(args), errors), daemon=daemon)
        p.start()
        procs.append(p)
    context = ProcessContext(procs, errors)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn"):
    """`start_processes` with the spawn start method, as `torch.multiprocessing.spawn`."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
