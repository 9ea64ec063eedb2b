"""Object detection and dense prediction written in plain PyTorch (box utilities, NMS,
anchors, box coding, focal loss, CenterNet/YOLO decoding, DETR matching, segmentation
losses), run on torch and on retrograd from the same inputs and compared in float64."""

from __future__ import annotations

import math
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


# --------------------------------------------------------------- whole programs

def _box_ops(T):
    """DETR's / torchvision's box utilities and a greedy NMS, written against T."""
    def cxcywh_to_xyxy(x):
        x_c, y_c, w, h = x.unbind(-1)
        return T.stack([x_c - 0.5 * w, y_c - 0.5 * h, x_c + 0.5 * w, y_c + 0.5 * h], dim=-1)

    def box_iou(b1, b2):
        a1 = (b1[:, 2] - b1[:, 0]) * (b1[:, 3] - b1[:, 1])
        a2 = (b2[:, 2] - b2[:, 0]) * (b2[:, 3] - b2[:, 1])
        lt = T.max(b1[:, None, :2], b2[:, :2])
        rb = T.min(b1[:, None, 2:], b2[:, 2:])
        wh = (rb - lt).clamp(min=0)
        inter = wh[:, :, 0] * wh[:, :, 1]
        union = a1[:, None] + a2 - inter
        return inter / union, union

    def giou(b1, b2):
        iou, union = box_iou(b1, b2)
        lt = T.min(b1[:, None, :2], b2[:, :2])
        rb = T.max(b1[:, None, 2:], b2[:, 2:])
        wh = (rb - lt).clamp(min=0)
        area = wh[:, :, 0] * wh[:, :, 1]
        return iou - (area - union) / area

    def ciou(b1, b2, eps=1e-7):
        x1, y1, x2, y2 = b1.unbind(-1)
        x1g, y1g, x2g, y2g = b2.unbind(-1)
        inter = (T.min(x2, x2g) - T.max(x1, x1g)).clamp(min=0) * \
            (T.min(y2, y2g) - T.max(y1, y1g)).clamp(min=0)
        union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - inter
        iou = inter / (union + eps)
        diag = (T.max(x2, x2g) - T.min(x1, x1g)) ** 2 + (T.max(y2, y2g) - T.min(y1, y1g)) ** 2
        dist = ((x1 + x2 - x1g - x2g) / 2) ** 2 + ((y1 + y2 - y1g - y2g) / 2) ** 2
        v = (4 / math.pi ** 2) * T.pow(T.atan((x2g - x1g) / (y2g - y1g))
                                       - T.atan((x2 - x1) / (y2 - y1)), 2)
        with T.no_grad():
            alpha = v / (1 - iou + v + eps)
        return iou - dist / (diag + eps) - alpha * v

    def nms(boxes, scores, thr):
        x1, y1, x2, y2 = boxes.unbind(1)
        areas = (x2 - x1) * (y2 - y1)
        _, order = scores.sort(0, descending=True)
        keep = []
        while order.numel() > 0:
            if order.numel() == 1:
                keep.append(order.item())
                break
            i = order[0].item()
            keep.append(i)
            xx1 = x1[order[1:]].clamp(min=x1[i].item())
            yy1 = y1[order[1:]].clamp(min=y1[i])
            xx2 = x2[order[1:]].clamp(max=x2[i])
            yy2 = y2[order[1:]].clamp(max=y2[i])
            inter = (xx2 - xx1).clamp(min=0) * (yy2 - yy1).clamp(min=0)
            iou = inter / (areas[i] + areas[order[1:]] - inter)
            idx = (iou <= thr).nonzero().squeeze()
            if idx.numel() == 0:
                break
            order = order[idx + 1]
        return T.LongTensor(keep)

    def batched_nms(boxes, scores, idxs, thr):
        offsets = idxs.to(boxes) * (boxes.max() + T.tensor(1).to(boxes))
        return nms(boxes + offsets[:, None], scores, thr)

    return cxcywh_to_xyxy, box_iou, giou, ciou, nms, batched_nms


