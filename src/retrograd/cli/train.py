"""`retrograd train`: the main job. Train a task's model and keep a record of the run.

What is learned comes from a task (`digits.Digits`: an MLP or a small CNN
on the 8x8 digits); this module owns what every task shares: the flags, the
checks on them, the run folder, the training loop (SGD with Nesterov
momentum and a cosine learning-rate decay), the progress bar, and the files.

The run folder gets `metrics.json` (rewritten after every epoch), the
checkpoint `model.npz` (the last finished epoch; `rg.load` it and
`load_state_dict`), `curves.png` and a picture of the model's graph. Every
flag is checked before the folder is made, so a bad argument writes nothing.
A run whose loss stops being finite ends with status 1, Ctrl-C with status
130; both keep what the finished epochs wrote.

`--data PATH` trains on the user's own data (the task reads it). With
`--distributed`, under `mpiexec -n N`, each rank trains on its share of every
global batch (`--batch-size` is the global batch): rank 0's initial weights are
broadcast, gradients are averaged by allreduce before each step, so the run
follows one process's curve up to rounding; rank 0 alone evaluates, shows the
progress bar and writes the run folder.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from .. import creation, cuda, devices, nn, optim, serialization
from ..tensor import Tensor
from .digits import Digits, build_model
from .errors import CommandFailed, UsageError
from .names import Names
from .options import non_negative_int, positive_float, positive_int
from .runfiles import (
    CHECKPOINT,
    CURVES,
    GRAPH_PAGE,  # noqa: F401 (the page the graph is drawn on)
    METRICS,
    draw_graph,
)
from .runfiles import make_folder as _make_folder
from .runfiles import replace as _replace
from .runfiles import train_extras as _train_extras

__all__ = ["add_parser", "run", "settings", "step", "Settings", "Task", "TASKS",
           "build_model"]


class Task(Protocol):
    """What `retrograd train` needs from a kind of data (`digits.Digits` is one)."""

    name: ClassVar[str]
    models: ClassVar[tuple[str, ...]]  # the first is the default
    defaults: ClassVar[dict[str, dict[str, Any]]]  # per model: epochs, batch_size, lr
    headline: ClassVar[str]  # the key of `evaluate` the run is judged by

    def __init__(self, model: str, data: str | None = None) -> None: ...
    def load(self) -> None: ...  # ImportError when an extra is missing
    def build_model(self) -> nn.Module: ...
    def batches(self, batch_size: int, seed: int,
                shard: tuple[int, int] | None = None) -> Any: ...  # iterable, with len()
    def loss(self, model: nn.Module, batch: Any) -> Any: ...  # a scalar Tensor
    def evaluate(self, model: nn.Module) -> dict[str, float]: ...  # train_*/test_* numbers
    def summary(self, row: dict[str, float]) -> str: ...  # e.g. "test accuracy 97.50%"
    def example(self, model: nn.Module) -> tuple[Any, dict]: ...  # (loss, labels) to draw
    def info(self) -> dict[str, Any]: ...  # facts for metrics.json


TASKS: dict[str, type[Task]] = {"digits": Digits, "names": Names}
DEFAULT_TASK = "digits"
MOMENTUM = 0.9


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`retrograd train [--model M] [--epochs N] [--batch-size N] [--lr X] [--seed N]
    [--out DIR]`: the flags every task shares."""
    parser = subparsers.add_parser("train", help="train a model on the handwritten digits "
                                   "(or, with --task names, a language model on names)")
    parser.add_argument("--task", default=DEFAULT_TASK, choices=tuple(TASKS),
                        help=f"what to learn (default: {DEFAULT_TASK})")
    parser.add_argument("--model", default=None, metavar="MODEL",
                        help="; ".join(f"{name}: {{{','.join(t.models)}}} (default "
                                       f"{t.models[0]})" for name, t in TASKS.items()))
    parser.add_argument("--epochs", type=positive_int, default=None, metavar="N")
    parser.add_argument("--steps", type=positive_int, default=None, metavar="N",
                        help="optimisation steps (names)")
    parser.add_argument("--jit", action=argparse.BooleanOptionalAction, default=None,
                        help=Names.jit_help)
    parser.add_argument("--batch-size", type=positive_int, default=None, metavar="N")
    parser.add_argument("--lr", type=positive_float, default=None, metavar="X",
                        help="initial learning rate")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N",
                        help="initial weights and batch order (default: 0)")
    parser.add_argument("--out", default="runs/latest", metavar="DIR",
                        help="the run folder (default: runs/latest)")
    parser.add_argument("--data", default=None, metavar="PATH",
                        help="train on your own data: for digits' models an .npz (X_train, "
                             "y_train, X_test, y_test, or X, y) or a folder of MNIST IDX files; "
                             "for names a UTF-8 text file, one item per line")
    parser.add_argument("--device", default=None, type=_device_flag, metavar="DEVICE",
                        help="cpu or cuda[:N] (default: cuda when a GPU and CuPy are there, "
                             "else cpu)")
    parser.add_argument("--distributed", action="store_true",
                        help="data-parallel over MPI: run under mpiexec -n N (the [dist] "
                             "extra); --batch-size is the global batch")
    parser.set_defaults(run=run)
    return parser


