"""rg.utils.flop_counter.FlopCounterMode against torch.utils.flop_counter: the same models on
the same shapes give the same totals and the same counts per module and op name, forward
and forward + backward."""

import numpy as np
import pytest
import torch
import torch.utils.flop_counter as tfc

import retrograd as rg
from retrograd.utils.flop_counter import FlopCounterMode


def _torch_counts(fn):
    with tfc.FlopCounterMode(display=False) as fc:
        fn()
    return {m: {str(k): v for k, v in ops.items()} for m, ops in fc.get_flop_counts().items()}


def _rg_counts(fn):
    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_flop_counts()


def _same(torch_fn, rg_fn):
    want, got = _torch_counts(torch_fn), _rg_counts(rg_fn)
    assert got == want
    return got


def _model_pair(build):
    """The same architecture built in both libraries, with torch's weights copied over."""
    tm, rm = build(torch.nn), build(rg.nn)
    rm.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, rm


def _check_model(build, shape, input_grad=False):
    tm, rm = _model_pair(build)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tx = torch.tensor(x, requires_grad=input_grad)
    rx = rg.tensor(x, requires_grad=input_grad)
    _same(lambda: tm(tx), lambda: rm(rx))                      # forward only
    got = _same(lambda: tm(tx).sum().backward(), lambda: rm(rx).sum().backward())
    assert got  # something was counted


def _mlp(nn):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(16, 4, bias=False)
            self.head = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))

        def forward(self, x):
            return self.head(self.fc2(self.act(self.fc1(x))))
    return MLP()


@pytest.mark.parametrize("shape,input_grad", [((5, 8), False), ((3, 5, 8), True), ((8,), True)])
def test_mlp_per_module(shape, input_grad):
    _check_model(_mlp, shape, input_grad)


def _cnn(nn):
    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 4, 3, padding=1)
            self.c2 = nn.Conv2d(4, 6, 3, stride=2, groups=2, bias=False)
            self.up = nn.ConvTranspose2d(6, 4, 3, stride=2, output_padding=1, groups=2)
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            y = self.up(self.c2(self.c1(x).relu()))
            return self.fc(y.mean((2, 3)))
    return CNN()


def _cnn13(nn):
    class CNN13(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv1d(2, 4, 3, dilation=2)
            self.t = nn.ConvTranspose1d(4, 3, 2, stride=3, padding=1)
            self.c3 = nn.Conv3d(3, 2, (1, 2, 2))

        def forward(self, x):
            y = self.t(self.c(x))
            return self.c3(y.reshape(y.shape[0], 3, 2, 2, -1)[..., :4])
    return CNN13()


@pytest.mark.parametrize("input_grad", [False, True])
def test_cnn_per_module(input_grad):
    _check_model(_cnn, (2, 3, 9, 9), input_grad)
    _check_model(_cnn13, (2, 2, 9), input_grad)


@pytest.mark.parametrize("trainable,input_grad,layer", [
    ("bias", False, "Conv2d"), ("nothing", True, "Conv2d"), ("nothing", True, "ConvTranspose2d")])
def test_conv_unbatched_and_frozen(trainable, input_grad, layer):
    tm, rm = _model_pair(lambda nn: getattr(nn, layer)(2, 3, 2))
    x = np.ones((2, 5, 5), np.float32)
    for p in (*tm.parameters(), *rm.parameters()):
        p.requires_grad_(trainable == "bias" and p.ndim == 1)
    _same(lambda: tm(torch.tensor(x, requires_grad=input_grad)).sum().backward(),
          lambda: rm(rg.tensor(x, requires_grad=input_grad)).sum().backward())


def _block(nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(16, 4, batch_first=True)
            self.norm = nn.LayerNorm(16)
            self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))

        def forward(self, x):
            x = x + self.attn(x, x, x)[0]
            return x + self.mlp(self.norm(x))
    return Block()


@pytest.mark.parametrize("input_grad", [False, True])
def test_transformer_block_per_module(input_grad):
    _check_model(_block, (2, 5, 16), input_grad)


