"""Read the saved benchmark runs (docs/benchmarks/*.json) into tables for the site.

Each file is a benchmark's raw `--json` output wrapped by `save_run.py` with
the date, the machine and the command. `load_runs` turns each into
`{"name", "title", "unit", "date", "machine", "command", "workloads": {workload:
[{"library", "median"}, ...]}}`, fastest first.
"""

from __future__ import annotations

import json
from pathlib import Path

ENGINE = {"ops": "100 element-wise ops on float32 (8,), forward + backward",
          "large": "relu(a @ b).sum(), float32 square matrices, forward + backward",
          "deep": "a scalar chain (y * c, y + d), build + backward"}
FUNC = {"hessian": "Hessian of a scalar function",
        "jac-1000x10-rev": "Jacobian R^1000 -> R^10, reverse mode (jacrev)",
        "jac-1000x10-fwd": "Jacobian R^1000 -> R^10, forward mode (jacfwd)",
        "jac-10x1000-rev": "Jacobian R^10 -> R^1000, reverse mode (jacrev)",
        "jac-10x1000-fwd": "Jacobian R^10 -> R^1000, forward mode (jacfwd)",
        "vmap-value": "vmap(f), 256 inputs in R^64",
        "vmap-grad": "vmap(grad(f)), 256 inputs in R^64"}


def _engine(raw: dict) -> tuple[str, str, dict]:
    units = {r["workload"]: r["unit"] for r in raw["results"]}
    sizes = {r["workload"]: r["size"] for r in raw["results"]}
    workloads = {}
    for w, libs in raw["table"].items():
        rows = [{"library": lib, "median": t["median"]} for lib, t in libs.items()
                if t["median"] is not None]
        workloads[f"{w} ({units[w]}, size {sizes[w]:,})"] = sorted(rows, key=lambda r: r["median"])
    return "Tensor engine (bench_engine.py)", "time, lower is better", workloads


def _func(raw: dict) -> tuple[str, str, dict]:
    workloads: dict = {}
    for key, t in raw.items():
        task, lib = key.split("/", 1)
        if t.get("median") is None:
            continue
        workloads.setdefault(task, []).append({"library": lib, "median": t["median"] * 1e3})
    return ("Functional transforms (bench_func.py)", "ms per call, lower is better",
            {f"{FUNC.get(k, k)}": sorted(v, key=lambda r: r["median"])
             for k, v in workloads.items()})


def _train(raw: dict) -> tuple[str, str, dict]:
    workloads: dict = {}
    for key, t in raw["table"].items():
        w, lib = key.split("/", 1)
        workloads.setdefault(f"{w} training step, batch 64", []).append(
            {"library": f"{lib} (threads: {t['threads']})", "median": t["us"] / 1e3})
    return ("A training step (bench_train.py)", "ms per step, lower is better",
            {k: sorted(v, key=lambda r: r["median"]) for k, v in workloads.items()})


READERS = {"engine": _engine, "func": _func, "train": _train}


def load_runs(folder: Path) -> list[dict]:
    runs = []
    for path in sorted(Path(folder).glob("*.json")):
        record = json.loads(path.read_text())
        title, unit, workloads = READERS[record["name"]](record["raw"])
        runs.append({**{k: record[k] for k in ("name", "date", "machine", "command")},
                     "title": title, "unit": unit, "workloads": workloads})
    return runs


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower()).strip("_")[:40]


def page_markdown(folder: Path) -> str:
    """The tables and plots of every saved run, as Markdown."""
    out = []
    for run in load_runs(folder):
        out.append(f"## {run['title']}\n\nRun on {run['date']}, on {run['machine']}:\n\n"
                   f"```bash\n{run['command']}\n```\n")
        for workload, rows in run["workloads"].items():
            fastest = rows[0]["median"]
            out.append(f"### {workload}\n\n| library | {run['unit']} | x fastest |\n"
                       "|---|---:|---:|")
            out += [f"| {r['library']} | {r['median']:.4g} | {r['median'] / fastest:.2f}x |"
                    for r in rows]
            out.append(f"\n![{workload}](benchmarks/{run['name']}_{slug(workload)}.svg)\n")
    return "\n".join(out)