@dataclass(frozen=True)
class Settings:
    """One run's settings: the flags, with the task's defaults filled in."""

    task: str
    model: str
    epochs: int
    batch_size: int
    lr: float
    seed: int
    out: str
    data: str | None = None
    distributed: bool = False
    steps: int | None = None  # tasks counted in steps (names) instead of epochs
    jit: bool | None = None  # None: the task's choice per model
    device: str = "cpu"  # where the model and its batches live


def settings(args: argparse.Namespace) -> Settings:
    """The run's settings from parsed flags; `UsageError` for a combination that cannot run."""
    task_name = getattr(args, "task", None) or DEFAULT_TASK
    task = TASKS[task_name]
    model = args.model or task.models[0]
    if model not in task.models:
        raise UsageError(f"argument --model: unknown model {model!r} for the {task_name} task "
                         f"(choose from {', '.join(task.models)})")
    cfg = dict(task.defaults[model])
    for key in ("epochs", "steps", "jit"):
        if getattr(args, key, None) is not None and cfg.get(key) is None:
            raise UsageError(f"argument --{key}: not used by the {task_name} task")
    for key in cfg:
        if getattr(args, key, None) is not None:
            cfg[key] = getattr(args, key)
    data = getattr(args, "data", None)
    if data is not None and not Path(data).exists():
        raise UsageError(f"argument --data: {data!r} does not exist")
    return Settings(task=task_name, model=model, seed=args.seed, out=str(args.out), data=data,
                    distributed=bool(getattr(args, "distributed", False)),
                    device=_resolve_device(getattr(args, "device", None)
                                           or getattr(task, "default_device", None)), **cfg)


def _device_flag(text: str) -> str:
    """`--device`: cpu, cuda or cuda:N (checked for availability when the run starts)."""
    try:
        kind, _ = devices.parse(text)
    except (TypeError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if kind not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"unknown device {text!r}; choose cpu or cuda[:N]")
    return text


def _resolve_device(flag: str | None) -> str:
    """The run's device: the flag's, or cuda when available, else cpu."""
    if flag is None:
        return "cuda:0" if cuda.is_available() else "cpu"
    if devices.parse(flag)[0] == "cuda" and not cuda.is_available():
        raise UsageError("argument --device: cuda is not available (it needs CuPy, pip install "
                         "'retrograd[gpu]', and an NVIDIA GPU); use --device cpu")
    return str(devices.device(flag))


def on_device(batch: Any, device: str) -> Any:
    """A batch (a Tensor or a tuple/list of them) moved to `device`."""
    if isinstance(batch, Tensor):
        return batch.to(device)
    if isinstance(batch, (tuple, list)):
        return type(batch)(on_device(b, device) for b in batch)
    return batch


def step(task: Task, model: nn.Module, opt: optim.Optimizer, batch: Any,
         weight: float = 1.0) -> float:
    """One optimisation step on `batch`; returns the loss before the update. `weight`
    scales the loss's gradient (a rank's share of an unevenly split global batch)."""
    loss = task.loss(model, batch)
    if weight != 1.0:
        loss = loss * weight
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss.item())


class _Diverged(Exception):
    def __init__(self, loss: float, epoch: int, step: int) -> None:
        super().__init__(loss, epoch, step)
        self.loss, self.epoch, self.step = loss, epoch, step


