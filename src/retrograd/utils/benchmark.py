"""`rg.utils.benchmark`: timing statements the way `torch.utils.benchmark` does, so that
benchmarking code and PyTorch's benchmark recipe run on retrograd unchanged.

    t = rg.utils.benchmark.Timer("x @ x", globals={"x": x}, label="matmul")
    m = t.blocked_autorange(min_run_time=0.2)   # or t.timeit(100), t.adaptive_autorange()
    m.median, m.iqr, m.times                    # seconds per run
    rg.utils.benchmark.Compare([m1, m2]).print()

A `Measurement` holds raw times of blocks of `number_per_run` runs; its statistics
(median, IQR, mean, a significant-figure estimate) and its printed form follow torch's.
`num_threads` sets retrograd's threads (and BLAS's) for the timed block only. Python
statements only: torch's C++ statements and its Callgrind and Fuzzer tools are refused.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
import sys
import timeit as _timeit
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

__all__ = ["Timer", "Measurement", "TaskSpec", "Compare", "Language", "Colorize",
           "select_unit", "trim_sigfig"]

Number = numbers.Number  # (torch's module exports these two names too)
timer = _timeit.default_timer

_WARN, _GROSS = 0.1, 0.25 # IQR / median from which a measurement is flagged, and strongly
_UNITS = {-3: "ns", -2: "us", -1: "ms"}


class Language(enum.Enum):
    """The statement's language: Python (C++ is refused)."""

    PYTHON = 0
    CPP = 1


class Colorize(enum.Enum):
    """How `Compare` colours its cells: not at all, by column or by row."""

    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def select_unit(t: float) -> tuple[str, float]:
    """The unit to show a time of `t` seconds in, and its size in seconds (torch's rule,
    its float32 logarithm included)."""
    k = int(np.floor(np.log10(np.float32(t)) / 3)) if t > 0 else 0
    unit = _UNITS.get(k, "s")  # (below a nanosecond too, as torch)
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def trim_sigfig(x: float, n: int) -> float:
    """`x` rounded to `n` significant figures, in torch's precision: a NumPy float keeps
    its own, a Python float is rounded in float32 (as a tensor made of it would be)."""
    if not isinstance(n, int):
        raise AssertionError("Number of significant figures must be an integer")
    dt = type(x) if isinstance(x, (np.float32, np.float64)) else np.float32
    digits = int(np.ceil(np.log10(dt(x))))
    scale = dt(10.0) ** dt(digits - n)
    return float(np.round(dt(x) / scale) * scale)


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed, and how it is named in reports."""

    stmt: str
    setup: str = "pass"
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (and sub-label), else the statement."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" in self.stmt:
            body = "\n".join("  " + line for line in self.stmt.splitlines())
            return (f"stmt: ({self.sub_label})" if self.sub_label else "stmt:") + "\n" + body
        return self.stmt + (f": {self.sub_label}" if self.sub_label else "")

    def summarize(self) -> str:
        """The title, the description under it, and a blank line after a many-line
        statement shown as the title."""
        blank = "\n" if self.label is None and "\n" in self.stmt else ""
        return self.title + blank + (f"\n{self.description}" if self.description else "")


class Measurement:
    """Raw times of `len(raw_times)` blocks of `number_per_run` runs of one TaskSpec."""

    def __init__(self, number_per_run: int, raw_times: list[float], task_spec: TaskSpec,
                 metadata: dict | None = None) -> None:
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    def __getattr__(self, name: str) -> Any:  # stmt, label, env, num_threads, ...
        if name in {f.name for f in dataclasses.fields(TaskSpec)} | {"title"}:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self) -> list[float]:
        """Seconds per run, one per block."""
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q: float) -> float:
        return float(np.quantile(np.asarray(self.times, dtype=np.float64), q))

    @property
    def median(self) -> float:
        """The median time per run, in seconds."""
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        """The mean time per run, in seconds."""
        return math.fsum(self.times) / len(self.times)

    @property
    def iqr(self) -> float:
        """The interquartile range of the times per run, in seconds."""
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def as_row_name(self) -> str:
        """The name of its row in a `Compare` table."""
        return self.sub_label or self.stmt or "[Unknown]"

    def meets_confidence(self, threshold: float = _WARN) -> bool:
        """Whether the spread (IQR over median) is below `threshold`."""
        return self.iqr / self.median < threshold

    @property
    def has_warnings(self) -> bool:
        """Whether the spread is 10% of the median or more (printed as a warning)."""
        return not self.meets_confidence(_WARN)

    @property
    def significant_figures(self) -> int:
        """How many figures the spread of the middle half supports (1-4; 4 for a single
        block): the digits of its mean over a 90% confidence interval of that mean."""
        times = sorted(self.times)
        n = len(times)
        mid = np.asarray(times[n // 4:math.ceil(3 * n / 4)], dtype=np.float64)
        ci = 1.645 * float(mid.std()) / math.sqrt(len(mid))
        if ci == 0:
            return 4
        return int(min(max(math.floor(math.log10(self.median / ci)), 1), 4))

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Measurements of the same TaskSpec pooled into one (per-run times, one run per
        block), in order of first appearance."""
        pooled: dict[TaskSpec, list[float]] = {}
        for m in measurements:
            pooled.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec) for spec, times in pooled.items()]

    def __repr__(self) -> str:
        unit, scale = select_unit(self.median)
        head = f"<{type(self).__module__}.Measurement object at {hex(id(self))}>"
        lines = [head, self.task_spec.summarize()]
        n = len(self.times)
        if n > 1:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            if n >= 4:
                q1, q3 = self._quantile(0.25), self._quantile(0.75)
                lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                             f"({q1 / scale:.2f} to {q3 / scale:.2f})")
            lines.append(f"  {n} measurements, {self.number_per_run} runs per measurement, "
                         f"{self._threads()}")
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
            lines.append(f"  1 measurement, {self.number_per_run} runs , {self._threads()}")
        if self.has_warnings:
            why = ("This could indicate system fluctuation." if self.meets_confidence(_GROSS)
                   else "This suggests significant environmental influence.")
            lines.append(f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% "
                         f"of the median measurement.\n           {why}")
        return "\n".join(lines)

    def _threads(self) -> str:
        k = self.num_threads
        return f"{k} thread" + ("s" if k != 1 else "")


