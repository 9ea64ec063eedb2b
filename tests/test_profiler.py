"""rg.profiler: torch.profiler's interface over timed regions."""

import json

import pytest
import torch
import torch.profiler as tprof

import retrograd as rg
from retrograd import profiler as rprof


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2, repeat=1),
                                dict(wait=0, warmup=0, active=1),
                                dict(wait=2, warmup=1, active=3, repeat=2, skip_first=3)])
def test_schedule_like_torch(kw):
    ours, theirs = rprof.schedule(**kw), tprof.schedule(**kw)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_nested_regions_self_and_total_times_and_table():
    model = rg.nn.Linear(4, 2)

    @rprof.record_function("decorated")
    def step():
        return model(rg.ones(3, 4)).sum()

    with rprof.profile(activities=[rprof.ProfilerActivity.CPU], record_shapes=True) as prof:
        with rprof.record_function("outer"):
            with rprof.record_function("inner"):
                step()
            step()
    events = prof.events()
    names = [e.name for e in events]
    assert names == ["outer", "inner", "decorated", "decorated"]
    outer = events[0]
    assert outer.cpu_time_total >= outer.self_cpu_time_total >= 0
    assert abs(outer.cpu_time_total - outer.self_cpu_time_total
               - sum(c.cpu_time_total for c in outer.cpu_children)) < 1e-6
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["decorated"].count == 2 and avg["outer"].count == 1
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=2)
    assert "outer" in table and "Self CPU time total" in table
    assert "outer" in table.split("\n")[3]  # the largest total first
    with pytest.raises(AttributeError):
        prof.key_averages().table(sort_by="no_such_column")
    with rprof.record_function("outside"):  # no profiler active: nothing recorded
        pass
    assert len(prof.events()) == 4


def test_schedule_calls_on_trace_ready_as_torch_does(tmp_path):
    kw = dict(wait=1, warmup=1, active=2, repeat=2)
    calls = {"rg": 0, "torch": 0}

    def count(lib):
        def ready(p):
            calls[lib] += 1
        return ready

    with rprof.profile(schedule=rprof.schedule(**kw), on_trace_ready=count("rg")) as p:
        for _ in range(10):
            with rprof.record_function("work"):
                rg.ones(2) + 1
            p.step()
    with tprof.profile(activities=[tprof.ProfilerActivity.CPU], schedule=tprof.schedule(**kw),
                       on_trace_ready=count("torch")) as tp:
        for _ in range(10):
            torch.ones(2) + 1
            tp.step()
    assert calls["rg"] == calls["torch"] == 2
    handler = rprof.tensorboard_trace_handler(str(tmp_path), worker_name="w")
    handler(p)
    (path,) = tmp_path.iterdir()
    trace = json.loads(path.read_text())
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in trace["traceEvents"])


def test_legacy_names_are_the_same_objects():
    assert rg.autograd.profiler.profile is rprof.profile
    assert rg.autograd.profiler.record_function is rprof.record_function
    with rg.autograd.profiler.profile(use_cuda=False) as prof:
        with rg.autograd.profiler.record_function("x"):
            pass
    assert [e.key for e in prof.key_averages()] == ["x"]
    with rg.autograd.profiler.profile(enabled=False) as off:
        with rg.autograd.profiler.record_function("y"):
            pass
    assert not off.events()