def run(args: argparse.Namespace) -> int:
    """Train per the parsed command-line `args`; return the exit status."""
    cfg = settings(args)
    if hasattr(TASKS[cfg.task], "run"):  # a task with its own loop (names: steps, AdamW)
        return TASKS[cfg.task].run(cfg)
    world = _world(cfg) if cfg.distributed else None
    lead = world is None or world.rank == 0  # evaluates, reports and writes
    try:
        plt, tqdm = _train_extras()
        task = TASKS[cfg.task](cfg.model, **({"data": cfg.data} if cfg.data else {}))
        task.load()
    except ImportError as e:
        raise CommandFailed(f"`retrograd train` needs scikit-learn, tqdm and matplotlib (the "
                            f"[train] extra): pip install 'retrograd[train]' ({e})") from None
    except (ValueError, OSError) as e:
        raise UsageError(f"argument --data: {e}") from None
    out = _make_folder(Path(cfg.out)) if lead else None
    creation.manual_seed(cfg.seed)
    model = task.build_model().to(cfg.device)
    opt = optim.SGD(model.parameters(), lr=cfg.lr, momentum=MOMENTUM, nesterov=True)
    if world is not None:
        from .. import distributed

        distributed.broadcast_parameters(model)
        opt = distributed.DistributedOptimizer(opt)
    record = _Record(out, cfg, task, model, lead)

    t0 = time.perf_counter()
    bar = tqdm(range(1, cfg.epochs + 1), desc=cfg.model, unit="epoch", file=sys.stderr,
               disable=not lead)
    try:
        # A diverging run is caught by its loss; NumPy's overflow warnings on the way there
        # would only bury that one-line message.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            _epochs_loop(cfg, task, model, opt, record, bar, t0)
    except KeyboardInterrupt:
        bar.close()
        kept = record.stop("interrupted", time.perf_counter() - t0, plt)
        print(f"retrograd: interrupted in epoch {record.epoch} of {cfg.epochs}; {kept}",
              file=sys.stderr)
        return 130
    except _Diverged as d:
        bar.close()
        kept = record.stop("diverged", time.perf_counter() - t0, plt)
        raise CommandFailed(f"training diverged: the loss became {d.loss} at step {d.step} "
                            f"(epoch {d.epoch}); try a smaller --lr (now {cfg.lr}); "
                            f"{kept}") from None
    bar.close()
    record.finish(time.perf_counter() - t0, plt)
    if lead:
        last = record.history[-1]
        ranks = f", {world.size} ranks" if world is not None else ""
        print(f"{task.summary(last)} ({cfg.model}, {_epochs(cfg.epochs)}{ranks}, "
              f"{record.seconds:.1f} s); wrote {out}{os.sep}"
              f"{{{', '.join(record.files.values())}}}")
    return 0


def _world(cfg: Settings):
    """The MPI world for a distributed run; the global batch must split evenly."""
    from .. import distributed

    try:
        world = distributed.init()
    except (ImportError, RuntimeError) as e:
        raise CommandFailed(f"--distributed: {e}") from None
    if cfg.batch_size % world.size:
        raise UsageError(f"argument --batch-size: the global batch {cfg.batch_size} does not "
                         f"split evenly over {world.size} ranks")
    return world


def _epochs_loop(cfg: Settings, task: Task, model: nn.Module, opt: optim.Optimizer,
                 record: _Record, bar, t0: float) -> None:
    """The training loop: per batch a step at the cosine-decayed learning rate; per epoch
    an evaluation, recorded. Raises `_Diverged` when the loss is no longer finite."""
    shard = None
    if cfg.distributed:
        from .. import distributed

        world = distributed.init()
        shard = (world.rank, world.size)
    loader = task.batches(cfg.batch_size, cfg.seed, **({"shard": shard} if shard else {}))
    total_steps = cfg.epochs * len(loader)
    steps = 0
    for epoch in bar:
        record.epoch = epoch
        model.train()
        for batch in loader:
            lr = cfg.lr * 0.5 * (1.0 + math.cos(math.pi * steps / total_steps))
            for group in opt.param_groups:
                group["lr"] = lr
            if cfg.device != "cpu":
                batch = on_device(batch, cfg.device)
            if shard is None:
                loss = step(task, model, opt, batch)
            else:
                # Ranks' gradients are averaged, so a rank's mean loss over a short last
                # batch split unevenly is weighted by its share; every rank then sees the
                # same loss, so all stop together when it is no longer finite.
                rows = len(batch[0])
                weight = rows * shard[1] / distributed.allreduce(rows, op="sum")
                loss = distributed.allreduce(step(task, model, opt, batch, weight), op="sum")
                loss /= shard[1]
            steps += 1
            if not math.isfinite(loss):
                raise _Diverged(loss, epoch, steps)
        row = {"epoch": epoch, "lr": lr, **(task.evaluate(model) if record.lead else {})}
        record.epoch_done(row, time.perf_counter() - t0)
        bar.set_description(f"{cfg.model} epoch {epoch}/{cfg.epochs}", refresh=False)
        bar.set_postfix({k: _short(k, v) for k, v in row.items() if k not in ("epoch", "lr")})


def _epochs(n: int) -> str:
    return f"{n} epoch{'s' if n != 1 else ''}"


def _short(key: str, value: float) -> str:
    return f"{value:.2%}" if key.endswith("_acc") else f"{value:.4f}"


