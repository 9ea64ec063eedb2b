"""einops on retrograd Tensors (retrograd.integrations.einops): the same einops calls on
torch and on retrograd tensors give the same values, gradients and errors; rg.jit traces
through them; einops' layers as rg.nn modules; both import orders."""

import os
import pickle
import re
import subprocess
import sys

import einops
import einops.layers.torch as torch_layers
import numpy as np
import pytest
import torch

import retrograd as rg

SRC = os.path.dirname(os.path.dirname(rg.__file__))


def _arrays(*shapes, seed=0):
    gen = np.random.default_rng(seed)
    return [gen.standard_normal(s) for s in shapes]


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def _check(fn, *shapes, seed=0):
    """fn(*tensors) on torch and on retrograd tensors (float64, requires_grad): equal
    outputs (a tensor or a list of them) and equal gradients of a weighted sum of them."""
    arrays = _arrays(*shapes, seed=seed)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    rs = [rg.tensor(a, requires_grad=True) for a in arrays]
    t_out, r_out = fn(*ts), fn(*rs)
    t_list = list(t_out) if isinstance(t_out, list | tuple) else [t_out]
    r_list = list(r_out) if isinstance(r_out, list | tuple) else [r_out]
    assert len(r_list) == len(t_list)
    gen = np.random.default_rng(seed + 1)
    t_loss, r_loss = 0, 0
    for t, r in zip(t_list, r_list):
        assert isinstance(r, rg.Tensor)
        assert tuple(r.shape) == tuple(t.shape)
        assert str(r.dtype).rpartition(".")[2] == str(t.dtype).rpartition(".")[2]
        _close(r.detach().numpy(), t.detach().numpy())
        w = gen.standard_normal(tuple(t.shape))
        t_loss = t_loss + (t * torch.tensor(w)).sum()
        r_loss = r_loss + (r * rg.tensor(w)).sum()
    t_loss.backward()
    r_loss.backward()
    for t, r in zip(ts, rs):
        want = t.grad if t.grad is not None else torch.zeros_like(t)
        got = r.grad if r.grad is not None else rg.zeros_like(r)
        _close(got.numpy(), want.numpy())


REARRANGES = [
    ("b c h w -> b h w c", {}, (2, 3, 4, 5)),
    ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", {"p1": 2, "p2": 2}, (2, 3, 4, 6)),
    ("a (b c) -> c a b", {"b": 2}, (3, 8)),
    ("b ... c -> b c ...", {}, (2, 3, 4, 5)),
    ("b ... c -> (b c) ...", {}, (2, 3)),
    ("... h w -> ... (w h)", {}, (2, 3, 4, 5)),
    ("a b c -> c 1 a () b", {}, (2, 3, 4)),
    ("a 1 c -> (c a)", {}, (2, 1, 4)),
]


@pytest.mark.parametrize(("pattern", "lengths", "shape"), REARRANGES)
def test_rearrange_matches_torch(pattern, lengths, shape):
    _check(lambda x: einops.rearrange(x, pattern, **lengths), shape)


def test_rearrange_of_a_list_stacks_like_torch():
    _check(lambda a, b, c: einops.rearrange([a, b, c], "n h w -> h (n w)"),
           (2, 3), (2, 3), (2, 3))


REDUCES = [
    ("b c (h 2) (w 2) -> b c h w", {}, (2, 3, 4, 6)),
    ("b c h w -> b c", {}, (2, 3, 4, 5)),
    ("b ... c -> b c", {}, (2, 3, 4, 5)),
    ("b (h h2) w -> h b 1 w", {"h2": 3}, (2, 6, 4)),
    ("a b -> ", {}, (3, 4)),
]


@pytest.mark.parametrize("reduction", ["mean", "max", "sum", "min", "prod"])
@pytest.mark.parametrize(("pattern", "lengths", "shape"), REDUCES)
def test_reduce_matches_torch(reduction, pattern, lengths, shape):
    _check(lambda x: einops.reduce(x, pattern, reduction, **lengths), shape)