def test_program_box_losses_and_nms():
    rng = np.random.default_rng(0)
    pred = np.concatenate([rng.uniform(5, 20, (8, 2)), rng.uniform(2, 10, (8, 2))], 1)
    c, wh = rng.uniform(5, 20, (8, 2)), rng.uniform(2, 10, (8, 2))
    gt = np.concatenate([c - wh / 2, c + wh / 2], 1)
    c, wh = rng.uniform(5, 20, (40, 2)), rng.uniform(1, 10, (40, 2))
    boxes, scores = np.concatenate([c - wh / 2, c + wh / 2], 1), rng.random(40)
    idxs = rng.integers(0, 3, 40)
    res = {}
    for T in (torch, rg):
        to_xyxy, box_iou, giou, ciou, nms, batched_nms = _box_ops(T)
        p = T.tensor(pred, requires_grad=True)
        b = to_xyxy(p)
        g = giou(b, T.tensor(gt))
        loss = (1 - T.diag(g)).mean() + (1 - ciou(b, T.tensor(gt))).sum() + box_iou(
            b, T.tensor(gt))[0].pow(2).sum()
        loss.backward()
        res[T] = (g, loss, p.grad, nms(T.tensor(boxes), T.tensor(scores), 0.5),
                  batched_nms(T.tensor(boxes), T.tensor(scores), T.tensor(idxs), 0.3))
    for a, b in zip(res[rg], res[torch]):
        close(a, b)


def _retina_targets(T, anchors_cell, iou, gts, codes, logits, targets):
    """Anchors on a grid, Matcher-style label assignment, box encoding and decoding with
    clamped dw/dh, sigmoid focal loss and smooth L1 (torchvision's RetinaNet pieces)."""
    F = T.nn.functional
    sx = T.arange(0, 5, dtype=T.int32) * 8
    sy = T.arange(0, 4, dtype=T.int32) * 8
    yy, xx = T.meshgrid(sy, sx, indexing="ij")
    xx, yy = xx.reshape(-1), yy.reshape(-1)
    shifts = T.stack((xx, yy, xx, yy), dim=1)
    anchors = (shifts.view(-1, 1, 4) + anchors_cell.view(1, -1, 4)).reshape(-1, 4)
    vals, matches = iou.max(dim=0)
    all_matches = matches.clone()
    matches[vals < 0.4] = -1
    matches[(vals >= 0.4) & (vals < 0.5)] = -2
    best, _ = iou.max(dim=1)
    upd = T.where(iou == best[:, None])[1]
    matches[upd] = all_matches[upd]
    tgt = gts[matches.clamp(min=0)]
    a = anchors[: len(tgt)].to(tgt.dtype)
    aw, ah = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    ax, ay = a[:, 0] + 0.5 * aw, a[:, 1] + 0.5 * ah
    gw, gh = tgt[:, 2] - tgt[:, 0], tgt[:, 3] - tgt[:, 1]
    enc = T.stack([10 * (tgt[:, 0] + 0.5 * gw - ax) / aw, 10 * (tgt[:, 1] + 0.5 * gh - ay) / ah,
                   5 * T.log(gw / aw), 5 * T.log(gh / ah)], dim=1)
    dw = T.clamp(codes[:, 2::4] / 5, max=math.log(1000.0 / 16))
    dh = T.clamp(codes[:, 3::4] / 5, max=math.log(1000.0 / 16))
    cx = codes[:, 0::4] / 10 * aw[:, None] + ax[:, None]
    cy = codes[:, 1::4] / 10 * ah[:, None] + ay[:, None]
    pw, ph = T.exp(dw) * aw[:, None], T.exp(dh) * ah[:, None]
    dec = T.stack((cx - 0.5 * pw, cy - 0.5 * ph, cx + 0.5 * pw, cy + 0.5 * ph), dim=2).flatten(1)
    p = T.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    focal = (0.25 * targets + 0.75 * (1 - targets)) * ce * (1 - p_t) ** 2
    fl = focal.sum() / max(1, int((targets > 0).sum()))
    pos = matches >= 0
    sl = F.smooth_l1_loss(dec[pos, :4], tgt[pos], beta=1 / 9, reduction="sum")
    return anchors, matches, enc, dec, fl + sl / max(1, int(pos.sum()))