class _Record:
    """The run folder's files, kept up to date as epochs finish."""

    def __init__(self, out: Path | None, cfg: Settings, task: Task, model: nn.Module,
                 lead: bool = True) -> None:
        self.out, self.cfg, self.task, self.model = out, cfg, task, model
        self.lead = lead  # False on the other ranks of a distributed run: they write nothing
        self.history: list[dict] = []
        self.epoch = 0  # the epoch under way
        self.files: dict[str, str] = {}
        self.seconds = 0.0
        self.status = "running"
        self.extra: dict[str, Any] = {}

    def epoch_done(self, row: dict, seconds: float) -> None:
        """Keep the epoch's numbers and the model after it (checkpoint, then metrics)."""
        self.history.append(row)
        self.seconds = seconds
        if not self.lead:
            return
        _replace(self.out / CHECKPOINT,
                 lambda tmp: serialization.save(self.model.state_dict(), tmp))
        self.files["checkpoint"] = CHECKPOINT
        self._write_metrics()

    def stop(self, status: str, seconds: float, plt) -> str:
        """Record an early end; what was kept, in words."""
        self.status, self.seconds = status, seconds
        if not self.lead:
            return "rank 0 keeps the record"
        if self.history:
            self._plot(plt)
        self._write_metrics()
        done = len(self.history)
        if not done:
            return f"no epoch finished; wrote {self.out / METRICS}"
        return (f"kept the record of {_epochs(done)} finished in "
                f"{self.out}{os.sep}{{{', '.join(self.files.values())}}}")

    def finish(self, seconds: float, plt) -> None:
        """The end of a full run: check the checkpoint, draw the curves and the graph."""
        self.status, self.seconds = "finished", seconds
        if not self.lead:
            return
        reloaded = self.task.build_model().to(self.cfg.device)
        reloaded.load_state_dict(serialization.load(self.out / CHECKPOINT))
        self.extra[_long("checkpoint_" + self.task.headline)] = self.task.evaluate(reloaded)[
            self.task.headline]
        self._plot(plt)
        self._draw_graph()
        self._write_metrics()

    def _write_metrics(self) -> None:
        self.files["metrics"] = METRICS
        cfg, last = self.cfg, (self.history[-1] if self.history else {})
        metrics = {
            "model": cfg.model, "status": self.status, "seed": cfg.seed,
            "epochs": cfg.epochs, "epochs_done": len(self.history),
            "batch_size": cfg.batch_size, "lr": cfg.lr, "ranks": self._ranks(),
            "optimizer": f"SGD(momentum={MOMENTUM}, nesterov=True), cosine decay",
            **self.task.info(),
            "parameters": int(sum(p.size for p in self.model.parameters())),
            **{_long(k): v for k, v in last.items() if k.startswith("test_")},
            **self.extra,
            "train_seconds": self.seconds, "history": self.history,
            "files": dict(self.files),
            "platform": {"python": platform.python_version(), "numpy": np.__version__},
        }
        _replace(self.out / METRICS,
                 lambda tmp: tmp.write_text(json.dumps(metrics, indent=2) + "\n"))

    def _ranks(self) -> int:
        if not self.cfg.distributed:
            return 1
        from .. import distributed

        return distributed.init().size

    def _plot(self, plt) -> None:
        _plot(plt, self.history, self.out / CURVES, self.cfg.model)
        self.files["curves"] = CURVES

    def _draw_graph(self) -> None:
        """The graph of the loss on one example with values and gradients: SVG through
        Graphviz, DOT text where Graphviz is missing; laid out top to bottom on a page."""
        self.model.to("cpu")  # the picture reads values and gradients on the host
        try:
            loss, labels = self.task.example(self.model)
            self.files["graph"] = draw_graph(self.out, loss, labels,
                                             f"{self.cfg.model}: the loss on one example")
        finally:
            self.model.zero_grad()


def _long(key: str) -> str:
    return key.replace("_acc", "_accuracy")


def _plot(plt, history: list[dict], path: Path, name: str) -> None:
    """Loss and accuracy per epoch, train and test; markers, so one epoch shows as points."""
    from matplotlib.ticker import MaxNLocator

    epochs = [h["epoch"] for h in history]
    panels = [("loss", "cross-entropy", "_loss", 1.0), ("accuracy", "accuracy (%)", "_acc", 100)]
    panels = [p for p in panels if f"train{p[2]}" in history[0]]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (title, ylabel, suffix, scale) in zip(axes[0], panels):
        for split in ("train", "test"):
            key = split + suffix
            if key in history[0]:
                ax.plot(epochs, [scale * h[key] for h in history], marker="o", markersize=4,
                        label=split)
        ax.set_xlabel("epoch")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # whole epochs
        if len(epochs) == 1:
            ax.set_xlim(epochs[0] - 0.5, epochs[0] + 0.5)
        ax.legend()
    fig.suptitle(f"retrograd train --model {name}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
