"""rg.distributed: two-rank jobs under the mpiexec of the venv's MPICH wheel, and the
one-rank behaviour in process."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import retrograd as rg
from retrograd import distributed as dist
from retrograd import nn
from retrograd.distributed import world as world_mod
from retrograd.distributed.params import first_difference

SCRIPTS = Path(__file__).parent / "dist_scripts"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
LAUNCHER_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "MV2_", "SLURM_", "HYDRA_", "MPI_LOCAL")


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **extra)
    return env


def _run(args, timeout=60, **extra_env) -> subprocess.CompletedProcess:
    """Run a command in its own process group; on timeout kill the group and fail."""
    proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=_env(**extra_env),
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{args} did not finish within {timeout} s; output:\n{out}")
    return subprocess.CompletedProcess(args, proc.returncode, out)


def _mpiexec(script, *args, timeout=60, n=2, **extra_env) -> subprocess.CompletedProcess:
    if not MPIEXEC.exists():
        pytest.fail(f"no mpiexec at {MPIEXEC}: install the test extra (pip install -e "
                    "'.[test]'), whose mpich wheel provides it")
    return _run([MPIEXEC, "-n", str(n), sys.executable, SCRIPTS / script, *args],
                timeout=timeout, **extra_env)


# ------------------------------------------------------------ two ranks


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of the same two-rank job and one run of the same script alone."""
    d = tmp_path_factory.mktemp("dist")
    for name in ("a", "b"):
        r = _mpiexec("train.py", d / name)
        assert r.returncode == 0, r.stdout
    r = _run([sys.executable, SCRIPTS / "train.py", d / "one"])
    assert r.returncode == 0, r.stdout
    load = lambda name: dict(np.load(d / f"{name}.npz"))
    return {k: load(k) for k in ("a.rank0", "a.rank1", "b.rank0", "b.rank1", "one.rank0")}


def test_two_ranks_train_like_one_process_on_the_global_batches(runs):
    one, two = runs["one.rank0"], runs["a.rank0"]
    assert int(one["size"]) == 1 and int(two["size"]) == 2
    names = [k for k in one if k.endswith(("weight", "bias"))]
    assert names
    for k in names + ["losses"]:
        np.testing.assert_allclose(two[k], one[k], rtol=1e-12, atol=1e-12, err_msg=k)
    assert not np.allclose(one["losses"][0], one["losses"][-1])  # it did train


def test_replicas_and_reruns_are_bit_identical(runs):
    ref = runs["a.rank0"]
    for other in ("a.rank1", "b.rank0", "b.rank1"):
        for k, v in ref.items():
            assert np.array_equal(v, runs[other][k]), (other, k)


def test_gradients_are_averaged_in_shared_memory_with_allreduces_bits(runs, tmp_path):
    """Two ranks on one node sum through a shared window by default; MPI's Allreduce gives
    the same bits (a + b is exact either way and both divide by 2)."""
    assert int(runs["a.rank0"]["shared"]) == 1
    r = _mpiexec("train.py", tmp_path / "mpi", RETROGRAD_ALLREDUCE="mpi")
    assert r.returncode == 0, r.stdout
    mpi = dict(np.load(tmp_path / "mpi.rank0.npz"))
    assert int(mpi["shared"]) == 0
    for k, v in runs["a.rank0"].items():
        if k != "shared":
            assert np.array_equal(v, mpi[k]), k


@pytest.mark.parametrize("n, mode, shared", [(2, "auto", "True"), (3, "auto", "True"),
                                             (4, "shm:2", "True"), (3, "mpi", "False")])
def test_gradient_average_over_ranks_and_pretended_nodes(tmp_path, n, mode, shared):
    """Every rank's gradients are gathered and summed by hand (average.py) and compared:
    two and three ranks on the node (three: a scratch sum, uneven slices), two pretended
    nodes of two ranks each (node sums joined by an Allreduce across nodes), and the plain
    Allreduce; buckets of many blocks, every rank left holding the same bytes."""
    r = _mpiexec("average.py", tmp_path / "avg", n=n, timeout=120, RETROGRAD_ALLREDUCE=mode)
    assert r.returncode == 0, r.stdout
    assert [(tmp_path / f"avg.rank{k}").read_text() for k in range(n)] == [shared] * n


def test_a_bad_allreduce_choice_is_named(tmp_path):
    r = _mpiexec("train.py", tmp_path / "x", 1, RETROGRAD_ALLREDUCE="ring")
    assert r.returncode != 0 and "RETROGRAD_ALLREDUCE" in r.stdout and "'ring'" in r.stdout


def test_metric_allreduce_over_two_ranks(runs):
    r = runs["a.rank1"]  # rank r contributes r + 1
    assert r["metric_sum"] == 3 and r["metric_max"] == 2
    np.testing.assert_array_equal(r["metric_mean"], [1.5, 15.0])
    np.testing.assert_array_equal(r["metric_tensor"], [3.0])