def test_program_retinanet_targets_and_losses():
    rng = np.random.default_rng(1)
    n = 12
    c, wh = rng.uniform(10, 30, (n, 2)), rng.uniform(4, 20, (n, 2))
    gts = np.concatenate([c - wh / 2, c + wh / 2], 1)
    iou = rng.random((n, 20)) * rng.uniform(0.3, 0.9, 20)
    codes = rng.normal(0, 1, (20, 8)) * np.array([1, 1, 30, 30, 1, 1, 1, 1])
    logits = rng.normal(0, 2, (20, 5))
    targets = (rng.random((20, 5)) > 0.8).astype(np.float64)
    res = {}
    for T in (torch, rg):
        scales, ratios = T.as_tensor((32, 64), dtype=T.float64), T.as_tensor((0.5, 1.0, 2.0),
                                                                             dtype=T.float64)
        hr = T.sqrt(ratios)
        ws, hs = ((1 / hr)[:, None] * scales[None]).view(-1), (hr[:, None] * scales[None]).view(-1)
        cell = (T.stack([-ws, -hs, ws, hs], dim=1) / 2).round()
        cd, lg = T.tensor(codes, requires_grad=True), T.tensor(logits, requires_grad=True)
        out = _retina_targets(T, cell, T.tensor(iou), T.tensor(gts), cd, lg, T.tensor(targets))
        out[-1].backward()
        res[T] = (*out, cd.grad, lg.grad)
    for a, b in zip(res[rg], res[torch]):
        close(a, b)


