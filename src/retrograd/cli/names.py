"""The names task of `retrograd train`: a character-level language model that makes up names.

The models are `retrograd.models.names` (bigram, MLP, RNN, GRU, transformer);
this module owns the run: the data (the 32,032 names shipped with the package,
or `--data FILE`, one item per line), a 90/10 split fixed by seed 0, shuffled
batches of padded sequences (targets at padding ignored by the loss), AdamW
with the learning rate cut tenfold for the last fifth of the steps, a
progress bar with the running loss, and the record: `metrics.json`,
`curves.png` (train and test loss against steps), the checkpoint `model.npz`,
the graph of one step's loss, and 20 names sampled at the end.

The step (`opt.zero_grad(); loss.backward(); opt.step()`) runs under `rg.jit`
for the models where that is faster (`JIT_DEFAULT`); `--jit`/`--no-jit` choose.
Bad data (missing, not UTF-8, empty, a single distinct character) is refused
before anything is written.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import creation, jit, nn, optim, serialization
from ..grad_mode import no_grad
from ..models import names as M
from ..nn import functional as F
from ..tensor import Tensor
from . import runfiles
from .errors import CommandFailed, UsageError

__all__ = ["Names", "JIT_DEFAULT"]

SPLIT_SEED = 0
TEST_FRACTION = 0.1
IGNORE = -1  # the target at padding (as in models.names.encode)
EVAL_CHUNK = 512
N_EVALS = 20  # evaluations of the test loss along a run
DECAY_AT = 0.8  # the learning rate is cut tenfold after this fraction of the steps
BETAS, WEIGHT_DECAY = (0.9, 0.99), 0.01
N_SAMPLES = 20
# rg.jit of the whole step, per model: on where it measured faster than eager mode (CPU
# time per step at the default batch: bigram 0.83x, mlp 0.90x, rnn 0.79x, gru 0.78x,
# transformer 0.93x of eager).
JIT_DEFAULT = {"transformer": True, "bigram": True, "mlp": True, "rnn": True, "gru": True}


class Names:
    """Learn to continue names one character at a time; judged by the test loss (nats per
    character, the end of each name included)."""

    name = "names"
    models = ("transformer", "bigram", "mlp", "rnn", "gru")
    defaults = {
        "transformer": {"epochs": None, "steps": 3000, "batch_size": 64, "lr": 2e-3},
        "bigram": {"epochs": None, "steps": 1000, "batch_size": 256, "lr": 0.1},
        "mlp": {"epochs": None, "steps": 4000, "batch_size": 64, "lr": 3e-3},
        "rnn": {"epochs": None, "steps": 4000, "batch_size": 64, "lr": 3e-3},
        "gru": {"epochs": None, "steps": 4000, "batch_size": 64, "lr": 3e-3},
    }
    for _m, _d in defaults.items():
        _d["jit"] = JIT_DEFAULT[_m]
    del _m, _d
    headline = "test_loss"
    default_device = None  # cuda when available, else cpu
    _on = ", ".join(m for m in models if JIT_DEFAULT[m])
    _off = ", ".join(m for m in models if not JIT_DEFAULT[m])
    jit_help = (f"names: run each training step under rg.jit (default: on where it measured "
                f"faster than eager: {_on}" + (f"; off for {_off}" if _off else "") + ")")
    del _on, _off

    def __init__(self, model: str, data: str | None = None) -> None:
        if model not in self.models:
            raise ValueError(f"unknown model {model!r} for the {self.name} task; choose from "
                             f"{', '.join(self.models)}")
        self.model, self.data = model, data

    def load(self) -> None:
        """Read and split the items, build the vocabulary, encode; `DataError` on bad data."""
        path = self.data if self.data is not None else M.default_data()
        items = M.read_items(path)
        self.vocab = M.Vocabulary.of(items)
        self.context = max(map(len, items)) + 1  # the longest item and its end token
        self.train_items, self.test_items = M.split(items, TEST_FRACTION, SPLIT_SEED)
        self.X_train, self.Y_train = M.encode(self.train_items, self.vocab, self.context)
        self.X_test, self.Y_test = M.encode(self.test_items, self.vocab, self.context)

    def build_model(self) -> nn.Module:
        return M.build(self.model, len(self.vocab), self.context)

    def batches(self, batch_size: int, seed: int):
        """Endless shuffled batches (x, y) of the training set, `batch_size` items each (the
        whole set when it is smaller); every pass over the data in a new order."""
        rng = np.random.default_rng(seed)
        n = len(self.X_train)
        size = min(batch_size, n)
        while True:
            order = rng.permutation(n)
            for start in range(0, n - size + 1, size):
                ix = order[start:start + size]
                yield Tensor(self.X_train[ix]), Tensor(self.Y_train[ix])

    def loss(self, model: nn.Module, batch) -> Tensor:
        """Mean cross-entropy over the batch's real characters (padding ignored)."""
        return M.loss(model, *batch)

    def split_loss(self, model: nn.Module, split: str) -> float:
        """Nats per character over a whole split (eval mode, no graph recorded)."""
        X, Y = (self.X_test, self.Y_test) if split == "test" else (self.X_train, self.Y_train)
        was_training = model.training
        model.eval()
        total = 0.0
        device = next(model.parameters()).device  # evaluate where the model is
        with no_grad():
            for start in range(0, len(X), EVAL_CHUNK):
                logits = model(Tensor(X[start:start + EVAL_CHUNK]).to(device))
                y = Tensor(Y[start:start + EVAL_CHUNK].reshape(-1)).to(device)
                total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y,
                                               ignore_index=IGNORE, reduction="sum").item())
        model.train(was_training)
        return total / int((Y != IGNORE).sum())

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        return {"train_loss": self.split_loss(model, "train"),
                "test_loss": self.split_loss(model, "test")}

    def summary(self, row: dict[str, float]) -> str:
        return f"test loss {row['test_loss']:.4f} nats/char"

    def example(self, model: nn.Module) -> tuple[Tensor, dict]:
        """The loss on the first test item, differentiated, and names for the picture."""
        x, y = Tensor(self.X_test[:1]), Tensor(self.Y_test[:1])
        loss = self.loss(model, (x, y))
        loss.backward()
        labels: dict[Any, str] = {p: n for n, p in model.named_parameters()}
        labels.update({x: f"tokens of {self.test_items[0]!r}", y: "targets", loss: "loss"})
        return loss, labels

    def info(self) -> dict[str, Any]:
        return {"task": self.name, "data": str(self.data) if self.data else "names (built in)",
                "split_seed": SPLIT_SEED, "n_train": len(self.train_items),
                "n_test": len(self.test_items), "vocabulary": "".join(self.vocab.chars),
                "context": self.context}

    def sample(self, model: nn.Module, n: int = N_SAMPLES, **kw) -> list[str]:
        return [self.vocab.decode(t) for t in M.sample(model, n, self.context, **kw)]

    @classmethod
    def run(cls, cfg) -> int:
        """`retrograd train --task names`: train per the settings `cfg`; the exit status."""
        return _Run(cls, cfg).run()