@pytest.mark.parametrize("reduction", ["max", "min", "prod", "mean", "sum"])
def test_reduce_gradients_with_ties_and_zeros_match_torch(reduction):
    a = (np.arange(48).reshape(2, 4, 6) % 3).astype(np.float32)  # ties in every window, zeros
    t, r = torch.tensor(a, requires_grad=True), rg.tensor(a, requires_grad=True)
    want = einops.reduce(t, "a (b 2) (c 3) -> c a b", reduction)
    got = einops.reduce(r, "a (b 2) (c 3) -> c a b", reduction)
    assert got.dtype == rg.float32
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    w = np.linspace(-1, 1, want.numel()).reshape(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * rg.tensor(w)).sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_reduce_with_a_callable_and_on_integers_and_booleans_matches_torch():
    _check(lambda x: einops.reduce(x, "a b c -> a c", lambda t, axes: t.logsumexp(axes)),
           (2, 3, 4))
    a = np.arange(24).reshape(2, 3, 4) % 5
    for op in ("sum", "max", "min", "prod"):
        want = einops.reduce(torch.tensor(a), "a b c -> c a", op)
        got = einops.reduce(rg.tensor(a), "a b c -> c a", op)
        assert str(got.dtype) == str(want.dtype).rpartition(".")[2], op
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for op in ("any", "all"):
        want = einops.reduce(torch.tensor(a > 1), "a b c -> b", op)
        got = einops.reduce(rg.tensor(a > 1), "a b c -> b", op)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


REPEATS = [
    ("h w -> h w c", {"c": 3}, (2, 3)),
    ("h w -> (h 2) (w 3)", {}, (2, 3)),
    ("h w -> (rep h) w", {"rep": 2}, (2, 3)),
    ("h w -> (h rep) w", {"rep": 2}, (2, 3)),
    ("b c -> b 1 c n", {"n": 4}, (2, 3)),
    ("b ... -> b k ...", {"k": 2}, (2, 3, 4)),
]


@pytest.mark.parametrize(("pattern", "lengths", "shape"), REPEATS)
def test_repeat_matches_torch(pattern, lengths, shape):
    _check(lambda x: einops.repeat(x, pattern, **lengths), shape)