def _centernet_and_seg(T, heat, wh, reg, logits, labels, weights, K=8):
    """CenterNet decoding (max-pool peaks, top-k over H*W, integer coordinates, gathered
    regressions) and a segmentation loss (weighted CE with ignore_index, Dice, Lovasz)."""
    F = T.nn.functional
    heat = heat.sigmoid()
    hmax = F.max_pool2d(heat, 3, stride=1, padding=1)
    heat = heat * (hmax == heat).float().to(heat.dtype)
    b, c, h, w = heat.shape
    scores, inds = T.topk(heat.view(b, -1), K)
    clses = T.div(inds, h * w, rounding_mode="floor")
    inds = inds % (h * w)
    ys, xs = (inds // w).float(), (inds % w).float()
    feat = reg.permute(0, 2, 3, 1).reshape(b, -1, 2)
    r = feat.gather(1, inds.unsqueeze(2).expand(b, K, 2))
    s = wh.permute(0, 2, 3, 1).reshape(b, -1, 2).gather(1, inds.unsqueeze(2).expand(b, K, 2))
    xs, ys = xs.to(r.dtype) + r[..., 0], ys.to(r.dtype) + r[..., 1]
    dets = T.stack([xs - s[..., 0] / 2, ys - s[..., 1] / 2, xs + s[..., 0] / 2,
                    ys + s[..., 1] / 2, scores, clses.to(r.dtype)], dim=2)
    ce = F.cross_entropy(logits, labels, weight=weights, ignore_index=255)
    valid = labels != 255
    lab = labels.clone()
    lab[~valid] = 0
    onehot = F.one_hot(lab, logits.shape[1]).permute(0, 3, 1, 2).to(logits.dtype)
    onehot = onehot * valid.unsqueeze(1)
    prob = F.softmax(logits, dim=1) * valid.unsqueeze(1)
    inter, card = (prob * onehot).sum((0, 2, 3)), (prob + onehot).sum((0, 2, 3))
    dice = 1 - (2 * inter / (card + 1e-7)).mean()
    fg = (labels.view(-1) == 1)[valid.view(-1)].to(logits.dtype)
    err = (fg - prob[:, 1].reshape(-1)[valid.view(-1)]).abs()
    err_sorted, perm = T.sort(err, 0, descending=True)
    fg_sorted = fg[perm]
    gts = fg_sorted.sum()
    jac = 1.0 - (gts - fg_sorted.cumsum(0)) / (gts + (1 - fg_sorted).cumsum(0))
    jac[1:] = jac[1:] - jac[:-1].clone()
    lovasz = T.dot(err_sorted, jac)
    return dets, ce, dice, lovasz


def test_program_centernet_decode_and_segmentation_losses():
    rng = np.random.default_rng(2)
    heat = rng.normal(-2, 1.5, (2, 3, 8, 10))
    heat[0, 1, 4, 5] = heat[0, 1, 4, 6] = 5.0  # a tie in the max-pool window
    labels = rng.integers(0, 4, (2, 6, 6))
    labels[rng.random((2, 6, 6)) < 0.15] = 255
    data = (heat, rng.uniform(1, 5, (2, 2, 8, 10)), rng.random((2, 2, 8, 10)),
            rng.normal(size=(2, 4, 6, 6)), labels, np.array([0.5, 1.0, 2.0, 1.5]))
    res = {}
    for T in (torch, rg):
        ts = [T.tensor(a) for a in data]
        ts[3].requires_grad_(True)
        dets, ce, dice, lov = _centernet_and_seg(T, *ts)
        (ce + dice + lov).backward()
        res[T] = (dets, ce, dice, lov, ts[3].grad)
    for a, b in zip(res[rg], res[torch]):
        close(a, b)


# --------------------------------------------------------------- empty batches

def test_group_norm_mask_head_on_no_proposals():
    """A GN mask head run on zero RoIs (an image without proposals): empty outputs, and
    the `loss = logits.sum() * 0` idiom gives every parameter a zero gradient."""
    res = {}
    for T in (torch, rg):
        nn = T.nn
        T.manual_seed(0)
        head = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.ReLU(),
                             nn.ConvTranspose2d(8, 8, 2, stride=2), nn.GroupNorm(4, 8),
                             nn.Conv2d(8, 3, 1)).double()
        x = T.zeros(0, 4, 7, 7, dtype=T.float64, requires_grad=True)
        y = head(x)
        (y.sum() * 0).backward()
        res[T] = (y, x.grad, *[p.grad for p in head.parameters()],
                  T.nn.functional.group_norm(T.zeros(0, 6, dtype=T.float64), 3))
    for a, b in zip(res[rg], res[torch]):
        close(a, b)


# --------------------------------------------------------------- Deformable DETR

def _deformable_pieces(T, value, loc, aw, valid_ratios):
    """ms_deform_attn_core_pytorch and get_reference_points: the level shapes are a
    tensor, so its rows' 0-d entries serve as split sizes, view sizes and linspace steps."""
    F = T.nn.functional
    shapes = T.as_tensor([(6, 8), (3, 4)], dtype=T.long)
    start = T.cat((shapes.new_zeros((1,)), shapes.prod(1).cumsum(0)[:-1]))
    n, _, m, d = value.shape
    _, lq, _, nl, p, _ = loc.shape
    values = value.split([h * w for h, w in shapes], dim=1)
    grids = 2 * loc - 1
    sampled = []
    for lid, (h, w) in enumerate(shapes):
        v = values[lid].flatten(2).transpose(1, 2).reshape(n * m, d, h, w)
        g = grids[:, :, :, lid].transpose(1, 2).flatten(0, 1)
        sampled.append(F.grid_sample(v, g, mode="bilinear", padding_mode="zeros",
                                     align_corners=False))
    aw = F.softmax(aw.flatten(-2), -1).view(aw.shape).transpose(1, 2).reshape(n * m, 1, lq,
                                                                              nl * p)
    out = (T.stack(sampled, dim=-2).flatten(-2) * aw).sum(-1).view(n, m * d, lq)
    refs = []
    for lvl, (h, w) in enumerate(shapes):
        ry, rx = T.meshgrid(T.linspace(0.5, h - 0.5, h, dtype=T.float64),
                            T.linspace(0.5, w - 0.5, w, dtype=T.float64), indexing="ij")
        ry = ry.reshape(-1)[None] / (valid_ratios[:, None, lvl, 1] * h)
        rx = rx.reshape(-1)[None] / (valid_ratios[:, None, lvl, 0] * w)
        refs.append(T.stack((rx, ry), -1))
    ref = T.cat(refs, 1)[:, :, None] * valid_ratios[:, None]
    return start, out.transpose(1, 2).contiguous(), ref