def test_an_exception_on_one_rank_aborts_the_job_and_names_the_rank():
    start = time.monotonic()
    r = _mpiexec("crash.py", timeout=30)
    assert time.monotonic() - start < 30
    assert r.returncode != 0
    assert "rank 1 of 2" in r.stdout and "deliberate failure on one rank" in r.stdout
    assert "passed the barrier" not in r.stdout


def test_different_models_raise_on_every_rank_naming_the_first_difference(tmp_path):
    r = _mpiexec("mismatch.py", tmp_path / "caught")
    assert r.returncode == 0, r.stdout
    for rank in (0, 1):
        lines = (tmp_path / f"caught.rank{rank}.txt").read_text().splitlines()
        assert [ln.split(":")[0] for ln in lines] == ["broadcast", "optimizer"], lines
        for line in lines:
            assert "(4, 3)" in line and "(5, 3)" in line, line
        assert "'0.weight'" in lines[0]


def test_launcher_count_that_mpi_does_not_see_is_an_error():
    # what a plain srun without --mpi= does: N processes that each see a world of one
    r = _run([sys.executable, SCRIPTS / "world.py"], SLURM_NTASKS="2", timeout=30)
    assert "init failed" in r.stdout and "SLURM_NTASKS=2" in r.stdout, r.stdout
    assert "srun --mpi=pmix" in r.stdout


# ------------------------------------------------------------ one rank, in process


@pytest.fixture
def fresh(monkeypatch):
    """No launcher variables and no world made yet."""
    for k in list(os.environ):
        if k.startswith(LAUNCHER_PREFIXES):
            monkeypatch.delenv(k)
    monkeypatch.setattr(world_mod, "_world", None)


def test_import_does_not_import_mpi4py():
    code = ("import sys, retrograd as rg; w = rg.distributed.init(); "
            "print(w.rank, w.size, 'mpi4py' in sys.modules)")
    r = _run([sys.executable, "-c", code], timeout=30)
    assert r.stdout.split() == ["0", "1", "False"], r.stdout


def test_one_rank_without_a_launcher(fresh):
    w = dist.init()
    assert (w.rank, w.size) == (0, 1) and dist.init() is w
    assert dist.rank() == 0 and dist.size() == 1
    dist.barrier()
    assert dist.allreduce(3) == 3.0 and isinstance(dist.allreduce(3), float)
    assert dist.allreduce(3, op="sum") == 3 and isinstance(dist.allreduce(3, op="sum"), int)
    t = dist.allreduce(rg.tensor([1.0, 2.0]), op="max")
    assert isinstance(t, rg.Tensor) and t.dtype == np.float32
    np.testing.assert_array_equal(dist.allreduce(np.array([True, False]), op="max"),
                                  [True, False])
    with pytest.raises(ValueError, match="op must be one of"):
        dist.allreduce(1.0, op="avg")
    with pytest.raises(TypeError, match="str"):
        dist.allreduce("1")


def _mlp(seed):
    rg.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))


def test_one_rank_optimizer_and_broadcast_change_nothing(fresh):
    a, b = _mlp(0), _mlp(0)
    versions = [p._version for p in a.parameters()]
    dist.broadcast_parameters(a)
    assert [p._version for p in a.parameters()] == versions
    opt_a = dist.DistributedOptimizer(rg.optim.SGD(a.parameters(), lr=0.1, momentum=0.9))
    opt_b = rg.optim.SGD(b.parameters(), lr=0.1, momentum=0.9)
    x, y = rg.randn(8, 5), rg.randint(0, 3, (8,))
    for _ in range(3):
        for model, opt in ((a, opt_a), (b, opt_b)):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        assert np.array_equal(p.data, q.data)
    assert opt_a.param_groups is opt_a.optimizer.param_groups
    assert set(opt_a.state_dict()) == {"state", "param_groups"}