def test_mha_sequence_first():
    def build(nn):
        class SelfAttention(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(8, 2)

            def forward(self, x):
                return self.mha(x, x, x)[0]
        return SelfAttention()
    _check_model(build, (4, 3, 8), True)


@pytest.mark.parametrize("q,k,dv,dtype", [((2, 4, 5, 8), (2, 4, 7, 8), 6, "float32"),
                                          ((3, 6, 8), (3, 6, 8), 8, "float16")])
def test_sdpa_matches_torch_formulas(q, k, dv, dtype):
    """torch's CPU kernel is not counted by torch; its fused (CUDA) kernels count as its
    formulas, which rg's count matches, forward and backward."""
    rng = np.random.default_rng(0)
    v = k[:-1] + (dv,)
    qa, ka, va = (rng.standard_normal(s).astype(dtype) for s in (q, k, v))
    rq, rk, rv = (rg.tensor(a, requires_grad=True) for a in (qa, ka, va))
    with FlopCounterMode(display=False) as fc:
        out = rg.nn.functional.scaled_dot_product_attention(rq, rk, rv)
    fwd = fc.get_total_flops()
    q4, k4, v4 = ((1,) * (4 - len(s)) + s for s in (q, k, v))
    assert fwd == tfc.sdpa_flop_count(q4, k4, v4)
    name = "aten._scaled_dot_product_" + ("flash" if dtype == "float16" else "efficient") \
        + "_attention"
    assert fc.get_flop_counts() == {"Global": {name: fwd}}
    with FlopCounterMode(display=False) as fc:
        out.sum().backward()
    assert fc.get_flop_counts() == {"Global": {
        name + "_backward": tfc.sdpa_backward_flop_count(q4[:-1] + (dv,), q4, k4, v4)}}


def test_sdpa_as_torch_math_backend_forward():
    """The products torch's math kernel runs forward are the fused kernels' count."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    a = np.random.default_rng(1).standard_normal((2, 3, 5, 4)).astype(np.float32)
    with sdpa_kernel(SDPBackend.MATH):
        want = _torch_counts(lambda: torch.nn.functional.scaled_dot_product_attention(
            *(torch.tensor(a),) * 3))
    t = rg.tensor(a)
    with FlopCounterMode(display=False) as fc:
        rg.nn.functional.scaled_dot_product_attention(t, t, t)
    assert fc.get_total_flops() == sum(want["Global"].values())


MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 3, 4), (4, 5)), ((2, 3, 4), (4,)), ((3, 4), (2, 4, 5)),
                 ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((4,), (2, 4, 5))]


def _pair(shapes, grads):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    return ([torch.tensor(v, requires_grad=g) for v, g in zip(arrays, grads)],
            [rg.tensor(v, requires_grad=g) for v, g in zip(arrays, grads)])


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
@pytest.mark.parametrize("grads", [(True, True), (False, True), (True, False)])
def test_matmul_decomposition(shapes, grads):
    """mm, bmm or nothing (mv, dot) as torch's matmul decomposes; forward in one block,
    backward in another (counted by the block it runs in, as torch)."""
    (ta, tb), (ra, rb) = _pair(shapes, grads)
    _same(lambda: torch.matmul(ta, tb), lambda: ra @ rb)
    to, ro = torch.matmul(ta, tb), None

    def rg_forward():
        nonlocal ro
        ro = ra @ rb
    _rg_counts(rg_forward)
    _same(lambda: to.sum().backward(), lambda: ro.sum().backward())


@pytest.mark.parametrize("name,shapes", [
    ("mm", [(3, 4), (4, 5)]), ("bmm", [(2, 3, 4), (2, 4, 5)]),
    ("addmm", [(5,), (3, 4), (4, 5)]), ("baddbmm", [(2, 3, 5), (2, 3, 4), (2, 4, 5)])])
def test_blas_products(name, shapes):
    ts, rs = _pair(shapes, [True] * len(shapes))
    _same(lambda: getattr(torch, name)(*ts).sum().backward(),
          lambda: getattr(rg, name)(*rs).sum().backward())


@pytest.mark.parametrize("spec,shapes", [
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 6)]), ("ij,jk", [(4, 5), (5, 6)]),
    ("bij,bjk->ik", [(3, 4, 5), (3, 5, 6)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 2)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]), ("i,j->ij", [(3,), (4,)]), ("ij,ij->", [(3, 4), (3, 4)]),
    ("ii,ij->j", [(3, 3), (3, 4)]), ("ij,jk->", [(3, 4), (4, 5)]), ("ij,kj->ik", [(3, 1), (4, 1)]),
    ("ijk,ijl->kl", [(2, 3, 4), (2, 3, 5)])])
def test_einsum(spec, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    ts = [torch.tensor(a, requires_grad=i != 1) for i, a in enumerate(arrays)]
    rs = [rg.tensor(a, requires_grad=i != 1) for i, a in enumerate(arrays)]
    _same(lambda: torch.einsum(spec, *ts), lambda: rg.einsum(spec, *rs))
    _same(lambda: torch.einsum(spec, *ts).sum().backward(),
          lambda: rg.einsum(spec, *rs).sum().backward())


def _table_rows(text):
    """(name with its indent, flops, share) per row of a printed table."""
    rows = []
    for line in text.splitlines()[2:]:
        name, flops, share = line.rsplit(None, 2)
        rows.append((name.rstrip(), flops, share))
    return rows


def _torch_rows(counts, depth):
    """The rows torch's get_table makes of these counts (torch needs tabulate to print
    them, not installed here): its unit, sorting, depth, indents and Global rule."""
    total = sum(counts.get("Global", {}).values())
    unit = max(0, min(4, (len(str(total)) - 2) // 3))

    def rows_of(mod, pad):
        n = sum(counts[mod].values())
        out = [(pad + mod, n)] + [(pad + " - " + k, v) for k, v in counts[mod].items()]
        return [(name, tfc.convert_num_with_suffix(v, tfc.suffixes[unit]),
                 tfc.convert_to_percent_str(v, total)) for name, v in out]
    rows, whole = [], False
    for mod in sorted(m for m in counts if m != "Global"):
        if mod.count(".") + 1 <= depth:
            rows += rows_of(mod, " " * mod.count("."))
            whole |= sum(counts[mod].values()) >= total
    if not whole:
        rows = rows_of("Global", "") + [(" " + r[0], r[1], r[2]) for r in rows]
    return rows


@pytest.mark.parametrize("depth", [1, 2])
def test_table_rows(capsys, depth):
    tm, rm = _model_pair(_mlp)
    x = np.ones((3, 8), np.float32)
    extra = np.ones((40, 50))

    def run(lib, model, x):
        model(x).sum().backward()
        lib.mm(lib.tensor(extra), lib.tensor(extra.T))  # outside every module: Global shown
    want = _torch_counts(lambda: run(torch, tm, torch.tensor(x)))
    with FlopCounterMode(depth=depth) as fc:
        run(rg, rm, rg.tensor(x))
    printed = capsys.readouterr().out
    assert printed.strip() == fc.get_table(depth)
    assert _table_rows(printed) == _torch_rows(want, depth)
    with FlopCounterMode(depth=depth) as fc:  # one module holds everything: no Global row
        rm(rg.tensor(x)).sum().backward()
    assert _table_rows(capsys.readouterr().out) == _torch_rows(
        _torch_counts(lambda: tm(torch.tensor(x)).sum().backward()), depth)


def test_outside_the_block_nothing_is_counted():
    a = rg.randn(3, 4, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        y = a @ a.T
    y.sum().backward()  # after the block: not counted (as torch)
    assert fc.get_total_flops() == 2 * 3 * 4 * 3
    assert rg.grad_mode.state.flops is None


def test_nested_counters():
    a = rg.randn(3, 4, requires_grad=True)
    with FlopCounterMode(display=False) as outer:
        with FlopCounterMode(display=False) as inner:
            (a @ a.T).sum().backward()
        rg.mm(a, a.T)
    assert inner.get_total_flops() == 3 * 72
    assert outer.get_total_flops() == 4 * 72


def test_backward_of_an_uncounted_forward_refused():
    """torch counts a backward whose forward ran before its mode; rg cannot see those
    products' backward, so it refuses rather than report 0."""
    a = rg.randn(3, 4, requires_grad=True)
    y = (a @ a.T).sum()
    with FlopCounterMode(display=False), pytest.raises(RuntimeError, match="outside any"):
        y.backward()
    z = (a * 2).sum()  # nothing to count: no refusal
    with FlopCounterMode(display=False) as fc:
        z.backward()
    assert fc.get_total_flops() == 0