class _Diverged(Exception):
    pass


def _one_blas_thread() -> None:
    """Run BLAS on one thread from here on: the products here are small (64-256 wide), and
    threads waiting on each other cost more than they share, many times more on a busy
    machine. Needs threadpoolctl (installed with scikit-learn); without it, nothing changes
    (set OPENBLAS_NUM_THREADS=1 instead)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1, user_api="blas")


class _Run:
    """One training run of the names task and its run folder."""

    def __init__(self, task_cls: type[Names], cfg) -> None:
        self.cfg = cfg
        self.world = None  # a distributed run's MPI world; rank 0 alone evaluates and writes
        if cfg.distributed:
            from .. import distributed

            try:
                self.world = distributed.init()
            except (ImportError, RuntimeError) as e:
                raise CommandFailed(f"--distributed: {e}") from None
            if cfg.batch_size % self.world.size:
                raise UsageError(f"argument --batch-size: the global batch {cfg.batch_size} "
                                 f"does not split evenly over {self.world.size} ranks")
        self.lead = self.world is None or self.world.rank == 0
        try:
            self.plt, self.tqdm = runfiles.train_extras()
        except ImportError as e:
            raise CommandFailed(f"`retrograd train` needs tqdm and matplotlib (the [train] "
                                f"extra): pip install 'retrograd[train]' ({e})") from None
        self.task = task_cls(cfg.model, cfg.data)
        try:
            self.task.load()
        except M.DataError as e:
            raise UsageError(f"argument --data: {e}") from None
        self.history: list[dict] = []
        self.files: dict[str, str] = {}
        self.extra: dict[str, Any] = {}
        self.status, self.steps_done, self.seconds, self.cpu = "running", 0, 0.0, 0.0

    def run(self) -> int:
        cfg, task = self.cfg, self.task
        self.out = runfiles.make_folder(Path(cfg.out)) if self.lead else None
        creation.manual_seed(cfg.seed)
        self.model = model = task.build_model().to(cfg.device)
        opt = optim.AdamW(model.parameters(), lr=cfg.lr, betas=BETAS, weight_decay=WEIGHT_DECAY)
        if self.world is not None:
            from .. import distributed

            distributed.broadcast_parameters(model)
            opt = distributed.DistributedOptimizer(opt)

        def train_step(x: Tensor, y: Tensor) -> Tensor:
            # reads only the model and the optimizer (rg.jit guards all it can reach)
            loss = M.loss(model, x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        def shard_step(x: Tensor, y: Tensor) -> float:
            # this rank's rows of the global batch; its mean over its own characters is
            # weighted by its share of the batch's characters, since ranks' gradients are
            # averaged: the update is the one-process update
            from .. import distributed

            rank, size = self.world.rank, self.world.size
            per = len(x) // size
            x, y = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
            mine = int((y.numpy() != IGNORE).sum()) if cfg.device == "cpu" else \
                int((y != IGNORE).sum().item())
            weight = mine * size / distributed.allreduce(mine, op="sum")
            loss = M.loss(model, x, y) * weight
            opt.zero_grad()
            loss.backward()
            opt.step()
            return distributed.allreduce(float(loss.item()), op="sum") / size

        jitted = cfg.jit and self.world is None  # the allreduce runs outside rg.jit
        step = shard_step if self.world is not None else jit(train_step) if jitted \
            else train_step
        _one_blas_thread()
        t0, c0 = time.perf_counter(), time.process_time()
        bar = self.tqdm(total=cfg.steps, desc=f"{cfg.model}{' (jit)' if jitted else ''}",
                        unit="step", file=sys.stderr, dynamic_ncols=True,
                        disable=not self.lead)
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                self._loop(step, opt, bar, t0, c0)
        except KeyboardInterrupt:
            bar.close()
            if not self.lead:
                return 130
            kept = self._stop("interrupted", t0, c0)
            print(f"retrograd: interrupted at step {self.steps_done} of {cfg.steps}; {kept}",
                  file=sys.stderr)
            return 130
        except _Diverged as d:
            bar.close()
            kept = self._stop("diverged", t0, c0) if self.lead else "rank 0 keeps the record"
            raise CommandFailed(f"training diverged: the loss became {d.args[0]} at step "
                                f"{d.args[1]}; try a smaller --lr (now {cfg.lr}); {kept}") \
                from None
        bar.close()
        if not self.lead:
            return 0
        self._finish(t0, c0)
        ranks = f", {self.world.size} ranks" if self.world is not None else ""
        print(f"{task.summary(self.history[-1])} ({cfg.model}, {cfg.steps} steps{ranks}, "
              f"{self.seconds:.1f} s, {self.cpu:.1f} s CPU)")
        print("samples: " + " ".join(self.extra["samples"]))
        print(f"wrote {self.out}{os.sep}{{{', '.join(self.files.values())}}}")
        return 0

    def _loop(self, step, opt: optim.Optimizer, bar, t0: float, c0: float) -> None:
        cfg = self.cfg
        every = max(1, cfg.steps // N_EVALS)
        decay_at = max(1, round(DECAY_AT * cfg.steps))
        batches = self.task.batches(cfg.batch_size, cfg.seed)
        interval: list[float] = []
        running = None
        for s in range(1, cfg.steps + 1):
            lr = cfg.lr if s <= decay_at else cfg.lr * 0.1  # two values: jit traces twice
            for group in opt.param_groups:
                group["lr"] = lr
            batch = next(batches)
            if cfg.device != "cpu":
                batch = tuple(t.to(cfg.device) for t in batch)
            loss = step(*batch)
            loss = loss if isinstance(loss, float) else float(loss.item())
            if not math.isfinite(loss):
                raise _Diverged(loss, s)
            self.steps_done = s
            interval.append(loss)
            running = loss if running is None else 0.95 * running + 0.05 * loss
            bar.update(1)
            if s % 10 == 0 or s == cfg.steps:
                bar.set_postfix_str(f"loss {running:.4f}", refresh=False)
            if (s % every == 0 or s == cfg.steps) and self.lead:
                row = {"step": s, "lr": lr, "train_loss": float(np.mean(interval)),
                       "test_loss": self.task.split_loss(self.model, "test")}
                interval = []
                self.history.append(row)
                self.seconds = time.perf_counter() - t0
                self.cpu = time.process_time() - c0
                bar.set_postfix_str(f"loss {running:.4f} test {row['test_loss']:.4f}",
                                    refresh=False)
                self._checkpoint()

    def _checkpoint(self) -> None:
        runfiles.replace(self.out / runfiles.CHECKPOINT,
                            lambda tmp: serialization.save(self.model.state_dict(), tmp))
        self.files["checkpoint"] = runfiles.CHECKPOINT
        self._write_metrics()

    def _stop(self, status: str, t0: float, c0: float) -> str:
        self.status = status
        self.seconds, self.cpu = time.perf_counter() - t0, time.process_time() - c0
        if self.history:
            self._plot()
        self._write_metrics()
        if not self.history:
            return f"no evaluation finished; wrote {self.out / runfiles.METRICS}"
        return (f"kept the record of {self.history[-1]['step']} steps in "
                f"{self.out}{os.sep}{{{', '.join(self.files.values())}}}")

    def _finish(self, t0: float, c0: float) -> None:
        self.status = "finished"
        self.seconds, self.cpu = time.perf_counter() - t0, time.process_time() - c0
        task, model = self.task, self.model
        self.extra["final_train_loss"] = task.split_loss(model, "train")
        reloaded = task.build_model()  # on the host: rg.load gives host arrays
        reloaded.load_state_dict(serialization.load(self.out / runfiles.CHECKPOINT))
        self.extra["checkpoint_test_loss"] = task.split_loss(reloaded, "test")
        self.extra["samples"] = task.sample(reloaded, N_SAMPLES, seed=self.cfg.seed)
        self._plot()
        model.to("cpu")  # the picture reads values and gradients on the host
        try:
            loss, labels = task.example(model)
            self.files["graph"] = runfiles.draw_graph(
                self.out, loss, labels, f"{self.cfg.model}: the loss on one name")
        finally:
            model.zero_grad()
        self._write_metrics()

    def _write_metrics(self) -> None:
        cfg, task = self.cfg, self.task
        self.files["metrics"] = runfiles.METRICS
        last = self.history[-1] if self.history else {}
        metrics = {
            "model": cfg.model, "status": self.status, "seed": cfg.seed,
            "steps": cfg.steps, "steps_done": self.steps_done, "batch_size": cfg.batch_size,
            "lr": cfg.lr, "jit": bool(cfg.jit) and self.world is None,
            "ranks": 1 if self.world is None else self.world.size,
            "optimizer": f"AdamW(betas={BETAS}, weight_decay={WEIGHT_DECAY}), lr x0.1 after "
                         f"{DECAY_AT:.0%} of the steps",
            **task.info(),
            "parameters": int(sum(p.size for p in self.model.parameters())),
            "test_loss": last.get("test_loss"), **self.extra,
            "train_seconds": self.seconds, "train_cpu_seconds": self.cpu,
            "history": self.history, "files": dict(self.files),
            "platform": {"python": platform.python_version(), "numpy": np.__version__},
        }
        runfiles.replace(self.out / runfiles.METRICS,
                            lambda tmp: tmp.write_text(json.dumps(metrics, indent=2) + "\n"))

    def _plot(self) -> None:
        plt, h = self.plt, self.history
        fig, ax = plt.subplots(figsize=(6, 4))
        steps = [r["step"] for r in h]
        ax.plot(steps, [r["train_loss"] for r in h], marker="o", markersize=3,
                label="train (mean of the batches since the last point)")
        ax.plot(steps, [r["test_loss"] for r in h], marker="o", markersize=3,
                label="test (whole split)")
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy (nats per character)")
        ax.set_title(f"retrograd train --task names --model {self.cfg.model}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(self.out / runfiles.CURVES, dpi=100)
        plt.close(fig)
        self.files["curves"] = runfiles.CURVES