class Timer:
    """Times a Python statement (with `setup` run first, names from `globals`) on
    `num_threads` threads; `rg` is among the statement's names."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict | None = None,  # noqa: A002
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("Timer: C++ statements are not supported by retrograd "
                                      "(Python statements only)")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`")
        names = {"rg": sys.modules[__package__.rpartition(".")[0]], **(globals or {})}
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=names)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, label=label, sub_label=sub_label,
                                   description=description, env=env, num_threads=num_threads)

    def _run(self, number: int) -> float:
        from ..api.modes import get_num_threads, set_num_threads
        before = get_num_threads()
        set_num_threads(self._task_spec.num_threads)
        try:
            return self._timer.timeit(number)
        finally:
            set_num_threads(before)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of `number` runs (after one untimed warm-up block)."""
        if number < 0:
            raise ValueError(f"timeit(): number of runs must be >= 0, got {number}")
        self._run(max(number // 100, 2))
        return Measurement(number, [self._run(number)], self._task_spec)

    def _block_size(self, min_run_time: float) -> int:
        """Runs per block: enough for a block of about min_run_time / 1000 (at least 1 ms)."""
        goal = max(min_run_time / 1000, 1e-3)
        number = 1
        while True:
            t = self._run(number)
            if t >= goal or number >= 10 ** 9:
                return number
            number *= 10

    def _blocks(self, number: int, stop: Callable[[list[float]], bool],
                callback: Callable | None) -> Measurement:
        times: list[float] = []
        while True:
            t = self._run(number)
            times.append(t)
            if callback is not None:
                callback(number, t)
            if stop(times):
                return Measurement(number, times, self._task_spec)

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of a fixed size until `min_run_time` seconds of them are measured."""
        number = self._block_size(min_run_time)
        return self._blocks(number, lambda ts: sum(ts) >= min_run_time, callback)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None) -> Measurement:
        """Blocks until the spread is below `threshold` (and `min_run_time` has passed),
        or `max_run_time` seconds are spent."""
        number = self._block_size(min_run_time=0.05)

        def stop(ts: list[float]) -> bool:
            total = sum(ts)
            if total < min_run_time or len(ts) < 4:
                return total >= max_run_time
            return Measurement(number, ts, self._task_spec).meets_confidence(threshold) \
                or total >= max_run_time

        return self._blocks(number, stop, callback)

    def collect_callgrind(self, *args, **kwargs):
        """Not provided: Callgrind is torch's C++ tooling."""
        raise NotImplementedError("Timer.collect_callgrind: Callgrind is not supported by "
                                  "retrograd")


class Compare:
    """Measurements as text tables: one per label, a row per (threads, sub-label or
    statement), a column per description, each cell the median in the table's unit."""

    def __init__(self, results: Iterable[Measurement]) -> None:
        self._results: list[Measurement] = []
        self._trim = self._warnings = False
        self._colorize = Colorize.NONE
        self.extend_results(results)

    def extend_results(self, results: Iterable[Measurement]) -> None:
        """Add Measurements to the tables."""
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} "
                                 "instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Show each median only to the figures its spread supports."""
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        """Highlight the best cell of each column (or row) in the terminal's colours."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark noisy cells with their spread, as " (! 12%)"."""
        self._warnings = True

    def print(self) -> None:
        """Print the tables."""
        print(str(self))

    def __str__(self) -> str:
        merged = Measurement.merge(self._results)
        labels: dict = {}
        for m in merged:
            labels.setdefault(m.label, []).append(m)
        return "\n".join(self._table(label, ms) for label, ms in labels.items())

    def _table(self, label, ms: list[Measurement]) -> str:
        unit, scale = select_unit(min(m.median for m in ms))
        cols = list(dict.fromkeys(m.description for m in ms))
        rows = list(dict.fromkeys((m.num_threads, m.env, m.as_row_name) for m in ms))
        cell = {((m.num_threads, m.env, m.as_row_name), m.description): m for m in ms}
        show_env = any(r[1] for r in rows)
        names = ["  " + (f"({r[1]}) " if show_env else "") + r[2] for r in rows]
        values = [[self._cell(cell.get((r, c)), scale, rows, cols, cell) for c in cols]
                  for r in rows]
        width0 = max(map(len, names))
        widths = [max([len(c or "")] + [len(v[k]) for v in values])
                  for k, c in enumerate(cols)]
        header = "  |  ".join([" " * width0] + [(c or "").center(w) for c, w in zip(cols, widths)])
        total = len(header)
        title = f" {label or ''} "
        left = (total - 2 - len(title)) // 2
        out = ["[" + "-" * left + title + "-" * (total - 2 - len(title) - left) + "]", header]
        last = None
        for r, name, vals in zip(rows, names, values):
            if r[0] != last:
                out.append(f"{r[0]} threads: ".ljust(total - 4, "-"))
                last = r[0]
            out.append("  |  ".join([name.ljust(width0)] +
                                    [v.rjust(w) for v, w in zip(vals, widths)]))
        out.append(f"\nTimes are in {_ENGLISH[unit]} ({unit}).\n")
        return "\n".join(out)

    def _cell(self, m: Measurement | None, scale: float, rows, cols, cell) -> str:
        if m is None:
            return ""
        value = m.median / scale
        if self._trim:
            sig = m.significant_figures
            value = trim_sigfig(value, sig)
            lead = math.ceil(math.log10(value)) if value > 0 else 1
            text = f"{value:.{max(sig - lead, 0)}f}"
        else:
            text = f"{value:.1f}"
        if self._warnings and m.has_warnings:
            text += f" (! {m.iqr / m.median * 100:.0f}%)"
        if self._colorize is not Colorize.NONE:
            key = (m.num_threads, m.env, m.as_row_name)
            peers = ([cell[key, c] for c in cols if (key, c) in cell]
                     if self._colorize is Colorize.ROWWISE else
                     [cell[r, m.description] for r in rows if (r, m.description) in cell])
            best = min(p.median for p in peers)
            if m.median <= best * 1.01:
                text = "\033[92m\033[1m" + text + "\033[0m\033[0m"
        return text


_ENGLISH = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds"}