def test_autograd_grad_counts_the_wanted_gradients():
    (ta, tb, tc), (ra, rb, rc) = _pair([(3, 4), (4, 5), (5, 2, 6)], (True, True, True))
    x = np.ones((2, 3, 9, 9), np.float32)
    tm, rm = _model_pair(lambda nn: nn.Conv2d(3, 4, 3))

    def run(lib, a, b, c, model, x):
        y = (a @ b).square().sum() + lib.einsum("ij,jkl->ikl", a @ b, c).sum()
        lib.autograd.grad(y, a, retain_graph=True)
        lib.autograd.grad(y, [a, c])
        lib.autograd.grad(model(x).sum(), model.bias)
    _same(lambda: run(torch, ta, tb, tc, tm, torch.tensor(x)),
          lambda: run(rg, ra, rb, rc, rm, rg.tensor(x)))


def test_double_backward_refused():
    a = rg.randn(3, 4, requires_grad=True)
    with FlopCounterMode(display=False), pytest.raises(NotImplementedError, match="create_graph"):
        g, = rg.autograd.grad((a @ a.T).sum(), a, create_graph=True)


def test_tensor_methods_counted():
    (ta, tb), (ra, rb) = _pair([(2, 3, 4), (2, 4, 5)], (True, True))
    _same(lambda: ta.bmm(tb).matmul(tb.transpose(1, 2)).sum().backward(),
          lambda: ra.bmm(rb).matmul(rb.transpose(1, 2)).sum().backward())


def test_jit_refused_not_zero():
    f = rg.jit(lambda x: x @ x)
    x = rg.randn(3, 3)
    f(x)
    with FlopCounterMode(display=False), pytest.raises(RuntimeError, match="rg.jit"):
        f(x)


def test_custom_mapping_refused():
    with pytest.raises(NotImplementedError, match="custom_mapping"):
        FlopCounterMode(custom_mapping={"aten.mm": lambda *a, **k: 0})
