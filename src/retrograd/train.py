"""`retrograd train`: the main job. Train an MLP or a small CNN on the 8x8 digits.

The split of scikit-learn's digits is fixed (80/20, stratified, seed 0) so that
runs are comparable; `--seed` sets the initial weights and the batch order, and
the same seed gives the same numbers. Training uses SGD with Nesterov momentum,
a cosine learning-rate decay and label smoothing 0.1. The run directory gets
`metrics.json`, `curves.png`, the checkpoint `model.npz` (`rg.load` it and
`load_state_dict`) and a picture of the model's graph.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from . import creation, data, nn, optim, serialization
from .grad_mode import no_grad
from .nn import functional as F
from .tensor import Tensor

DEFAULTS = {
    "mlp": {"epochs": 30, "batch_size": 32, "lr": 0.1},
    "cnn": {"epochs": 30, "batch_size": 32, "lr": 0.1},
}
MOMENTUM = 0.9
LABEL_SMOOTHING = 0.1
SPLIT_SEED = 0
EVAL_CHUNK = 512


def build_model(name: str) -> nn.Module:
    """The two models: an MLP 64-128-64-10 and conv(1->16, 3x3) + ReLU + max-pool + linear."""
    if name == "mlp":
        return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                             nn.Linear(64, 10))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
    raise ValueError(f"unknown model {name!r}; choose 'mlp' or 'cnn'")


def input_shape(name: str) -> tuple[int, ...]:
    return (-1, 64) if name == "mlp" else (-1, 1, 8, 8)


def evaluate(model: nn.Module, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean cross-entropy and accuracy, in eval mode without recording a graph."""
    model.eval()
    total, correct = 0.0, 0
    with no_grad():
        for start in range(0, len(y), EVAL_CHUNK):
            xb, yb = Tensor(X[start:start + EVAL_CHUNK]), y[start:start + EVAL_CHUNK]
            logits = model(xb)
            total += float(F.cross_entropy(logits, Tensor(yb), reduction="sum").item())
            correct += int((logits.data.argmax(1) == yb).sum())
    model.train()
    return total / len(y), correct / len(y)


def _missing_extra(e: ImportError) -> int:
    print(f"retrograd: error: `retrograd train` needs scikit-learn, tqdm and matplotlib (the "
          f"[train] extra): pip install 'retrograd[train]' ({e})", file=sys.stderr)
    return 1


