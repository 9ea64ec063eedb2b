"""What every `retrograd train` task writes, and how: the run folder's file names, the
folder itself, files replaced whole (never left half-written), and the model's graph.

Shared by `train.py` (the digits loop) and `names.py` (the names loop).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from .errors import UsageError

__all__ = ["CHECKPOINT", "METRICS", "CURVES", "GRAPH_PAGE", "train_extras", "make_folder",
           "replace", "draw_graph"]

CHECKPOINT = "model.npz"
METRICS = "metrics.json"
CURVES = "curves.png"
GRAPH_PAGE = (7.5, 10.0)  # inches: the model's graph is scaled down to fit a page


def train_extras():
    """(matplotlib.pyplot on the Agg backend, tqdm); ImportError without the [train] extra."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tqdm import tqdm

    return plt, tqdm


def make_folder(out: Path) -> Path:
    """Create the run folder (and its parents); `UsageError` when that is impossible."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the run folder {str(out)!r}: {e.strerror or e}") from None
    return out


def replace(path: Path, write) -> None:
    """Write through a temporary file and rename it over `path`: an interrupted write never
    leaves a half-written file."""
    tmp = path.with_name(path.name + ".partial")
    write(tmp)
    os.replace(tmp, path)


def draw_graph(out: Path, loss, labels: dict, title: str) -> str:
    """Draw the graph of `loss` (already differentiated) into `out`: SVG through Graphviz,
    DOT text where Graphviz is missing; top to bottom on a page. Returns the file's name."""
    from .. import viz

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", viz.GraphvizMissing)
            path = viz.draw(loss, out / "graph.svg", labels=labels, title=title,
                            rankdir="TB", size=GRAPH_PAGE)
    except ImportError:  # no graphviz package: DOT text needs nothing but Python
        path = out / "graph.dot"
        path.write_text(viz.to_dot(loss, labels=labels, title=title, rankdir="TB",
                                   size=GRAPH_PAGE), encoding="utf-8")
    return Path(path).name
