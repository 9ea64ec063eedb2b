"""A/B of one engine change inside one process: the names transformer's eager step with
split/chunk/unbind pieces joining their gradients in one buffer (`api/pieces.py`) and
with each piece's gradient scattered into zeros and added, as before.

    python benchmarks/ab_joined_pieces.py [--rounds 30] [--steps 5]

The two modes alternate in blocks of `--steps` steps (CPU time per step, one thread),
so a noisy host shifts both alike; the ratio of the medians is the result.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

import retrograd as rg
from retrograd.api import pieces
from retrograd.models import names as M


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args(argv)
    items = M.read_items(M.default_data())
    vocab = M.Vocabulary.of(items)
    context = max(map(len, items)) + 1
    X, Y = M.encode(M.split(items)[0], vocab, context)
    rg.manual_seed(0)
    model = M.Transformer(len(vocab), context)
    opt = rg.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(1)

    def step():
        ix = rng.integers(0, len(X), 64)
        loss = M.loss(model, rg.tensor(X[ix]), rg.tensor(Y[ix]))
        opt.zero_grad()
        loss.backward()
        opt.step()

    joined = pieces._Joined.backward

    def scattered(self, node, g, m, out=pieces._NO_OUT):
        return self._op.backward(node, g, m) if out is pieces._NO_OUT \
            else self._op.backward(node, g, m, out)

    times: dict[str, list] = {"joined": [], "scattered": []}
    try:
        with threadpool_limits(1, user_api="blas"):
            rg.set_num_threads(1)
            for _ in range(5):
                step()
            for r in range(args.rounds):
                for mode in ("joined", "scattered") if r % 2 else ("scattered", "joined"):
                    pieces._Joined.backward = joined if mode == "joined" else scattered
                    c0 = time.process_time()
                    for _ in range(args.steps):
                        step()
                    times[mode].append((time.process_time() - c0) / args.steps * 1e3)
    finally:
        pieces._Joined.backward = joined
    for mode, t in times.items():
        print(f"{mode:10s} median CPU ms per step {statistics.median(t):7.2f}")
    print(f"joined / scattered: "
          f"{statistics.median(times['joined']) / statistics.median(times['scattered']):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
