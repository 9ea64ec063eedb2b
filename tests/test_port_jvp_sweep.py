"""Forward-mode gaps found by running PyTorch's OpInfo samples through torch.func.jvp and
rg.func.jvp (primals and tangents compared), each compared here with torch computed in
the test: integer outputs of jvp/jacfwd (zero tangents; vjp/jacrev refuse them as
RuntimeError), outputs that are not tensors (refused), functions that write into their
jvp inputs or dual tensors (F.batch_norm's running stats), make_dual's integer tangents;
and two small whole programs (the forward-mode AD tutorial, a top-k head after batch norm
through jvp and jacfwd) that guard the port end to end."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg


def _np(t):
    """A tensor of either library as a NumPy array."""
    return np.asarray(t.detach().numpy())


def _same(a, b, what="", rtol=1e-10, atol=1e-12):
    """Same dtype, shape and values (NaN equal) for a torch and a retrograd tensor."""
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=what, equal_nan=True)


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [w for v in x for w in _flat(v)]
    return [x]


def _jvp_both(ft, fr, primals, tangents=None, seed=0):
    """torch.func.jvp(ft) and rg.func.jvp(fr) at the same float64 (or complex128) primals
    and random tangents; outputs and tangents compared leaf by leaf."""
    gen = np.random.default_rng(seed)
    if tangents is None:
        tangents = []
        for p in primals:
            t = gen.standard_normal(p.shape)
            if np.iscomplexobj(p):
                t = t + 1j * gen.standard_normal(p.shape)
            tangents.append(t.astype(p.dtype))
    eo, et = torch.func.jvp(ft, tuple(torch.tensor(p) for p in primals),
                            tuple(torch.tensor(t) for t in tangents))
    ao, at = rg.func.jvp(fr, tuple(rg.tensor(p) for p in primals),
                         tuple(rg.tensor(t) for t in tangents))
    fe, fa = _flat(eo), _flat(ao)
    assert len(fe) == len(fa)
    for k, (x, y) in enumerate(zip(fe, fa)):
        _same(x, y, f"output {k}")
    for k, (x, y) in enumerate(zip(_flat(et), _flat(at))):
        _same(x, y, f"tangent {k}", rtol=1e-8, atol=1e-10)


_RNG = np.random.default_rng(12)
_A = _RNG.standard_normal((3, 5))


# ------------------------------------------------- integer outputs in forward mode

@pytest.mark.parametrize("name", ["max", "sort", "topk", "argmax_pair", "bool"])
def test_jvp_integer_outputs_get_zero_tangents(name):
    """torch.func.jvp lets integer/bool outputs through with a zero tangent of their dtype
    (max/sort/topk indices); retrograd refused them."""
    fns = {
        "max": lambda lib: (lambda x: lib.max(x, 1)),
        "sort": lambda lib: (lambda x: lib.sort(x, dim=-1, descending=True)),
        "topk": lambda lib: (lambda x: lib.topk(x, 2)),
        "argmax_pair": lambda lib: (lambda x: (x.sin(), x.argmax())),
        "bool": lambda lib: (lambda x: x > 0),
    }
    _jvp_both(fns[name](torch), fns[name](rg), [_A])


def test_jacfwd_integer_output_zero_rows():
    """jacfwd of a function with an index output: a zero Jacobian of the index dtype."""
    e = torch.func.jacfwd(lambda x: torch.max(x, 1))(torch.tensor(_A))
    a = rg.func.jacfwd(lambda x: rg.max(x, 1))(rg.tensor(_A))
    for x, y in zip(e, a):
        _same(x, y)


@pytest.mark.parametrize("how", ["vjp", "jacrev"])
def test_reverse_mode_refuses_integer_outputs_with_runtime_error(how):
    """vjp/jacrev still refuse integer outputs, with PyTorch's exception type."""
    def run(lib):
        f = (lambda x: lib.max(x, 1))
        x = lib.tensor(_A)
        return lib.func.vjp(f, x) if how == "vjp" else lib.func.jacrev(f)(x)

    with pytest.raises(RuntimeError):
        run(torch)
    with pytest.raises(RuntimeError):
        run(rg)


# ------------------------------------------------- in-place writes into the primals

def test_jvp_function_mutating_its_primal_matches_torch():
    """f may write into its inputs under torch.func.jvp (the write reaches the caller's
    tensor; the tangent follows it); retrograd refused writes into the dual (a view)."""
    def f(lib):
        def g(a):
            a.mul_(0.5)
            a[1:3].add_(a[:2] * 3)
            return a * 1
        return g

    xe, xa = torch.tensor(_A[0]), rg.tensor(_A[0])
    t = np.arange(5.0)
    e = torch.func.jvp(f(torch), (xe,), (torch.tensor(t),))
    a = rg.func.jvp(f(rg), (xa,), (rg.tensor(t),))
    for x, y in zip(e, a):
        _same(x, y)
    _same(xe, xa, "the caller's tensor")


def test_batch_norm_training_running_stats_as_primals():
    """F.batch_norm in training mode updates running_mean/var in place: with them as jvp
    primals (carrying tangents) torch works; retrograd raised."""
    g = np.random.default_rng(1)
    x, rm, rv, w = g.standard_normal((6, 4)), g.standard_normal(4), g.random(4) + 0.5, g.random(4)

    def f(lib):
        return lambda x, rm, rv, w: lib.nn.functional.batch_norm(
            x, rm, rv, w, None, training=True, momentum=0.3)

    _jvp_both(f(torch), f(rg), [x, rm, rv, w])