def run(args) -> int:
    """Train per the parsed command-line `args`; return the exit status."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from tqdm import tqdm
        X_train, y_train, X_test, y_test = data.load_digits(test_size=0.2, seed=SPLIT_SEED)
    except ImportError as e:
        return _missing_extra(e)

    cfg = dict(DEFAULTS[args.model])
    for key in ("epochs", "batch_size", "lr"):
        if getattr(args, key, None) is not None:
            cfg[key] = getattr(args, key)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"retrograd: error: cannot create the run directory {str(out)!r}: "
              f"{e.strerror or e}", file=sys.stderr)
        return 2

    shape = input_shape(args.model)
    X_train, X_test = X_train.reshape(shape), X_test.reshape(shape)
    creation.manual_seed(args.seed)
    model = build_model(args.model)
    opt = optim.SGD(model.parameters(), lr=cfg["lr"], momentum=MOMENTUM, nesterov=True)
    loader = data.DataLoader((X_train, y_train), batch_size=cfg["batch_size"], shuffle=True,
                             seed=args.seed)
    total_steps = cfg["epochs"] * len(loader)

    history = []
    step = 0
    t0 = time.perf_counter()
    bar = tqdm(range(1, cfg["epochs"] + 1), desc=f"{args.model}", unit="epoch",
               file=sys.stderr, leave=True)
    for epoch in bar:
        model.train()
        for xb, yb in loader:
            lr = cfg["lr"] * 0.5 * (1.0 + math.cos(math.pi * step / total_steps))
            for group in opt.param_groups:
                group["lr"] = lr
            loss = F.cross_entropy(model(xb), yb, label_smoothing=LABEL_SMOOTHING)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
        train_loss, train_acc = evaluate(model, X_train, y_train)
        test_loss, test_acc = evaluate(model, X_test, y_test)
        history.append({"epoch": epoch, "lr": lr, "train_loss": train_loss,
                        "train_acc": train_acc, "test_loss": test_loss, "test_acc": test_acc})
        bar.set_description(f"{args.model} epoch {epoch}/{cfg['epochs']}", refresh=False)
        bar.set_postfix({"loss": f"{train_loss:.4f}", "train_acc": f"{train_acc:.2%}",
                         "test_acc": f"{test_acc:.2%}"})
    bar.close()
    seconds = time.perf_counter() - t0

    ckpt = out / "model.npz"
    serialization.save(model.state_dict(), ckpt)
    check = build_model(args.model)
    check.load_state_dict(serialization.load(ckpt))
    reloaded_acc = evaluate(check, X_test, y_test)[1]

    _plot(plt, history, out / "curves.png", args.model)
    graph_file = _draw_graph(model, X_test[:1], y_test[:1], out)

    final = history[-1]
    metrics = {
        "model": args.model, "seed": args.seed, "split_seed": SPLIT_SEED,
        "epochs": cfg["epochs"], "batch_size": cfg["batch_size"], "lr": cfg["lr"],
        "optimizer": f"SGD(momentum={MOMENTUM}, nesterov=True), cosine decay",
        "label_smoothing": LABEL_SMOOTHING,
        "n_train": int(len(y_train)), "n_test": int(len(y_test)),
        "parameters": int(sum(p.size for p in model.parameters())),
        "test_accuracy": final["test_acc"], "test_loss": final["test_loss"],
        "checkpoint_test_accuracy": reloaded_acc,
        "train_seconds": seconds, "history": history,
        "files": {"checkpoint": ckpt.name, "curves": "curves.png", "graph": graph_file.name},
        "platform": {"python": platform.python_version(), "numpy": np.__version__},
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(f"test accuracy {final['test_acc']:.2%} ({args.model}, {cfg['epochs']} epochs, "
          f"{seconds:.1f} s); wrote {out}{os.sep}{{metrics.json, curves.png, {ckpt.name}, "
          f"{graph_file.name}}}")
    return 0


def _plot(plt, history: list[dict], path: Path, name: str) -> None:
    epochs = [h["epoch"] for h in history]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(epochs, [h["train_loss"] for h in history], label="train")
    ax1.plot(epochs, [h["test_loss"] for h in history], label="test")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("cross-entropy")
    ax1.set_title("loss")
    ax1.legend()
    ax2.plot(epochs, [100 * h["train_acc"] for h in history], label="train")
    ax2.plot(epochs, [100 * h["test_acc"] for h in history], label="test")
    ax2.set_xlabel("epoch")
    ax2.set_ylabel("accuracy (%)")
    ax2.set_title("accuracy")
    ax2.legend()
    fig.suptitle(f"retrograd train --model {name}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _draw_graph(model: nn.Module, x: np.ndarray, y: np.ndarray, out: Path) -> Path:
    """The graph of the loss on one sample, with values and gradients: through `rg.viz`
    (SVG when Graphviz's `dot` is installed, DOT text otherwise)."""
    xt, yt = Tensor(x), Tensor(y)
    loss = F.cross_entropy(model(xt), yt)
    loss.backward()
    labels = {p: n for n, p in model.named_parameters()}
    labels.update({xt: "image", loss: "loss"})
    try:
        from . import viz
    except ImportError:
        viz = None
    try:
        if viz is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # no `dot`: viz writes DOT text instead
                return Path(viz.draw(loss, out / "graph.svg", labels=labels,
                                     title=f"{type(model).__name__}: one sample"))
        dot_path = out / "graph.dot"
        dot_path.write_text(_dot(loss, {id(p): n for p, n in labels.items()}))
        return dot_path
    finally:
        model.zero_grad()


def _dot(root: Tensor, names: dict) -> str:
    """Minimal DOT text of the graph below `root` (iterative walk; ops and named leaves)."""
    lines = ["digraph model {", "  rankdir=BT;",
             '  node [fontname="Helvetica", fontsize=10, shape=box, style=rounded];']
    ids: dict[int, str] = {}

    def ident(obj) -> str:
        key = id(obj)
        if key not in ids:
            ids[key] = f"n{len(ids)}"
            if isinstance(obj, Tensor):
                label = names.get(key, "input")
                lines.append(f'  {ids[key]} [label="{label}\\n{obj.shape}", shape=ellipse];')
            else:
                lines.append(f'  {ids[key]} [label="{obj.name}"];')
        return ids[key]

    top = ident(root.grad_fn)
    lines.append(f'  loss [label="loss = {root.item():.4f}", shape=plaintext];')
    lines.append(f"  {top} -> loss;")
    stack, seen = [root.grad_fn], {id(root.grad_fn)}
    while stack:
        node = stack.pop()
        for nxt in node.nexts:
            lines.append(f"  {ident(nxt)} -> {ident(node)};")
            if not isinstance(nxt, Tensor) and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    lines.append("}")
    return "\n".join(lines) + "\n"
