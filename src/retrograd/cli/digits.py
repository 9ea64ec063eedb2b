"""The digits task of `retrograd train`: an MLP or a small CNN on scikit-learn's 8x8 digits.

The split is fixed (80/20, stratified, seed 0) so that runs are comparable;
the run's seed sets only the initial weights and the batch order. With
`--data PATH` the same models train on the user's own arrays (an `.npz` or
MNIST's IDX files, read by `rg.data.load_arrays`), sized to the data: the MLP
takes the flattened samples, the CNN square single-channel images. The loss is
cross-entropy with label smoothing 0.1; the task reports loss and accuracy on
both splits after each epoch.

A task is what `cli/train.py` needs to know about one kind of data: its
models and their default settings, how to load the data, build a model,
batch the training set, compute the training loss, evaluate, and which one
example to draw. Another task (e.g. names) is another class with the same
methods, added to `train.TASKS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import data, nn
from ..grad_mode import no_grad
from ..nn import functional as F
from ..tensor import Tensor

__all__ = ["Digits", "build_model"]

SPLIT_SEED = 0
TEST_SIZE = 0.2
LABEL_SMOOTHING = 0.1
EVAL_CHUNK = 512


def build_model(name: str, features: int = 64, classes: int = 10) -> nn.Module:
    """The two models: an MLP features-128-64-classes, and conv(1->16, 3x3) + ReLU +
    max-pool + linear on square images of `features` pixels."""
    if name == "mlp":
        return nn.Sequential(nn.Linear(features, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                             nn.Linear(64, classes))
    if name == "cnn":
        side = _side(features)
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(16 * (side // 2) ** 2, classes))
    raise ValueError(f"unknown model {name!r}; choose 'mlp' or 'cnn'")


def _side(features: int) -> int:
    side = int(round(features ** 0.5))
    if side * side != features or side < 2:
        raise ValueError(f"the cnn model takes square single-channel images, but the samples "
                         f"have {features} values; use --model mlp")
    return side


class Digits:
    """Classify 8x8 handwritten digits (1,797 images, 10 classes)."""

    name = "digits"
    models = ("mlp", "cnn")
    defaults = {
        "mlp": {"epochs": 30, "batch_size": 32, "lr": 0.1},
        "cnn": {"epochs": 30, "batch_size": 32, "lr": 0.1},
    }
    headline = "test_acc"  # the number the run is judged by (printed, checked on reload)

    def __init__(self, model: str, data: str | None = None) -> None:
        if model not in self.models:
            raise ValueError(f"unknown model {model!r} for the {self.name} task; choose "
                             f"{' or '.join(self.models)}")
        self.model = model
        self.data = data  # the user's own arrays, or None: scikit-learn's digits
        self.X_train = self.y_train = self.X_test = self.y_test = None
        self.features, self.classes = 64, 10

    def load(self) -> None:
        """Read the data: ImportError without scikit-learn (the `[train]` extra) for the
        digits; ValueError (naming the file and the problem) for unusable data of one's own."""
        if self.data is None:
            X_train, self.y_train, X_test, self.y_test = data.load_digits(TEST_SIZE, SPLIT_SEED)
        else:
            X_train, self.y_train, X_test, self.y_test = data.load_arrays(
                self.data, TEST_SIZE, SPLIT_SEED)
        self.features = int(np.prod(X_train.shape[1:]))
        self.classes = max(int(self.y_train.max()) + 1, 2)
        if self.model == "mlp":
            shape = (-1, self.features)
        else:
            side = _side(self.features)
            shape = (-1, 1, side, side)
        self.X_train, self.X_test = X_train.reshape(shape), X_test.reshape(shape)

    def build_model(self) -> nn.Module:
        return build_model(self.model, self.features, self.classes)

    def batches(self, batch_size: int, seed: int,
                shard: tuple[int, int] | None = None) -> data.DataLoader:
        """The training set in shuffled mini-batches (the order fixed by `seed`); with
        `shard=(rank, size)`, this rank's share of each global batch."""
        return data.DataLoader((self.X_train, self.y_train), batch_size=batch_size,
                               shuffle=True, seed=seed, shard=shard)

    def loss(self, model: nn.Module, batch: Iterable[Tensor]) -> Tensor:
        xb, yb = batch
        return F.cross_entropy(model(xb), yb, label_smoothing=LABEL_SMOOTHING)

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Loss and accuracy on both splits (eval mode, no graph recorded)."""
        train_loss, train_acc = _evaluate(model, self.X_train, self.y_train)
        test_loss, test_acc = _evaluate(model, self.X_test, self.y_test)
        return {"train_loss": train_loss, "train_acc": train_acc, "test_loss": test_loss,
                "test_acc": test_acc}

    def summary(self, row: dict[str, float]) -> str:
        return f"test accuracy {row['test_acc']:.2%}"

    def example(self, model: nn.Module) -> tuple[Tensor, dict]:
        """The loss on one test image, differentiated, and names for the picture's boxes."""
        x, y = Tensor(self.X_test[:1]), Tensor(self.y_test[:1])
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        labels: dict[Any, str] = {p: n for n, p in model.named_parameters()}
        labels.update({x: "image", loss: "loss"})
        return loss, labels

    def info(self) -> dict[str, Any]:
        """Facts about the data and the loss, for metrics.json."""
        return {"task": self.name, "data": self.data or "scikit-learn digits",
                "split_seed": SPLIT_SEED, "label_smoothing": LABEL_SMOOTHING,
                "n_train": int(len(self.y_train)), "n_test": int(len(self.y_test)),
                "classes": self.classes}


def _evaluate(model: nn.Module, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean cross-entropy and accuracy, in eval mode without recording a graph."""
    model.eval()
    device = next(model.parameters()).device  # the model's: evaluation runs there too
    total, correct = 0.0, 0
    with no_grad():
        for start in range(0, len(y), EVAL_CHUNK):
            xb, yb = Tensor(X[start:start + EVAL_CHUNK]), Tensor(y[start:start + EVAL_CHUNK])
            if device != "cpu":
                xb, yb = xb.to(device), yb.to(device)
            logits = model(xb)
            total += float(F.cross_entropy(logits, yb, reduction="sum").item())
            correct += int((logits.argmax(1) == yb).sum().item())
    model.train()
    return total / len(y), correct / len(y)