def test_program_deformable_attention_and_reference_points():
    rng = np.random.default_rng(4)
    n, m, d, lq, nl, p = 2, 2, 3, 5, 2, 3
    data = (rng.normal(size=(n, 60, m, d)), rng.uniform(-0.1, 1.1, (n, lq, m, nl, p, 2)),
            rng.normal(size=(n, lq, m, nl, p)), rng.uniform(0.5, 1, (n, nl, 2)))
    res = {}
    for T in (torch, rg):
        ts = [T.tensor(a, requires_grad=i < 3) for i, a in enumerate(data)]
        start, out, ref = _deformable_pieces(T, *ts)
        out.pow(2).sum().backward()
        res[T] = (start, out, ref, *[t.grad for t in ts[:3]],
                  T.logspace(0, 2, T.tensor(3), dtype=T.float64),
                  T.linspace(0, 1, T.tensor(4, dtype=T.int32), dtype=T.float64))
    for a, b in zip(res[rg], res[torch]):
        close(a, b)


# --------------------------------------------------------------- index dtypes

@pytest.mark.parametrize("dt", ["int8", "int16", "uint16", "uint32"])
def test_narrow_integer_index_tensors_are_refused(dt):
    """torch takes long, int, byte (as a mask) and bool index tensors; an int16 index
    (a label map kept small) raises IndexError rather than indexing."""
    for T in (torch, rg):
        idx = T.tensor([1, 3], dtype=getattr(T, dt))
        with pytest.raises(IndexError, match="long, int, byte or bool"):
            T.arange(5.0)[idx]
        x = T.zeros(5)
        with pytest.raises(IndexError, match="long, int, byte or bool"):
            x[idx] = 1.0
        close(T.arange(5.0)[T.tensor(1, dtype=getattr(T, dt))],
              torch.arange(5.0)[torch.tensor(1, dtype=getattr(torch, dt))])  # 0-d: an int
    close(rg.arange(5.0)[rg.tensor([1, 3], dtype=rg.int32)],
          torch.arange(5.0)[torch.tensor([1, 3], dtype=torch.int32)])


def test_tensor_of_foreign_tensors_unchanged():
    """torch tensors in a list given to rg.tensor are read through NumPy, as before (only
    retrograd's own tensors count by their dtype)."""
    got = rg.tensor([torch.tensor(1.5, dtype=torch.float64), torch.tensor(2.0)])
    assert got.dtype == rg.float32 and got.tolist() == [1.5, 2.0]


def test_topk_kthvalue_take_integer_tensor_k():
    """Hard-negative mining: `loss_neg.topk(num_pos * 3)` with `num_pos` a tensor."""
    loss = np.random.default_rng(5).random(20)
    labels = np.arange(20) % 5 == 0
    res = {}
    for T in (torch, rg):
        lo, pos = T.tensor(loss), T.tensor(labels)
        num_pos = pos.sum()
        k = T.clamp(num_pos * 3, max=int((~pos).sum()))
        neg = lo.masked_fill(pos, -1.0)
        res[T] = (neg.topk(k), neg.topk(T.tensor([2])), lo.kthvalue(num_pos),
                  lo.kthvalue(T.tensor([3])))
        with pytest.raises(TypeError):
            lo.topk(T.tensor(2.0))
    for a, b in zip(res[rg], res[torch]):
        close(a.values, b.values)
        close(a.indices, b.indices)
