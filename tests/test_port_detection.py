"""Object detection and dense prediction written in plain PyTorch (box utilities, NMS,
anchors, box coding, focal loss, CenterNet/YOLO decoding, DETR matching, segmentation
losses), run on torch and on retrograd from the same inputs and compared in float64."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch
from port_compare import close

import retrograd as rg

# --------------------------------------------------------------- max/min with out=

def _draw_gaussian(T, heatmap, center, radius):
    """CenterNet/mmdet's gen_gaussian_target: the peak written into a heatmap slice with
    torch.max(..., out=slice)."""
    d = 2 * radius + 1
    sigma = d / 6
    r = T.arange(-radius, radius + 1, dtype=heatmap.dtype)
    y, x = T.meshgrid(r, r, indexing="ij")
    g = T.exp(-(x * x + y * y) / (2 * sigma * sigma))
    cx, cy = center
    h, w = heatmap.shape
    left, right = min(cx, radius), min(w - cx, radius + 1)
    top, bottom = min(cy, radius), min(h - cy, radius + 1)
    masked = heatmap[cy - top:cy + bottom, cx - left:cx + right]
    mg = g[radius - top:radius + bottom, radius - left:radius + right]
    T.max(masked, mg, out=heatmap[cy - top:cy + bottom, cx - left:cx + right])
    return heatmap


def test_max_min_out_draw_gaussian():
    res = {}
    for T in (torch, rg):
        hm = T.zeros(12, 15, dtype=T.float64)
        for c, r in (((3, 4), 2), ((5, 5), 3), ((14, 0), 2)):
            _draw_gaussian(T, hm, c, r)
        res[T] = hm
    close(res[rg], res[torch])


@pytest.mark.parametrize("fn", ["max", "min"])
def test_max_min_out_forms(fn):
    a = np.random.default_rng(0).normal(size=(3, 4))
    b = np.random.default_rng(1).normal(size=(3, 4))
    got = {}
    for T in (torch, rg):
        f = getattr(T, fn)
        o = T.empty(3, 4, dtype=T.float64)
        r = f(T.tensor(a), T.tensor(b), out=o)
        assert r is o
        v, i = T.empty(0, dtype=T.float64), T.empty(0, dtype=T.int64)
        pair = f(T.tensor(a), 1, True, out=(v, i))
        assert pair[0] is v and pair[1] is i and pair.values is v
        s = T.empty((), dtype=T.float64)
        f(T.tensor(a), out=s)
        got[T] = (o, v, i, s)
    for x, y in zip(got[rg], got[torch]):
        close(x, y)
    for T in (torch, rg):  # a dim reduction wants a pair; a grad-requiring input refuses
        with pytest.raises(TypeError):
            getattr(T, fn)(T.tensor(a), 1, out=T.empty(3, dtype=T.float64))
        with pytest.raises(RuntimeError):
            getattr(T, fn)(T.tensor(a, requires_grad=True), T.tensor(b),
                           out=T.empty(3, 4, dtype=T.float64))


# --------------------------------------------------------------- tensor() of tensors

@pytest.mark.parametrize("make", [
    lambda T, s: [s[0], s[1]],                                   # float64 0-d tensors
    lambda T, s: [s[0], 2.0],                                    # with a Python float
    lambda T, s: [[s[0], 1.0], [2.0, s[2]]],                     # nested
    lambda T, s: [T.tensor(1, dtype=T.int32), T.tensor(2, dtype=T.int32)],
    lambda T, s: [T.tensor(1, dtype=T.int32), 2],                # int64 wins
    lambda T, s: [T.tensor(1.0, dtype=T.float16)],
    lambda T, s: [T.tensor(3), 2.5],                             # the default float
    lambda T, s: [s[:1], s[1:2]],                                # one-element 1-d: scalars
    lambda T, s: [s[0], 1j],
])
def test_tensor_of_tensors_keeps_their_dtype(make):
    s = np.array([0.25, 0.5, 0.75])
    got = {T: T.tensor(make(T, T.tensor(s))) for T in (torch, rg)}
    close(got[rg], got[torch])
    try:
        want = torch.tensor(make(torch, torch.tensor(s)), dtype=torch.float64)
    except TypeError:  # a complex value to a real dtype
        with pytest.raises(TypeError):
            rg.tensor(make(rg, rg.tensor(s)), dtype=rg.float64)
    else:
        close(rg.tensor(make(rg, rg.tensor(s)), dtype=rg.float64), want)


def test_tensor_of_multi_element_tensors_raises():
    for T in (torch, rg):
        with pytest.raises(ValueError, match="one element tensors"):
            T.tensor([T.ones(2), T.ones(2)])


# --------------------------------------------------------------- cat onto torch.zeros(0)

def test_cat_skips_legacy_empty_1d():
    """YOLO-style collection: `out = torch.zeros(0)` (or `torch.Tensor()`), then boxes of
    shape (n, 6) catted onto it in a loop."""
    rng = np.random.default_rng(0)
    dets = [rng.normal(size=(n, 6)) for n in (3, 0, 2)]
    res = {}
    for T in (torch, rg):
        out = T.zeros(0, dtype=T.float64)
        for d in dets:
            out = T.cat((out, T.tensor(d)), 0) if len(d) else out
        x = T.tensor(dets[0], requires_grad=True)
        e = T.zeros(0, requires_grad=True)
        y = T.cat([e, x, e], dim=1)
        (y * y).sum().backward()
        res[T] = (out, y, x.grad, e.grad, T.cat([T.ones(2, 3), T.zeros(0, dtype=T.float64)]),
                  T.cat([T.zeros(0), T.zeros(0, 3)]), T.cat([T.zeros(0), T.zeros(0)]))
    for a, b in zip(res[rg], res[torch]):
        close(a, b)
    for T in (torch, rg):  # only 1-d empties are skipped; dim is checked against the others
        with pytest.raises(RuntimeError):
            T.cat([T.zeros(0, 1), T.ones(2, 3)])
        with pytest.raises(IndexError):
            T.cat([T.zeros(0), T.ones(2, 3)], dim=2)


@pytest.mark.parametrize("call", ["topk(1)", "kthvalue(1)", "median()", "median(0)",
                                  "nanmedian()", "nanmedian(0)"])
def test_order_statistics_refuse_bool(call):
    for T in (torch, rg):
        with pytest.raises((RuntimeError, NotImplementedError)):
            eval(f"x.{call}", {"x": T.tensor([True, False, True])})
    for T in (torch, rg):  # sort and argsort take bools
        T.tensor([True, False]).sort()


# --------------------------------------------------------------- torchvision's helper names

def test_assert_and_script_if_tracing():
    """torchvision's box ops, copied into a repo: `torch._assert` checks and the
    `@torch.jit._script_if_tracing` batched NMS."""
    def batched_nms_vanilla(T, boxes, scores, idxs, thr):
        T._assert(boxes.dim() == 2 and boxes.shape[-1] == 4, "boxes must be (N, 4)")
        keep_mask = T.zeros_like(scores, dtype=T.bool)
        for class_id in T.unique(idxs):
            curr = T.where(idxs == class_id)[0]
            b, s = boxes[curr], scores[curr]
            order = s.argsort(descending=True)
            lt = T.max(b[:, None, :2], b[:, :2])
            rb = T.min(b[:, None, 2:], b[:, 2:])
            wh = (rb - lt).clamp(min=0)
            inter = wh[..., 0] * wh[..., 1]
            area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
            iou = inter / (area[:, None] + area - inter)
            sup = T.zeros(len(b), dtype=T.bool)
            kept = []
            for i in order.tolist():
                if not sup[i]:
                    kept.append(i)
                    sup |= iou[i] > thr
            keep_mask[curr[kept]] = True
        keep_indices = T.where(keep_mask)[0]
        return keep_indices[scores[keep_indices].sort(descending=True)[1]]

    rng = np.random.default_rng(3)
    c, wh = rng.uniform(5, 20, (25, 2)), rng.uniform(2, 9, (25, 2))
    boxes, scores = np.concatenate([c - wh / 2, c + wh / 2], 1), rng.random(25)
    idxs = rng.integers(0, 3, 25)
    res = {}
    for T in (torch, rg):
        fn = T.jit._script_if_tracing(partial(batched_nms_vanilla, T))
        res[T] = fn(T.tensor(boxes), T.tensor(scores), T.tensor(idxs), 0.4)
        T._assert(T.tensor(True), "holds")
        for bad in (False, T.tensor(False)):
            with pytest.raises(AssertionError, match="must be"):
                T._assert(bad, "boxes must be (N, 4)")
        with pytest.raises(RuntimeError):
            T._assert(T.tensor([True, True]), "ambiguous")
        with pytest.raises(AssertionError, match=r"\(N, 4\)"):
            fn(T.zeros(3, 5, dtype=T.float64), T.zeros(3, dtype=T.float64), T.zeros(3), 0.5)
    close(res[rg], res[torch])


# --------------------------------------------------------------- integer tensors as sizes

def test_integer_tensor_sizes():
    """`num_pos = mask.sum()` used as a size: torch.zeros(num_pos), new_zeros, repeat."""
    mask = np.array([True, False, True, True])
    res = {}
    for T in (torch, rg):
        m = T.tensor(mask)
        n = m.sum()
        x = T.arange(3.0, dtype=T.float64)
        res[T] = (T.zeros(n), T.ones(2, n, dtype=T.float64), T.full((n,), 7),
                  T.empty(T.tensor([2]), n).shape, T.randn(n).shape, T.zeros(size=(n,)),
                  x.new_zeros(n), x.new_full((n, 1), 2.0), x.new_ones(T.tensor(2, dtype=T.int32)),
                  x.repeat(n), T.randint(5, (n,)).shape)
        with pytest.raises(TypeError):  # a float tensor is no size
            T.zeros(T.tensor(3.0))
    for a, b in zip(res[rg], res[torch]):
        if isinstance(b, tuple):
            assert tuple(a) == tuple(b)
        else:
            close(a, b)