EINSUMS = [
    ("batch i j, batch j k -> batch i k", [(2, 3, 4), (2, 4, 5)]),
    ("i j -> j", [(3, 4)]),
    ("i j, j -> i", [(3, 4), (4,)]),
    ("b ... d, d e -> b ... e", [(2, 3, 4), (4, 5)]),
    ("a b, b c, c d -> a d", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize(("pattern", "shapes"), EINSUMS)
def test_einsum_matches_torch(pattern, shapes):
    _check(lambda *xs: einops.einsum(*xs, pattern), *shapes)


def test_pack_and_unpack_match_torch():
    def pack(a, b, c):
        packed, ps = einops.pack([a, b, c], "b * c")
        assert [tuple(p) for p in ps] == [(), (4,), (2, 3)]
        return [packed]

    def round_trip(a, b, c):
        packed, ps = einops.pack([a, b, c], "b * c")
        return einops.unpack(packed * 2, ps, "b * c")

    shapes = [(2, 5), (2, 4, 5), (2, 2, 3, 5)]
    _check(pack, *shapes)
    _check(round_trip, *shapes)
    _check(lambda x: einops.unpack(x, [[2], [1], [3, 1]], "* c"), (6, 4))


def test_parse_shape_and_asnumpy_match_torch():
    a = _arrays((2, 3, 4, 5))[0]
    t, r = torch.tensor(a, requires_grad=True), rg.tensor(a, requires_grad=True)
    for pattern in ("b _ h w", "b c h w", "b ... w", "_ _ _ _", "... w"):
        want, got = einops.parse_shape(t, pattern), einops.parse_shape(r, pattern)
        assert got == want and all(type(v) is int for v in got.values()), pattern
    x = einops.asnumpy(r)
    assert isinstance(x, np.ndarray) and x.dtype == einops.asnumpy(t).dtype
    np.testing.assert_array_equal(x, einops.asnumpy(t))
    assert np.shares_memory(x, r.detach().numpy()) == np.shares_memory(einops.asnumpy(t),
                                                                       t.detach().numpy())


BAD = [
    ("rearrange", (2, 3), ("a b -> a b c",), {}),
    ("rearrange", (2, 3), ("a b c -> a b",), {}),
    ("rearrange", (6, 3), ("(a b) c -> a b c",), {"a": 4}),
    ("rearrange", (2, 3), ("a b -> (a b",), {}),
    ("rearrange", (2, 3), ("a ... -> a ... ...",), {}),
    ("rearrange", (2, 3), ("a b -> a a",), {}),
    ("reduce", (2, 3), ("a b -> a", "median"), {}),
    ("reduce", (2, 3), ("a b -> a c", "sum"), {}),
    ("repeat", (2, 3), ("a b -> a b c",), {}),
    ("repeat", (2, 3), ("a b -> (a 2) b",), {"a": 3}),
]


def _raised(call):
    """The exception `call()` raises, its message with torch.Size([2, 3]) written (2, 3) (as
    retrograd prints a shape)."""
    with pytest.raises(Exception) as info:
        call()
    e = info.value

    def as_tuple(m):
        return str(tuple(int(v) for v in m.group(1).split(",") if v.strip()))
    return type(e), re.sub(r"torch\.Size\(\[(.*?)\]\)", as_tuple, str(e))


@pytest.mark.parametrize(("fn", "shape", "args", "lengths"), BAD)
def test_bad_patterns_raise_einops_errors_like_torch(fn, shape, args, lengths):
    a = np.zeros(shape)
    t, r = torch.tensor(a), rg.tensor(a)
    want = _raised(lambda: getattr(einops, fn)(t, *args, **lengths))
    got = _raised(lambda: getattr(einops, fn)(r, *args, **lengths))
    assert got == want


def test_other_refusals_match_torch():
    ints = np.arange(6).reshape(2, 3)
    calls = [
        lambda m, x: einops.reduce(m.tensor(ints), "a b -> a", "mean"),
        lambda m, x: einops.pack([x, x[0]], "a * b"),
        lambda m, x: einops.unpack(x, [[2], [2]], "* b"),
        lambda m, x: einops.einsum(x, x, "a b, b c -> a d"),
        lambda m, x: einops.einsum(x, "a b"),
        lambda m, x: einops.parse_shape(x, "a (b c)"),
        lambda m, x: einops.parse_shape(x, "a b c"),
    ]
    a = np.zeros((3, 4))
    for i, call in enumerate(calls):
        want = _raised(lambda c=call: c(torch, torch.tensor(a)))
        got = _raised(lambda c=call: c(rg, rg.tensor(a)))
        assert got == want, i


def test_jit_traces_through_einops():
    def step(x, w):
        h = einops.rearrange(x, "b c (h p) -> b h (p c)", p=2)
        y = einops.einsum(h, w, "b h d, d e -> b h e")
        loss = einops.reduce(y.tanh(), "b h e -> b", "mean").sum()
        loss.backward()
        return loss

    fast = rg.jit(step)
    for seed in (0, 1, 2):
        x, w = _arrays((2, 3, 4), (6, 5), seed=seed)
        tw = torch.tensor(w, requires_grad=True)
        want = step(torch.tensor(x), tw)
        rw = rg.tensor(w, requires_grad=True)
        got = fast(rg.tensor(x), rw)
        _close(got.numpy(), want.detach().numpy())
        _close(rw.grad.numpy(), tw.grad.numpy())
    assert fast.trace_count == 1  # traced once, then replayed


def test_func_transforms_through_einops_match_torch():
    a = _arrays((5, 2, 3))[0]

    def pooled(x):
        return einops.reduce(einops.rearrange(x, "a b -> b a"), "b a -> b", "max")

    def energy(x):
        return einops.repeat(x, "a b -> a b k", k=2).sin().sum()

    def run(m):
        x = m.tensor(a)
        return [m.func.vmap(pooled)(x), m.func.vmap(m.func.grad(energy))(x)]

    for got, want in zip(run(rg), run(torch)):
        _close(got.numpy(), want.numpy())


def test_layers_match_einops_torch_layers():
    from retrograd.integrations import einops_layers as rg_layers
    assert einops._backends.get_backend(rg.zeros(1)).layers() is rg_layers
    x = _arrays((2, 3, 4, 6))[0]
    for make in (lambda m: m.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=3),
                 lambda m: m.Reduce("b c (h 2) (w 2) -> b c h w", "max"),
                 lambda m: m.Reduce("b c h w -> b c", "mean")):
        t_layer, r_layer = make(torch_layers), make(rg_layers)
        assert isinstance(r_layer, rg.nn.Module) and repr(r_layer) == repr(t_layer)
        seq = rg.nn.Sequential(r_layer)
        _check(lambda v, layer=t_layer, r=seq: (layer if isinstance(v, torch.Tensor) else r)(v),
               x.shape)
        restored = pickle.loads(pickle.dumps(r_layer))
        _close(restored(rg.tensor(x)).numpy(), t_layer(torch.tensor(x)).numpy())


@pytest.mark.parametrize(("pattern", "weight", "bias", "lengths", "shape", "fan_in"), [
    ("t b cin -> t b cout", "cin cout", "cout", {"cin": 4, "cout": 5}, (2, 3, 4), 4),
    ("b (h w) c -> b h w d", "c d", None, {"h": 2, "c": 3, "d": 4}, (2, 6, 3), 3),
    ("b c (h p) -> b (c h) q", "p q", "q", {"p": 2, "q": 3}, (2, 3, 4), 2),
])
def test_einmix_matches_einops_torch_layer(pattern, weight, bias, lengths, shape, fan_in):
    from retrograd.integrations import einops_layers as rg_layers
    t_mix = torch_layers.EinMix(pattern, weight_shape=weight, bias_shape=bias, **lengths)
    r_mix = rg_layers.EinMix(pattern, weight_shape=weight, bias_shape=bias, **lengths)
    assert repr(r_mix) == repr(t_mix)
    t_state, r_state = t_mix.state_dict(), r_mix.state_dict()
    assert list(r_state) == list(t_state)
    for k, v in t_state.items():  # einops' uniform start: +-sqrt(3/fan_in), +-sqrt(1/fan_in)
        bound = (3 / fan_in if k == "weight" else 1 / fan_in) ** 0.5
        assert tuple(r_state[k].shape) == tuple(v.shape) and r_state[k].dtype == rg.float32
        assert 0 < float(r_state[k].abs().max()) <= bound and float(v.abs().max()) <= bound
    t_mix.double()
    r_mix.double().load_state_dict({k: rg.tensor(v.numpy()) for k, v in t_mix.state_dict().items()})
    x = _arrays(shape)[0]
    t_in, r_in = torch.tensor(x, requires_grad=True), rg.tensor(x, requires_grad=True)
    t_out, r_out = t_mix(t_in), r_mix(r_in)
    _close(r_out.detach().numpy(), t_out.detach().numpy())
    t_out.square().sum().backward()
    r_out.square().sum().backward()
    _close(r_in.grad.numpy(), t_in.grad.numpy())
    for (name, p), (t_name, q) in zip(r_mix.named_parameters(), t_mix.named_parameters()):
        assert name == t_name
        _close(p.grad.numpy(), q.grad.numpy())


CHECK = """
import numpy as np
x = rg.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
y = einops.rearrange(x, "a (b c) -> (c a) b", c=2)
einops.reduce(y, "n b -> b", "max").sum().backward()
print((tuple(y.shape), x.grad.numpy().astype(int).tolist()))
"""


def _run(code):
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()


def test_either_import_order_and_no_einops_at_import():
    tx = torch.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    ty = einops.rearrange(tx, "a (b c) -> (c a) b", c=2)
    einops.reduce(ty, "n b -> b", "max").sum().backward()
    want = str((tuple(ty.shape), tx.grad.numpy().astype(int).tolist()))
    einops_first = "import einops\nimport retrograd as rg\n" + CHECK
    # retrograd first, while einops cannot be imported: it is not needed, and it is not
    # imported; then einops becomes importable and is imported
    retrograd_first = ("import sys\nsys.modules['einops'] = None\nimport retrograd as rg\n"
                       "assert not any(m.startswith('einops') for m in sys.modules if "
                       "sys.modules[m] is not None)\n"
                       "del sys.modules['einops']\nimport einops\n"
                       "import inspect, retrograd.integrations.einops as glue\n"
                       "assert glue._watcher not in sys.meta_path\n"
                       "assert 'AbstractBackend' in inspect.getsource(einops._backends)\n"
                       + CHECK)
    assert _run(einops_first) == [want]
    assert _run(retrograd_first) == [want]
