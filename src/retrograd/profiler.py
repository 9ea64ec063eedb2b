"""`rg.profiler`: `torch.profiler`'s interface for timing the regions of a program.

    with rg.profiler.profile() as prof:
        with rg.profiler.record_function("forward"):
            loss = model(x)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

What it measures: the wall-clock time of every `record_function` region (nested
regions give self and total times) and of each `profile.step()` interval
("ProfilerStep#N"), on the CPU. Unlike torch it records no per-op events: the
table lists the regions the program names. `schedule`, `on_trace_ready`,
`export_chrome_trace` and `tensorboard_trace_handler` (which writes a Chrome
trace file, readable by chrome://tracing and Perfetto) work as torch's do.
`rg.autograd.profiler.profile` and `record_function` are the same objects.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import socket
import time
from collections.abc import Callable

from .primitive import ArgumentError

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0,
             skip_first: int = 0, skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """The action for each step number: skip `skip_first` steps, then cycles of `wait`
    idle, `warmup` and `active` recorded steps (the last one saving), `repeat` times
    (0: forever). Like `torch.profiler.schedule`."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ArgumentError("schedule(): invalid profiler schedule arguments")

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


class FunctionEvent:
    """One timed region: `name`, `start_us`/`end_us`, `cpu_time_total` and
    `self_cpu_time_total` in microseconds, `cpu_parent`, `cpu_children`."""

    def __init__(self, name: str, start_ns: int, parent: FunctionEvent | None) -> None:
        self.name = self.key = name
        self.start_ns, self.end_ns = start_ns, start_ns
        self.cpu_parent = parent
        self.cpu_children: list[FunctionEvent] = []
        self.count = 1

    @property
    def start_us(self) -> float:
        return self.start_ns / 1e3

    @property
    def end_us(self) -> float:
        return self.end_ns / 1e3

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    cpu_time = cpu_time_total

    def __repr__(self) -> str:
        return f"<FunctionEvent {self.name}: {self.cpu_time_total:.1f} us>"


class FunctionEventAvg:
    """Every region of one name together (`key_averages`): `count`, totals and the mean."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    def add(self, e: FunctionEvent) -> FunctionEventAvg:
        self.count += 1
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        return self

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self) -> str:
        return f"<FunctionEventAvg {self.key}: {self.count} calls, {self.cpu_time_total:.1f} us>"


def _fmt(us: float) -> str:
    return f"{us / 1e3:.3f}ms" if us >= 1e3 else f"{us:.3f}us"


class EventList(list):
    """A list of events with `table()` and `key_averages()`, as torch's."""

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        groups: dict[str, FunctionEventAvg] = {}
        for e in self:
            groups.setdefault(e.key, FunctionEventAvg(e.key)).add(e)
        return EventList(groups.values())

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width:
              int = 55, header: str | None = None, top_level_events_only: bool = False,
              **kwargs) -> str:
        """The events as text: name, self and total CPU time (with their shares of all
        time), the mean, and the number of calls; sorted by `sort_by` (an attribute such
        as "cpu_time_total" or "self_cpu_time_total", largest first)."""
        rows = list(self)
        if sort_by:
            key = sort_by.replace("cpu_time", "cpu_time_total") if sort_by == "cpu_time" \
                else sort_by
            if rows and not hasattr(rows[0], key):
                raise AttributeError(f"table(): cannot sort by {sort_by!r}")
            rows.sort(key=lambda e: getattr(e, key), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total = sum(e.self_cpu_time_total for e in self) or 1.0
        width = min(max([len("Name")] + [len(e.key) for e in rows]), max_name_column_width)
        cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "# of Calls"]
        line = "-" * width + "  " + "  ".join("-" * 12 for _ in cols) + "  "
        out = [line, f"{'Name':>{width}}  " + "  ".join(f"{c:>12}" for c in cols) + "  ", line]
        for e in rows:
            cells = [f"{100 * e.self_cpu_time_total / total:.2f}%", _fmt(e.self_cpu_time_total),
                     f"{100 * e.cpu_time_total / total:.2f}%", _fmt(e.cpu_time_total),
                     _fmt(e.cpu_time_total / max(e.count, 1)), str(e.count)]
            out.append(f"{e.key[:width]:>{width}}  " + "  ".join(f"{c:>12}" for c in cells)
                       + "  ")
        out += [line, f"Self CPU time total: {_fmt(total)}", ""]
        return ((header + "\n") if header else "") + "\n".join(out)

    def total_average(self) -> FunctionEventAvg:
        avg = FunctionEventAvg("Total")
        for e in self:
            avg.count += e.count
            avg.cpu_time_total += e.cpu_time_total
            avg.self_cpu_time_total += e.self_cpu_time_total
        return avg

    def __str__(self) -> str:
        return self.table()


