"""`rg.utils.benchmark` against `torch.utils.benchmark`: Measurements built from the same
raw times give the same statistics and the same printed form; the Timer runs statements
(no timing value is asserted) with its thread count for the timed block only; Compare's
table holds every row, column and median; bad input is refused as torch refuses it."""

import numpy as np
import pytest
import torch
import torch.utils.benchmark as tb
from torch.utils.benchmark.utils.common import TaskSpec as TorchSpec

import retrograd as rg
import retrograd.utils.benchmark as rb


def _pair(raw, number=100, **spec):
    spec = {"stmt": "x", "setup": "pass", **spec}
    return (tb.Measurement(number, raw, TorchSpec(**spec)),
            rb.Measurement(number, raw, rb.TaskSpec(**spec)))


def test_statistics_and_printed_form_match_torch():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 12))
        raw = list(rng.lognormal(-7, float(rng.choice([0.01, 0.05, 0.2, 0.6])), n))
        spec = {"label": rng.choice([None, "L"]), "sub_label": rng.choice([None, "s"]),
                "description": rng.choice([None, "d"]), "num_threads": int(rng.integers(1, 3)),
                "stmt": str(rng.choice(["x", "a = 1\nb = 2"]))}
        t, r = _pair(raw, **spec)
        assert r.times == t.times and r.number_per_run == t.number_per_run
        for name in ("median", "iqr", "mean"):
            assert getattr(r, name) == pytest.approx(getattr(t, name), rel=1e-13), name
        for name in ("title", "as_row_name", "has_warnings", "stmt", "label", "num_threads"):
            assert getattr(r, name) == getattr(t, name), name
        assert r.meets_confidence(0.3) == t.meets_confidence(0.3)
        assert repr(r).split("\n", 1)[1] == repr(t).split("\n", 1)[1]


def test_significant_figures_match_torch_for_single_runs():
    """With one run per block torch's estimate is reproduced exactly; with more runs per
    block torch rounds it in float32, and ours can differ by a digit."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        raw = list(rng.lognormal(-7, float(rng.choice([0.003, 0.01, 0.05, 0.2])),
                                 int(rng.integers(1, 14))))
        t, r = _pair(raw, number=1)
        assert r.significant_figures == t.significant_figures


def test_units_trimming_and_merging_match_torch():
    for v in (3e-10, 1e-9, 3e-5, 1e-3, 0.5, 2.0, 7e4):
        assert rb.select_unit(v) == tb.select_unit(v)
    for v, k in ((1234.5678, 3), (0.000123456, 2), (98.76, 1), (5.0, 4)):
        assert rb.trim_sigfig(v, k) == pytest.approx(tb.trim_sigfig(v, k), rel=1e-12)
    a, b = _pair([1e-3, 1.1e-3])
    c, d = _pair([1.2e-3], number=10)
    want = tb.Measurement.merge([a, c])
    got = rb.Measurement.merge([b, d])
    assert [(m.raw_times, m.number_per_run) for m in got] == \
        [(m.raw_times, m.number_per_run) for m in want]


def test_timer_runs_statements_and_restores_the_thread_count():
    x = rg.randn(16, 16)
    before = rg.get_num_threads()
    t = rb.Timer("x @ x", setup="y = 1", globals={"x": x}, label="mm", sub_label="16",
                 description="rg", num_threads=1)
    m = t.timeit(50)
    assert m.number_per_run == 50 and len(m.times) == 1 and m.times[0] > 0
    assert m.title == "mm: 16" and m.description == "rg"
    m = t.blocked_autorange(min_run_time=0.01)
    assert sum(m.raw_times) >= 0.01 and m.number_per_run >= 1
    calls = []
    m = t.adaptive_autorange(min_run_time=0.01, max_run_time=0.05,
                             callback=lambda n, s: calls.append(n))
    assert len(calls) == len(m.raw_times) >= 1
    assert rb.Timer("rg.ones(2).sum()").timeit(5).number_per_run == 5  # `rg` is a name
    assert rg.get_num_threads() == before


def test_compare_table_holds_every_row_column_and_median():
    ms = []
    for threads in (1, 2):
        for sub, base in (("small", 3e-6), ("a longer name", 5e-5)):
            for desc, f in (("rg", 1.0), ("torch", 2.3)):
                raw = [f * threads * base * (1 + 0.01 * k) * 100 for k in range(5)]
                ms.append(rb.Measurement(100, raw, rb.TaskSpec(
                    stmt="x", label="matmul", sub_label=sub, description=desc,
                    num_threads=threads)))
    text = str(rb.Compare(ms))
    lines = text.splitlines()
    assert "matmul" in lines[0] and "rg" in lines[1] and "torch" in lines[1]
    assert "1 threads:" in text and "2 threads:" in text
    assert "Times are in microseconds (us)." in text
    for m in ms:
        row = next(ln for ln in lines[lines.index(next(ln for ln in lines if ln.startswith(
            f"{m.num_threads} threads"))):] if ln.strip().startswith(m.sub_label))
        assert f"{m.median * 1e6:.1f}" in row


def test_bad_input_is_refused_as_torch_refuses_it():
    for lib in (tb, rb):
        with pytest.raises(ValueError, match="only a `str` stmt"):
            lib.Timer(stmt=lambda: None)
        with pytest.raises(ValueError, match="Invalid language"):
            lib.Timer("x", language="rust")
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        rb.Timer("x", language=rb.Language.CPP)
    with pytest.raises(ValueError, match="number of runs"):
        rb.Timer("1").timeit(-1)  # torch reports negative times
    with pytest.raises(ValueError, match="Measurement"):
        rb.Compare([1.0])
    assert torch.utils.benchmark.Compare  # (the names exist in torch)