def test_mpi4py_missing_under_a_launcher_is_an_error(fresh, monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setenv("PMI_SIZE", "2")
    with pytest.raises(ImportError, match=r"PMI_SIZE=2.*\[dist\]"):
        dist.init()
    monkeypatch.setenv("PMI_SIZE", "1")  # a launcher of one rank: fine without MPI
    assert dist.init().size == 1


def test_launcher_variables(fresh):
    assert dist.launcher_size({}) == (None, 1)
    env = {"SLURM_NTASKS": "4", "PMI_SIZE": "2"}  # mpiexec inside an allocation: PMI wins
    assert dist.launcher_size(env) == ("PMI_SIZE", 2)
    assert dist.launcher_size({"OMPI_COMM_WORLD_SIZE": "3"}) == ("OMPI_COMM_WORLD_SIZE", 3)
    with pytest.raises(RuntimeError, match="PMI_SIZE='x'"):
        dist.launcher_size({"PMI_SIZE": "x"})


def test_bad_arguments(fresh):
    opt = rg.optim.SGD(_mlp(0).parameters(), lr=0.1)
    for bad in (0, -1, float("nan"), True, "25"):
        with pytest.raises(ValueError, match="bucket_mb"):
            dist.DistributedOptimizer(opt, bucket_mb=bad)
    with pytest.raises(TypeError, match="already distributed"):
        dist.DistributedOptimizer(dist.DistributedOptimizer(opt))
    with pytest.raises(TypeError, match="optimizer"):
        dist.DistributedOptimizer(object())
    with pytest.raises(ValueError, match="root"):
        dist.broadcast_parameters(_mlp(0), root=1)
    with pytest.raises(TypeError, match="'w' is a int"):
        dist.broadcast_parameters({"w": 3})
    with pytest.raises(ValueError, match="read-only"):
        dist.broadcast_parameters([rg.ones(3).expand(2, 3)])


def test_first_difference_names_the_entry():
    a = [("w", (2, 3), "<f8"), ("b", (3,), "<f8")]
    assert first_difference([a, list(a)], 0) is None
    msg = first_difference([a, [("w", (2, 3), "<f4"), ("b", (3,), "<f8")]], 0)
    assert "'w' of shape (2, 3) float64" in msg and "'w' of shape (2, 3) float32" in msg
    msg = first_difference([a, a[:1]], 0)
    assert "only 1" in msg and "'b'" in msg
    msg = first_difference([a, a + [("c", (1,), "<f8")]], 0)
    assert "first extra on rank 1 is 'c'" in msg


class _PeerComm:
    """A stand-in for a two-rank COMM_WORLD whose other rank sends `fill` in every slot
    (every gradient element, and every 'has a gradient' count)."""

    IN_PLACE = object()
    SUM = "sum"

    def __init__(self, fill=1):
        self.messages = []
        self.fill = fill

    def allgather(self, value):
        return [value, value]

    def Allreduce(self, sendbuf, recvbuf, op):
        assert sendbuf is self.IN_PLACE and op == self.SUM
        self.messages.append((recvbuf.dtype, recvbuf.size))
        recvbuf += self.fill


def test_buckets_pack_every_dtype_in_order_and_average(fresh, monkeypatch):
    comm = _PeerComm()
    monkeypatch.setattr(world_mod, "_world", dist.World(0, 2, comm, comm))
    rng = np.random.default_rng(0)
    shapes = [((4, 5), np.float64), ((3,), np.float32), ((30,), np.float64), ((2, 2), np.float32),
              ((6,), np.float64)]
    params = [nn.Parameter(rg.tensor(rng.standard_normal(s).astype(dt))) for s, dt in shapes]
    grads = [rng.standard_normal(s).astype(dt) for s, dt in shapes]
    for p, g in zip(params, grads):
        p.grad = rg.tensor(g.copy())
    params[4].grad = None  # no gradient here, one from the peer
    params[1].grad = rg.Tensor._wrap(np.repeat(grads[1][:1], 3))[...]  # a view: not written
    base = params[1].grad.data.base
    arrays = [None if p.grad is None else p.grad.data for p in params]
    opt = dist.DistributedOptimizer(rg.optim.SGD(params, lr=0.0), bucket_mb=200 / 2 ** 20)
    opt.step()
    assert [p.grad.data is a for p, a in zip(params, arrays)] == [True, False, True, True, False]
    assert (base == grads[1][0]).all()
    grads[1] = np.repeat(grads[1][:1], 3)
    # float64 (20 + 30 + 6 elements at 8 bytes, 200-byte buckets): [p0], [p2], [p4];
    # float32: [p1, p3]; each message also carries one slot per parameter
    assert comm.messages == [(np.float64, 21), (np.float32, 9), (np.float64, 31),
                             (np.float64, 7)]
    for k, (p, g) in enumerate(zip(params, grads)):
        expect = (g + 1) / 2 if k != 4 else np.full(g.shape, 0.5)
        assert p.grad.dtype == g.dtype and p.grad.shape == g.shape
        np.testing.assert_array_equal(p.grad.data, expect.astype(g.dtype))


def test_a_parameter_without_gradient_on_every_rank_keeps_none(fresh, monkeypatch):
    comm = _PeerComm(fill=0)
    monkeypatch.setattr(world_mod, "_world", dist.World(1, 2, comm, comm))
    a, b = nn.Parameter(rg.tensor([1.0, 3.0])), nn.Parameter(rg.tensor([2.0]))
    a.grad = rg.tensor([4.0, 6.0])
    dist.DistributedOptimizer(rg.optim.SGD([a, b], lr=1.0)).step()
    np.testing.assert_array_equal(a.grad.data, [2.0, 3.0])
    np.testing.assert_array_equal(a.data, [-1.0, 0.0])
    assert b.grad is None and b.data[0] == 2.0