_active: list[profile] = []  # the profilers recording now (innermost last)


class record_function:
    """Time a region under `name` in every active profiler: a context manager or, with
    `@record_function("name")`, a decorator. Outside a profiler it costs two calls."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self._events: list[tuple[profile, FunctionEvent]] = []

    def __enter__(self) -> record_function:
        now = time.perf_counter_ns()
        self._events = [(p, p._open(self.name, now)) for p in _active if p._recording]
        return self

    def __exit__(self, *exc) -> None:
        now = time.perf_counter_ns()
        for p, e in reversed(self._events):
            p._close(e, now)
        self._events = []

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper


class profile:
    """Record the timed regions of the block: `with profile() as prof: ...`, then
    `prof.key_averages().table(...)`, `prof.events()`, `prof.export_chrome_trace(path)`.
    With `schedule`, `prof.step()` moves through the steps and `on_trace_ready(prof)` is
    called after each active span. Takes torch.profiler's and torch.autograd.profiler's
    keyword arguments (`activities`, `record_shapes`, `profile_memory`, `with_stack`,
    `use_cuda`, `enabled`, ...); only CPU wall-clock times are measured."""

    def __init__(self, *args, activities=None, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, enabled: bool = True,
                 **kwargs) -> None:
        self.activities = activities
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.enabled = enabled
        self.step_num = 0
        self._events: list[FunctionEvent] = []
        self._stack: list[FunctionEvent] = []
        self._recording = False
        self._step_event: record_function | None = None

    # -- recording
    def _open(self, name: str, now: int) -> FunctionEvent:
        e = FunctionEvent(name, now, self._stack[-1] if self._stack else None)
        if e.cpu_parent is not None:
            e.cpu_parent.cpu_children.append(e)
        self._stack.append(e)
        self._events.append(e)
        return e

    def _close(self, e: FunctionEvent, now: int) -> None:
        e.end_ns = now
        if e in self._stack:
            self._stack.remove(e)

    def _action(self) -> ProfilerAction:
        return ProfilerAction.RECORD if self.schedule is None else self.schedule(self.step_num)

    def start(self) -> None:
        if not self.enabled:
            return
        _active.append(self)
        self._recording = self._action() in (ProfilerAction.RECORD,
                                             ProfilerAction.RECORD_AND_SAVE)
        self._begin_step()

    def stop(self) -> None:
        if not self.enabled or self not in _active:
            return
        self._end_step()
        _active.remove(self)
        was = self._action() if self.schedule is not None else ProfilerAction.RECORD_AND_SAVE
        self._recording = False
        if self.on_trace_ready is not None and was in (ProfilerAction.RECORD,
                                                       ProfilerAction.RECORD_AND_SAVE):
            self.on_trace_ready(self)

    def _begin_step(self) -> None:
        if self.schedule is not None and self._recording:
            self._step_event = record_function(f"ProfilerStep#{self.step_num}")
            self._step_event.__enter__()

    def _end_step(self) -> None:
        if self._step_event is not None:
            self._step_event.__exit__(None, None, None)
            self._step_event = None

    def step(self) -> None:
        """Mark the end of a training step (with `schedule`: move to the next action)."""
        if not self.enabled:
            return
        self._end_step()
        before = self._action()
        self.step_num += 1
        after = self._action()
        if before == ProfilerAction.RECORD_AND_SAVE and self.on_trace_ready is not None:
            self.on_trace_ready(self)
        if after in (ProfilerAction.WARMUP, ProfilerAction.NONE) and \
                before == ProfilerAction.RECORD_AND_SAVE:
            self._events, self._stack = [], []
        self._recording = after in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        self._begin_step()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- results
    def events(self) -> EventList:
        """Every recorded region, in the order they began."""
        return EventList(self._events)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """The regions grouped by name (`table()` prints them)."""
        return self.events().key_averages()

    def table(self, *args, **kwargs) -> str:
        return self.events().table(*args, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        """Write the regions as a Chrome trace (JSON 'X' events, microseconds)."""
        pid = os.getpid()
        events = [{"name": e.name, "ph": "X", "cat": "user_annotation", "ts": e.start_us,
                   "dur": e.cpu_time_total, "pid": pid, "tid": 0} for e in self._events]
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An `on_trace_ready` that writes each trace into `dir_name` as
    `<worker>.<time>.pt.trace.json` (gzipped with `use_gzip`)."""
    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{worker}.{time.time_ns()}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                dst.write(src.read())
            os.remove(path)
    return handler