def test_forward_ad_make_dual_in_place():
    """fwAD.make_dual's result written in place: primal and tangent as torch's, and the
    primal tensor's memory shared."""
    res = []
    for lib in (torch, rg):
        fwAD = lib.autograd.forward_ad
        x = lib.tensor(_A[1])
        with fwAD.dual_level():
            d = fwAD.make_dual(x, lib.tensor(_A[2]))
            d.mul_(lib.tensor(_A[0]))  # (d.mul_(d) differs: torch's tangent reads the new d)
            d.sub_(d.exp())
            p, t = fwAD.unpack_dual(d)
            res.append((p * 1, t * 1, x * 1))
    for x, y in zip(*res):
        _same(x, y)


@pytest.mark.parametrize("how", ["jvp", "jvp_pair", "vjp", "jacfwd", "jacrev"])
def test_transforms_refuse_non_tensor_outputs(how):
    """A number or array returned by f (`.item()` inside it) has no derivative: torch.func
    raises RuntimeError; retrograd returned a zero tangent/Jacobian (and float32)."""
    def run(lib):
        x, F = lib.tensor(_A[0]), lib.func
        calls = {
            "jvp": lambda: F.jvp(lambda v: v.sum().item(), (x,), (x,)),
            "jvp_pair": lambda: F.jvp(lambda v: (v.sin(), 3), (x,), (x,)),
            "vjp": lambda: F.vjp(lambda v: float(v.sum()), x),
            "jacfwd": lambda: F.jacfwd(lambda v: 2.0)(x),
            "jacrev": lambda: F.jacrev(lambda v: np.ones(3))(x),
        }
        return calls[how]()

    with pytest.raises(RuntimeError):
        run(torch)
    with pytest.raises(RuntimeError, match="only tensors"):
        run(rg)


# ------------------------------------------------------------- whole programs

def _linear_pair(seed=3):
    """A float64 nn.Linear(5, 5) in each library with the same weights, and its tangents."""
    g = np.random.default_rng(seed)
    w, b, tw, tb = g.standard_normal((5, 5)), g.standard_normal(5), g.random((5, 5)), g.random(5)
    mods = []
    for lib in (torch, rg):
        m = lib.nn.Linear(5, 5).double()
        m.load_state_dict({"weight": lib.tensor(w), "bias": lib.tensor(b)})
        mods.append((lib, m, {"weight": lib.tensor(tw), "bias": lib.tensor(tb)}))
    return mods


def test_program_forward_ad_tutorial():
    """The forward-mode AD tutorial: dual inputs, a module's parameters made dual (setattr
    and functional_call), a custom Function's jvp, unpack_dual after the level exits."""
    x = np.random.default_rng(4).standard_normal((7, 5))
    res = []
    for lib, model, tangents in _linear_pair():
        fwAD, r = lib.autograd.forward_ad, []
        with fwAD.dual_level():
            d = fwAD.make_dual(lib.tensor(x), lib.tensor(x[::-1].copy()))
            out = d ** 2 + lib.tensor(x).sin()
            r += [fwAD.unpack_dual(out).tangent * 1]
            dual = {n: fwAD.make_dual(p, tangents[n]) for n, p in model.named_parameters()}
            r += [fwAD.unpack_dual(lib.func.functional_call(model, dual, (lib.tensor(x),)))[1]]

            class Exp(lib.autograd.Function):
                @staticmethod
                def forward(ctx, a):
                    ctx.result = a.exp()
                    return ctx.result

                @staticmethod
                def jvp(ctx, g_in):
                    return g_in * ctx.result

            r += [fwAD.unpack_dual(Exp.apply(d)).tangent * 1]
            for name, p in list(model.named_parameters()):
                delattr(model, name)
                setattr(model, name, fwAD.make_dual(p.detach(), tangents[name]))
            r += list(fwAD.unpack_dual(model(lib.tensor(x)).relu()))
        assert fwAD.unpack_dual(out).tangent is None
        res.append([v.detach() for v in r])
    for k, (e, a) in enumerate(zip(*res)):
        _same(e, a, f"result {k}")


def test_program_jvp_topk_pooling_and_batch_norm():
    """A top-k pooling head after a training-mode batch norm (functional, running stats
    updated in place), pushed through func.jvp and jacfwd w.r.t. input and weights: the
    indices come back with zero tangents, the running stats as torch's."""
    g = np.random.default_rng(5)
    x, t = g.standard_normal((6, 5)), g.standard_normal((6, 5))
    res = []
    for lib, model, tangents in _linear_pair():
        rm, rv = lib.zeros(5, dtype=lib.float64), lib.ones(5, dtype=lib.float64)

        def head(inp, w, lib=lib, rm=rm, rv=rv, model=model):
            h = lib.func.functional_call(model, {"weight": w, "bias": model.bias}, (inp,))
            h = lib.nn.functional.batch_norm(h, rm, rv, training=True, momentum=0.2)
            vals, idx = h.tanh().topk(2, dim=1)
            return vals.sum(1), idx

        w = model.weight.detach()
        (o, i), (to, ti) = lib.func.jvp(head, (lib.tensor(x), w),
                                        (lib.tensor(t), tangents["weight"]))
        jac_o, jac_i = lib.func.jacfwd(head, argnums=1)(lib.tensor(x[:3]), w)
        res.append([o, i, to, ti, jac_o, jac_i, rm, rv])
    for k, (e, a) in enumerate(zip(*res)):
        _same(e, a, f"result {k}")


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_make_dual_refuses_integer_tangent_with_value_error(dtype):
    """An integer/bool tangent: PyTorch raises ValueError (retrograd: TypeError)."""
    for lib in (torch, rg):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level(), pytest.raises(ValueError):
            fwAD.make_dual(lib.tensor(_A[0]), lib.ones(5, dtype=getattr(lib, dtype)))
