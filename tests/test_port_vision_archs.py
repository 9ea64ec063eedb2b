# ruff: noqa: B006, B007, B008, F821, F841, UP018, UP031, UP034  (the sources' idioms, as written)
"""Vision architectures and training code as people copy them from torchvision / timm /
the papers' reference repositories (MobileNetV3 with hard-sigmoid squeeze-excitation,
EfficientNet MBConv with DropPath, ConvNeXt with its hand-written channels-first LayerNorm,
Swin V1/V2 window attention with the shifted-window mask and relative position bias,
DenseNet, Inception, MLP-Mixer, a conv-stem + TransformerEncoder hybrid, FPN + ASPP
segmentation with Dice loss, attention modules (CBAM, ECA, coordinate attention, SK,
non-local), Tensor.unfold patch extraction) and the training utilities around them
(named_modules init, frozen BatchNorm, weight-decay param groups, nesterov SGD, warmup +
cosine via SequentialLR, label smoothing, mixup / cutmix, clip_grad_norm_, EMA by deepcopy).

Each program is one class body written against a module object T (torch or retrograd),
built on both, torch's weights loaded into retrograd via load_state_dict; then outputs,
losses, every parameter's gradient and three optimizer steps are compared in float64
(1e-9) and float32 (2e-4)."""

from __future__ import annotations

import copy
import math
from collections import OrderedDict
from functools import partial

import numpy as np
import pytest
import torch
from port_compare import close, close_grads

import retrograd as rg

torch.set_num_threads(1)


# ---------------------------------------------------------------- harness


def build(make, dtype):
    torch.manual_seed(0)
    tm = make(torch).to(getattr(torch, dtype))
    rg.manual_seed(0)
    rm = make(rg).to(getattr(rg, dtype))
    rm.load_state_dict({k: v.detach().numpy().copy() for k, v in tm.state_dict().items()})
    return tm, rm


def ce(T, out, target):
    return T.nn.functional.cross_entropy(out, T.tensor(np.array([1, 3])))


def sgd(T, m):
    return T.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)


def run(make, x, dtype, loss_fn=ce, opt=sgd, train=True, steps=3):
    """Outputs, loss, every gradient and the state after each of `steps` optimizer steps,
    then an eval-mode output under no_grad: retrograd against torch."""
    tol = 1e-9 if dtype == "float64" else 2e-4
    tm, rm = build(make, dtype)
    topt, ropt = opt(torch, tm), opt(rg, rm)
    tm.train(train)
    rm.train(train)
    x = x.astype(dtype)
    for step in range(steps):
        to, ro = tm(torch.tensor(x)), rm(rg.tensor(x))
        close(ro, to, f"output, step {step}", tol)
        tl, rl = loss_fn(torch, to, None), loss_fn(rg, ro, None)
        close(rl, tl, f"loss, step {step}", tol)
        topt.zero_grad()
        ropt.zero_grad()
        tl.backward()
        rl.backward()
        close_grads(tm, rm, f", step {step}", tol)
        topt.step()
        ropt.step()
        ts, rs = tm.state_dict(), rm.state_dict()
        assert list(ts) == list(rs)
        ss = max(float(v.abs().max()) for v in ts.values() if v.is_floating_point())
        for k, v in ts.items():
            if v.is_floating_point():  # parameters whose gradient is 0 up to rounding: scale
                close(
                    rs[k],
                    v,
                    f"state {k}, step {step}",
                    tol,
                    ss * (1e-3 if dtype == "float64" else 1e-1),
                )
            else:
                close(rs[k], v, f"state {k}, step {step}", 0)
    tm.eval()
    rm.eval()
    with torch.no_grad():
        to = tm(torch.tensor(x))
    with rg.no_grad():
        ro = rm(rg.tensor(x))
    close(ro, to, "eval output", tol)
    assert not ro.requires_grad


DTYPES = ["float64", "float32"]
RNG = np.random.default_rng(0)
X32 = RNG.standard_normal((2, 3, 32, 32))
X16 = RNG.standard_normal((2, 3, 16, 16))
X12 = RNG.standard_normal((2, 3, 12, 12))
X_ODD = RNG.standard_normal((2, 3, 13, 11))
# ---------------------------------------------------------------- convnets


def zoo_convnets(T):
    nn = T.nn
    F = T.nn.functional

    def _make_divisible(v, divisor=8, min_value=None):
        if min_value is None:
            min_value = divisor
        new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
        if new_v < 0.9 * v:
            new_v += divisor
        return new_v

    class SE(nn.Module):
        def __init__(self, c, rd):
            super().__init__()
            self.fc1 = nn.Conv2d(c, rd, 1)
            self.fc2 = nn.Conv2d(rd, c, 1)

        def forward(self, x):
            s = F.adaptive_avg_pool2d(x, 1)
            s = F.relu(self.fc1(s), inplace=True)
            return x * F.hardsigmoid(self.fc2(s), inplace=True)

    class InvertedResidual(nn.Module):
        def __init__(self, inp, oup, stride, expand_ratio, k=3, se=False, act=nn.ReLU6):
            super().__init__()
            hidden = int(round(inp * expand_ratio))
            self.use_res_connect = stride == 1 and inp == oup
            layers = []
            if expand_ratio != 1:
                layers += [
                    nn.Conv2d(inp, hidden, 1, 1, 0, bias=False),
                    nn.BatchNorm2d(hidden),
                    act(inplace=True),
                ]
            layers += [
                nn.Conv2d(hidden, hidden, k, stride, (k - 1) // 2, groups=hidden, bias=False),
                nn.BatchNorm2d(hidden),
                act(inplace=True),
            ]
            if se:
                layers.append(SE(hidden, _make_divisible(hidden // 4)))
            layers += [nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            if self.use_res_connect:
                return x + self.conv(x)
            return self.conv(x)

    class MobileNet(nn.Module):
        def __init__(self, v3=False, num_classes=5, width_mult=0.5, p=0.2):
            self.p = p
            super().__init__()
            act = nn.Hardswish if v3 else nn.ReLU6
            inp = _make_divisible(32 * width_mult)
            cfg = [[1, 16, 1, 1, 3, False], [6, 24, 2, 2, 3, v3], [4, 32, 1, 2, 5, v3]]
            feats = [
                nn.Sequential(
                    nn.Conv2d(3, inp, 3, 2, 1, bias=False), nn.BatchNorm2d(inp), act(inplace=True)
                )
            ]
            for t, c, n, s, k, se in cfg:
                out = _make_divisible(c * width_mult)
                for i in range(n):
                    feats.append(InvertedResidual(inp, out, s if i == 0 else 1, t, k, se, act))
                    inp = out
            self.last = _make_divisible(64 * width_mult)
            feats.append(
                nn.Sequential(
                    nn.Conv2d(inp, self.last, 1, bias=False),
                    nn.BatchNorm2d(self.last),
                    act(inplace=True),
                )
            )
            self.features = nn.Sequential(*feats)
            self.classifier = nn.Sequential(nn.Dropout(self.p), nn.Linear(self.last, num_classes))
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out")
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
                elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.features(x)
            x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
            x = T.flatten(x, 1)
            return self.classifier(x)

    def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
        if drop_prob == 0.0 or not training:
            return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0 and scale_by_keep:
            random_tensor.div_(keep_prob)
        return x * random_tensor

    def drop_path_old(x, drop_prob=0.0, training=False):
        if drop_prob == 0.0 or not training:
            return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = keep_prob + T.rand(shape, dtype=x.dtype, device=x.device)
        random_tensor.floor_()
        return x.div(keep_prob) * random_tensor

    class DropPath(nn.Module):
        def __init__(self, drop_prob=None, old=False):
            super().__init__()
            self.drop_prob = drop_prob
            self.old = old

        def forward(self, x):
            f = drop_path_old if self.old else drop_path
            return f(x, self.drop_prob, self.training)

        def extra_repr(self):
            return f"drop_prob={round(self.drop_prob, 3):0.3f}"

    class MBConv(nn.Module):
        def __init__(self, cin, cout, stride, expand, dp, old):
            super().__init__()
            mid = cin * expand
            self.has_skip = stride == 1 and cin == cout
            self.conv_pw = nn.Conv2d(cin, mid, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(mid)
            self.act1 = nn.SiLU(inplace=True)
            self.conv_dw = nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False)
            self.bn2 = nn.BatchNorm2d(mid)
            self.act2 = nn.SiLU(inplace=True)
            rd = max(1, cin // 4)
            self.se_reduce = nn.Conv2d(mid, rd, 1)
            self.se_expand = nn.Conv2d(rd, mid, 1)
            self.conv_pwl = nn.Conv2d(mid, cout, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.drop_path = DropPath(dp, old) if dp else nn.Identity()

        def forward(self, x):
            shortcut = x
            x = self.act1(self.bn1(self.conv_pw(x)))
            x = self.act2(self.bn2(self.conv_dw(x)))
            s = x.mean((2, 3), keepdim=True)
            s = self.se_expand(F.silu(self.se_reduce(s)))
            x = x * s.sigmoid()
            x = self.bn3(self.conv_pwl(x))
            if self.has_skip:
                x = self.drop_path(x) + shortcut
            return x

    class EffNet(nn.Module):
        def __init__(self, dp=0.0, old=False, p=0.2):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.SiLU()
            )
            self.blocks = nn.Sequential(
                MBConv(8, 8, 1, 4, dp, old),
                MBConv(8, 12, 2, 4, dp, old),
                MBConv(12, 12, 1, 4, dp, old),
            )
            self.head = nn.Linear(12, 5)
            self.p = p

        def forward(self, x):
            x = self.blocks(self.stem(x))
            x = x.mean([-2, -1])
            return self.head(F.dropout(x, self.p, self.training))

    class LayerNorm(nn.Module):
        def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
            super().__init__()
            self.weight = nn.Parameter(T.ones(normalized_shape))
            self.bias = nn.Parameter(T.zeros(normalized_shape))
            self.eps = eps
            self.data_format = data_format
            self.normalized_shape = (normalized_shape,)

        def forward(self, x):
            if self.data_format == "channels_last":
                return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / T.sqrt(s + self.eps)
            x = self.weight[:, None, None] * x + self.bias[:, None, None]
            return x

    class Block(nn.Module):
        def __init__(self, dim, drop_path=0.0, layer_scale_init_value=1e-6):
            super().__init__()
            self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
            self.norm = LayerNorm(dim, eps=1e-6)
            self.pwconv1 = nn.Linear(dim, 4 * dim)
            self.act = nn.GELU()
            self.pwconv2 = nn.Linear(4 * dim, dim)
            self.gamma = (
                nn.Parameter(layer_scale_init_value * T.ones((dim)), requires_grad=True)
                if layer_scale_init_value > 0
                else None
            )
            self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

        def forward(self, x):
            input = x
            x = self.dwconv(x)
            x = x.permute(0, 2, 3, 1)
            x = self.norm(x)
            x = self.pwconv1(x)
            x = self.act(x)
            x = self.pwconv2(x)
            if self.gamma is not None:
                x = self.gamma * x
            x = x.permute(0, 3, 1, 2)
            x = input + self.drop_path(x)
            return x

    class ConvNeXt(nn.Module):
        def __init__(
            self,
            in_chans=3,
            num_classes=5,
            depths=[1, 2],
            dims=[8, 16],
            drop_path_rate=0.0,
            layer_scale_init_value=0.5,
            head_init_scale=1.0,
        ):
            super().__init__()
            self.downsample_layers = nn.ModuleList()
            stem = nn.Sequential(
                nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4),
                LayerNorm(dims[0], eps=1e-6, data_format="channels_first"),
            )
            self.downsample_layers.append(stem)
            for i in range(len(dims) - 1):
                self.downsample_layers.append(
                    nn.Sequential(
                        LayerNorm(dims[i], eps=1e-6, data_format="channels_first"),
                        nn.Conv2d(dims[i], dims[i + 1], kernel_size=2, stride=2),
                    )
                )
            self.stages = nn.ModuleList()
            dp_rates = [x.item() for x in T.linspace(0, drop_path_rate, sum(depths))]
            cur = 0
            for i in range(len(dims)):
                self.stages.append(
                    nn.Sequential(
                        *[
                            Block(
                                dim=dims[i],
                                drop_path=dp_rates[cur + j],
                                layer_scale_init_value=layer_scale_init_value,
                            )
                            for j in range(depths[i])
                        ]
                    )
                )
                cur += depths[i]
            self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
            self.head = nn.Linear(dims[-1], num_classes)
            self.apply(self._init_weights)
            with T.no_grad():
                self.head.weight.mul_(head_init_scale)
            with T.no_grad():
                self.head.bias.mul_(head_init_scale)

        def _init_weights(self, m):
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.constant_(m.bias, 0)

        def forward(self, x):
            for i in range(len(self.stages)):
                x = self.downsample_layers[i](x)
                x = self.stages[i](x)
            x = self.norm(x.mean([-2, -1]))
            return self.head(x)

    return dict(MobileNet=MobileNet, EffNet=EffNet, ConvNeXt=ConvNeXt, DropPath=DropPath)


# ---------------------------------------------------------------- swin


def zoo_swin(T):
    nn = T.nn
    F = T.nn.functional
    torch = T

    def to_2tuple(x):
        return (x, x) if isinstance(x, int) else tuple(x)

    class Mlp(nn.Module):
        def __init__(
            self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0
        ):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = act_layer()
            self.fc2 = nn.Linear(hidden_features, out_features)
            self.drop = nn.Dropout(drop)

        def forward(self, x):
            x = self.fc1(x)
            x = self.act(x)
            x = self.drop(x)
            x = self.fc2(x)
            x = self.drop(x)
            return x

    def window_partition(x, window_size):
        B, H, W, C = x.shape
        x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
        windows = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)
        return windows

    def window_reverse(windows, window_size, H, W):
        B = int(windows.shape[0] / (H * W / window_size / window_size))
        x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
        x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)
        return x

    class WindowAttention(nn.Module):
        def __init__(
            self,
            dim,
            window_size,
            num_heads,
            qkv_bias=True,
            qk_scale=None,
            attn_drop=0.0,
            proj_drop=0.0,
        ):
            super().__init__()
            self.dim = dim
            self.window_size = window_size
            self.num_heads = num_heads
            head_dim = dim // num_heads
            self.scale = qk_scale or head_dim**-0.5
            self.relative_position_bias_table = nn.Parameter(
                torch.zeros((2 * window_size[0] - 1) * (2 * window_size[1] - 1), num_heads)
            )
            coords_h = torch.arange(self.window_size[0])
            coords_w = torch.arange(self.window_size[1])
            coords = torch.stack(torch.meshgrid([coords_h, coords_w], indexing="ij"))
            coords_flatten = torch.flatten(coords, 1)
            relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
            relative_coords = relative_coords.permute(1, 2, 0).contiguous()
            relative_coords[:, :, 0] += self.window_size[0] - 1
            relative_coords[:, :, 1] += self.window_size[1] - 1
            relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
            relative_position_index = relative_coords.sum(-1)
            self.register_buffer("relative_position_index", relative_position_index)
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)
            nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
            self.softmax = nn.Softmax(dim=-1)

        def forward(self, x, mask=None):
            B_, N, C = x.shape
            qkv = (
                self.qkv(x)
                .reshape(B_, N, 3, self.num_heads, C // self.num_heads)
                .permute(2, 0, 3, 1, 4)
            )
            q, k, v = qkv[0], qkv[1], qkv[2]
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            relative_position_bias = self.relative_position_bias_table[
                self.relative_position_index.view(-1)
            ].view(
                self.window_size[0] * self.window_size[1],
                self.window_size[0] * self.window_size[1],
                -1,
            )
            relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()
            attn = attn + relative_position_bias.unsqueeze(0)
            if mask is not None:
                nW = mask.shape[0]
                attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(
                    0
                )
                attn = attn.view(-1, self.num_heads, N, N)
                attn = self.softmax(attn)
            else:
                attn = self.softmax(attn)
            attn = self.attn_drop(attn)
            x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
            x = self.proj(x)
            x = self.proj_drop(x)
            return x

    class SwinTransformerBlock(nn.Module):
        def __init__(
            self,
            dim,
            input_resolution,
            num_heads,
            window_size=7,
            shift_size=0,
            mlp_ratio=4.0,
            qkv_bias=True,
            qk_scale=None,
            drop=0.0,
            attn_drop=0.0,
            drop_path=0.0,
            act_layer=nn.GELU,
            norm_layer=nn.LayerNorm,
            fused_window_process=False,
        ):
            super().__init__()
            self.dim = dim
            self.input_resolution = input_resolution
            self.num_heads = num_heads
            self.window_size = window_size
            self.shift_size = shift_size
            self.mlp_ratio = mlp_ratio
            if min(self.input_resolution) <= self.window_size:
                self.shift_size = 0
                self.window_size = min(self.input_resolution)
            assert 0 <= self.shift_size < self.window_size, "shift_size must in 0-window_size"
            self.norm1 = norm_layer(dim)
            self.attn = WindowAttention(
                dim,
                window_size=to_2tuple(self.window_size),
                num_heads=num_heads,
                qkv_bias=qkv_bias,
                qk_scale=qk_scale,
                attn_drop=attn_drop,
                proj_drop=drop,
            )
            self.drop_path = nn.Identity()
            self.norm2 = norm_layer(dim)
            mlp_hidden_dim = int(dim * mlp_ratio)
            self.mlp = Mlp(
                in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop
            )
            if self.shift_size > 0:
                H, W = self.input_resolution
                img_mask = torch.zeros((1, H, W, 1))
                h_slices = (
                    slice(0, -self.window_size),
                    slice(-self.window_size, -self.shift_size),
                    slice(-self.shift_size, None),
                )
                w_slices = (
                    slice(0, -self.window_size),
                    slice(-self.window_size, -self.shift_size),
                    slice(-self.shift_size, None),
                )
                cnt = 0
                for h in h_slices:
                    for w in w_slices:
                        img_mask[:, h, w, :] = cnt
                        cnt += 1
                mask_windows = window_partition(img_mask, self.window_size)
                mask_windows = mask_windows.view(-1, self.window_size * self.window_size)
                attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
                attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(
                    attn_mask == 0, float(0.0)
                )
            else:
                attn_mask = None
            self.register_buffer("attn_mask", attn_mask)
            self.fused_window_process = fused_window_process

        def forward(self, x):
            H, W = self.input_resolution
            B, L, C = x.shape
            assert L == H * W, "input feature has wrong size"
            shortcut = x
            x = self.norm1(x)
            x = x.view(B, H, W, C)
            if self.shift_size > 0:
                shifted_x = torch.roll(x, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
                x_windows = window_partition(shifted_x, self.window_size)
            else:
                shifted_x = x
                x_windows = window_partition(shifted_x, self.window_size)
            x_windows = x_windows.view(-1, self.window_size * self.window_size, C)
            attn_windows = self.attn(x_windows, mask=self.attn_mask)
            attn_windows = attn_windows.view(-1, self.window_size, self.window_size, C)
            if self.shift_size > 0:
                shifted_x = window_reverse(attn_windows, self.window_size, H, W)
                x = torch.roll(shifted_x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
            else:
                shifted_x = window_reverse(attn_windows, self.window_size, H, W)
                x = shifted_x
            x = x.view(B, H * W, C)
            x = shortcut + self.drop_path(x)
            x = x + self.drop_path(self.mlp(self.norm2(x)))
            return x

    class PatchMerging(nn.Module):
        def __init__(self, input_resolution, dim, norm_layer=nn.LayerNorm):
            super().__init__()
            self.input_resolution = input_resolution
            self.dim = dim
            self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
            self.norm = norm_layer(4 * dim)

        def forward(self, x):
            H, W = self.input_resolution
            B, L, C = x.shape
            assert L == H * W, "input feature has wrong size"
            assert H % 2 == 0 and W % 2 == 0, f"x size ({H}*{W}) are not even."
            x = x.view(B, H, W, C)
            x0 = x[:, 0::2, 0::2, :]
            x1 = x[:, 1::2, 0::2, :]
            x2 = x[:, 0::2, 1::2, :]
            x3 = x[:, 1::2, 1::2, :]
            x = torch.cat([x0, x1, x2, x3], -1)
            x = x.view(B, -1, 4 * C)
            x = self.norm(x)
            x = self.reduction(x)
            return x

    class PatchEmbed(nn.Module):
        def __init__(self, img_size=16, patch_size=2, in_chans=3, embed_dim=8, norm_layer=None):
            super().__init__()
            img_size = to_2tuple(img_size)
            patch_size = to_2tuple(patch_size)
            patches_resolution = [img_size[0] // patch_size[0], img_size[1] // patch_size[1]]
            self.img_size = img_size
            self.patch_size = patch_size
            self.patches_resolution = patches_resolution
            self.num_patches = patches_resolution[0] * patches_resolution[1]
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
            self.norm = norm_layer(embed_dim) if norm_layer is not None else None

        def forward(self, x):
            B, C, H, W = x.shape
            x = self.proj(x).flatten(2).transpose(1, 2)
            if self.norm is not None:
                x = self.norm(x)
            return x

    class Swin(nn.Module):
        def __init__(self, num_classes=5, embed_dim=8, window_size=4):
            super().__init__()
            self.patch_embed = PatchEmbed(16, 2, 3, embed_dim, nn.LayerNorm)
            self.absolute_pos_embed = nn.Parameter(torch.zeros(1, 64, embed_dim))
            nn.init.trunc_normal_(self.absolute_pos_embed, std=0.02)
            self.pos_drop = nn.Dropout(p=0.0)
            r = (8, 8)
            self.blocks1 = nn.ModuleList(
                [
                    SwinTransformerBlock(
                        embed_dim, r, 2, window_size, 0 if i % 2 == 0 else window_size // 2
                    )
                    for i in range(2)
                ]
            )
            self.merge = PatchMerging(r, embed_dim)
            r2 = (4, 4)
            self.blocks2 = nn.ModuleList(
                [
                    SwinTransformerBlock(2 * embed_dim, r2, 4, 2, 0 if i % 2 == 0 else 1)
                    for i in range(2)
                ]
            )
            self.norm = nn.LayerNorm(2 * embed_dim)
            self.avgpool = nn.AdaptiveAvgPool1d(1)
            self.head = nn.Linear(2 * embed_dim, num_classes)
            self.apply(self._init_weights)

        def _init_weights(self, m):
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.LayerNorm):
                nn.init.constant_(m.bias, 0)
                nn.init.constant_(m.weight, 1.0)

        def no_weight_decay_keywords(self):
            return {"relative_position_bias_table"}

        def forward(self, x):
            x = self.patch_embed(x)
            x = x + self.absolute_pos_embed
            x = self.pos_drop(x)
            for b in self.blocks1:
                x = b(x)
            x = self.merge(x)
            for b in self.blocks2:
                x = b(x)
            x = self.norm(x)
            x = self.avgpool(x.transpose(1, 2))
            x = torch.flatten(x, 1)
            return self.head(x)

    return dict(Swin=Swin, window_partition=window_partition, window_reverse=window_reverse)


# ---------------------------------------------------------------- dense_inception


def zoo_dense_inception(T):
    nn = T.nn
    F = T.nn.functional
    torch = T

    class _DenseLayer(nn.Module):
        def __init__(self, num_input_features, growth_rate, bn_size, drop_rate):
            super().__init__()
            self.norm1 = nn.BatchNorm2d(num_input_features)
            self.relu1 = nn.ReLU(inplace=True)
            self.conv1 = nn.Conv2d(
                num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False
            )
            self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
            self.relu2 = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(
                bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False
            )
            self.drop_rate = float(drop_rate)

        def bn_function(self, inputs):
            concated_features = torch.cat(inputs, 1)
            return self.conv1(self.relu1(self.norm1(concated_features)))

        def forward(self, input):
            prev_features = [input] if isinstance(input, T.Tensor) else input
            bottleneck_output = self.bn_function(prev_features)
            new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
            if self.drop_rate > 0:
                new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
            return new_features

    class _DenseBlock(nn.ModuleDict):
        _version = 2

        def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate):
            super().__init__()
            for i in range(num_layers):
                layer = _DenseLayer(
                    num_input_features + i * growth_rate, growth_rate, bn_size, drop_rate
                )
                self.add_module("denselayer%d" % (i + 1), layer)

        def forward(self, init_features):
            features = [init_features]
            for name, layer in self.items():
                new_features = layer(features)
                features.append(new_features)
            return torch.cat(features, 1)

    class _Transition(nn.Sequential):
        def __init__(self, num_input_features, num_output_features):
            super().__init__()
            self.norm = nn.BatchNorm2d(num_input_features)
            self.relu = nn.ReLU(inplace=True)
            self.conv = nn.Conv2d(
                num_input_features, num_output_features, kernel_size=1, stride=1, bias=False
            )
            self.pool = nn.AvgPool2d(kernel_size=2, stride=2)

    class DenseNet(nn.Module):
        def __init__(
            self,
            growth_rate=4,
            block_config=(2, 2),
            num_init_features=8,
            bn_size=2,
            drop_rate=0,
            num_classes=5,
        ):
            super().__init__()
            self.features = nn.Sequential(
                OrderedDict(
                    [
                        (
                            "conv0",
                            nn.Conv2d(
                                3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False
                            ),
                        ),
                        ("norm0", nn.BatchNorm2d(num_init_features)),
                        ("relu0", nn.ReLU(inplace=True)),
                        ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
                    ]
                )
            )
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                block = _DenseBlock(num_layers, num_features, bn_size, growth_rate, drop_rate)
                self.features.add_module("denseblock%d" % (i + 1), block)
                num_features = num_features + num_layers * growth_rate
                if i != len(block_config) - 1:
                    trans = _Transition(num_features, num_features // 2)
                    self.features.add_module("transition%d" % (i + 1), trans)
                    num_features = num_features // 2
            self.features.add_module("norm5", nn.BatchNorm2d(num_features))
            self.classifier = nn.Linear(num_features, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.constant_(m.bias, 0)

        def forward(self, x):
            features = self.features(x)
            out = F.relu(features, inplace=True)
            out = F.adaptive_avg_pool2d(out, (1, 1))
            out = torch.flatten(out, 1)
            return self.classifier(out)

    class BasicConv2d(nn.Module):
        def __init__(self, in_channels, out_channels, **kwargs):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
            self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x)), inplace=True)

    class InceptionA(nn.Module):
        def __init__(self, in_channels, pool_features, conv_block=None):
            super().__init__()
            conv_block = conv_block or BasicConv2d
            self.branch1x1 = conv_block(in_channels, 8, kernel_size=1)
            self.branch5x5_1 = conv_block(in_channels, 6, kernel_size=1)
            self.branch5x5_2 = conv_block(6, 8, kernel_size=5, padding=2)
            self.branch3x3dbl_1 = conv_block(in_channels, 8, kernel_size=1)
            self.branch3x3dbl_2 = conv_block(8, 12, kernel_size=3, padding=1)
            self.branch3x3dbl_3 = conv_block(12, 12, kernel_size=3, padding=1)
            self.branch_pool = conv_block(in_channels, pool_features, kernel_size=1)
            self.b17 = conv_block(in_channels, 4, kernel_size=(1, 7), padding=(0, 3))
            self.b71 = conv_block(4, 4, kernel_size=(7, 1), padding=(3, 0))
            self.mp = nn.MaxPool2d(3, stride=1, padding=1)

        def _forward(self, x):
            branch1x1 = self.branch1x1(x)
            branch5x5 = self.branch5x5_2(self.branch5x5_1(x))
            b = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
            branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
            branch_pool = self.branch_pool(branch_pool)
            b7 = self.b71(self.b17(x))
            return [branch1x1, branch5x5, b, branch_pool, b7, self.mp(x)]

        def forward(self, x):
            return torch.cat(self._forward(x), 1)

    class Incep(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = BasicConv2d(3, 8, kernel_size=3, stride=2)
            self.a = InceptionA(8, 4)
            self.b = nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)
            self.fc = nn.Linear(8 + 8 + 12 + 4 + 4 + 8, 5)
            for m in self.modules():
                if isinstance(m, nn.Conv2d) or isinstance(m, nn.Linear):
                    stddev = float(m.stddev) if hasattr(m, "stddev") else 0.1
                    torch.nn.init.trunc_normal_(m.weight, mean=0.0, std=stddev, a=-2, b=2)

        def forward(self, x):
            x = self.b(self.a(self.stem(x)))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    return dict(DenseNet=DenseNet, Incep=Incep)


# ---------------------------------------------------------------- mixer_hybrid


def zoo_mixer_hybrid(T):
    nn = T.nn
    F = T.nn.functional
    torch = T

    class MlpBlock(nn.Module):
        def __init__(self, dim, hidden):
            super().__init__()
            self.fc1 = nn.Linear(dim, hidden)
            self.act = nn.GELU(approximate="tanh")
            self.fc2 = nn.Linear(hidden, dim)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class MixerBlock(nn.Module):
        def __init__(
            self, dim, seq_len, mlp_ratio=(0.5, 4.0), norm_layer=partial(nn.LayerNorm, eps=1e-6)
        ):
            super().__init__()
            tokens_dim, channels_dim = [int(x * dim) for x in mlp_ratio]
            self.norm1 = norm_layer(dim)
            self.mlp_tokens = MlpBlock(seq_len, tokens_dim)
            self.norm2 = norm_layer(dim)
            self.mlp_channels = MlpBlock(dim, channels_dim)

        def forward(self, x):
            x = x + self.mlp_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
            x = x + self.mlp_channels(self.norm2(x))
            return x

    class Mixer(nn.Module):
        def __init__(self, num_classes=5, img=16, patch=4, dim=8, depth=2):
            super().__init__()
            self.stem = nn.Conv2d(3, dim, patch, patch)
            n = (img // patch) ** 2
            self.blocks = nn.Sequential(*[MixerBlock(dim, n) for _ in range(depth)])
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.head = nn.Linear(dim, num_classes)
            for name, m in self.named_modules():
                if isinstance(m, nn.Linear):
                    if name.startswith("head"):
                        nn.init.zeros_(m.weight)
                        nn.init.constant_(m.bias, 0.1)
                    else:
                        nn.init.xavier_uniform_(m.weight)
                        if m.bias is not None:
                            if "mlp" in name:
                                nn.init.normal_(m.bias, std=1e-6)
                            else:
                                nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Conv2d):
                    nn.init.lecun_normal_(m.weight) if hasattr(
                        nn.init, "lecun_normal_"
                    ) else nn.init.kaiming_uniform_(
                        m.weight, a=0, mode="fan_in", nonlinearity="linear"
                    )
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.stem(x).flatten(2).transpose(1, 2)
            x = self.blocks(x)
            x = self.norm(x)
            x = x.mean(dim=1)
            return self.head(x)

    class Hybrid(nn.Module):
        def __init__(self, num_classes=5, dim=16, nhead=2, depth=2):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 8, 3, 2, 1, bias=False),
                nn.BatchNorm2d(8),
                nn.GELU(),
                nn.Conv2d(8, dim, 3, 2, 1, bias=False),
                nn.BatchNorm2d(dim),
                nn.GELU(),
            )
            self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(torch.randn(1, 1 + 16, dim) * 0.02)
            layer = nn.TransformerEncoderLayer(
                dim,
                nhead,
                dim_feedforward=32,
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            self.encoder = nn.TransformerEncoder(
                layer, depth, norm=nn.LayerNorm(dim), enable_nested_tensor=False
            )
            self.head = nn.Linear(dim, num_classes)

        def forward(self, x):
            x = self.stem(x)
            x = torch.flatten(x, 2).transpose(1, 2)
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
            x = x + self.pos_embed
            x = self.encoder(x)
            return self.head(x[:, 0])

    return dict(Mixer=Mixer, Hybrid=Hybrid)


# ---------------------------------------------------------------- segmentation


def zoo_segmentation(T):
    nn = T.nn
    F = T.nn.functional
    torch = T

    class ASPPConv(nn.Sequential):
        def __init__(self, in_channels, out_channels, dilation):
            modules = [
                nn.Conv2d(
                    in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False
                ),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(),
            ]
            super().__init__(*modules)

    class ASPPPooling(nn.Sequential):
        def __init__(self, in_channels, out_channels):
            super().__init__(
                nn.AdaptiveAvgPool2d(1),
                nn.Conv2d(in_channels, out_channels, 1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(),
            )

        def forward(self, x):
            size = x.shape[-2:]
            for mod in self:
                x = mod(x)
            return F.interpolate(x, size=size, mode="bilinear", align_corners=False)

    class ASPP(nn.Module):
        def __init__(self, in_channels, atrous_rates, out_channels=8):
            super().__init__()
            modules = [
                nn.Sequential(
                    nn.Conv2d(in_channels, out_channels, 1, bias=False),
                    nn.BatchNorm2d(out_channels),
                    nn.ReLU(),
                )
            ]
            rates = tuple(atrous_rates)
            for rate in rates:
                modules.append(ASPPConv(in_channels, out_channels, rate))
            modules.append(ASPPPooling(in_channels, out_channels))
            self.convs = nn.ModuleList(modules)
            self.project = nn.Sequential(
                nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(),
                nn.Dropout(0.5),
            )

        def forward(self, x):
            _res = []
            for conv in self.convs:
                _res.append(conv(x))
            res = torch.cat(_res, dim=1)
            return self.project(res)

    class FPNSeg(nn.Module):
        def __init__(self, num_classes=4, mode="nearest", aspp=True):
            super().__init__()
            self.mode = mode
            self.c1 = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(inplace=True))  # /2
            self.c2 = nn.Sequential(nn.Conv2d(8, 12, 3, 2, 1), nn.ReLU(inplace=True))  # /4
            self.c3 = nn.Sequential(nn.Conv2d(12, 16, 3, 2, 1), nn.ReLU(inplace=True))  # /8
            self.lat = nn.ModuleList([nn.Conv2d(c, 8, 1) for c in (8, 12, 16)])
            self.smooth = nn.Conv2d(8, 8, 3, padding=1)
            self.aspp = ASPP(16, [2, 3]) if aspp else None
            self.cls = nn.Conv2d(8, num_classes, 1)

        def forward(self, x):
            H, W = x.shape[-2:]
            f1 = self.c1(x)
            f2 = self.c2(f1)
            f3 = self.c3(f2)
            p3 = self.lat[2](f3)
            if self.aspp is not None:
                p3 = p3 + self.aspp(f3)
            kw = {} if self.mode == "nearest" else {"align_corners": False}
            p2 = self.lat[1](f2) + F.interpolate(p3, size=f2.shape[-2:], mode=self.mode, **kw)
            p1 = self.lat[0](f1) + F.interpolate(p2, size=f1.shape[-2:], mode=self.mode, **kw)
            p1 = self.smooth(p1)
            out = self.cls(p1)
            return F.interpolate(out, size=(H, W), mode="bilinear", align_corners=False)

    return dict(FPNSeg=FPNSeg)


def seg_loss(T, out, target):
    F = T.nn.functional
    y = T.tensor(target)
    w = T.tensor(np.array([1.0, 2.0, 0.5, 1.5])).to(out.dtype)
    l1 = F.cross_entropy(out, y, weight=w, ignore_index=255)
    l1b = F.cross_entropy(out, y, ignore_index=255, label_smoothing=0.1)
    # dice
    probs = out.softmax(dim=1)
    valid = y != 255
    yc = y.clone()
    yc[~valid] = 0
    oh = F.one_hot(yc, num_classes=out.shape[1]).permute(0, 3, 1, 2).to(out.dtype)
    m = valid.unsqueeze(1).to(out.dtype)
    inter = (probs * oh * m).sum(dim=(0, 2, 3))
    card = (probs * m).sum(dim=(0, 2, 3)) + (oh * m).sum(dim=(0, 2, 3))
    dice = 1.0 - (2.0 * inter + 1.0) / (card + 1.0)
    return l1 + 0.5 * l1b + dice.mean()


# ---------------------------------------------------------------- attention_blocks


def zoo_attention_blocks(T):
    nn = T.nn
    F = T.nn.functional
    torch = T

    class ChannelAttention(nn.Module):
        def __init__(self, in_planes, ratio=4):
            super().__init__()
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.max_pool = nn.AdaptiveMaxPool2d(1)
            self.fc = nn.Sequential(
                nn.Conv2d(in_planes, in_planes // ratio, 1, bias=False),
                nn.ReLU(),
                nn.Conv2d(in_planes // ratio, in_planes, 1, bias=False),
            )
            self.sigmoid = nn.Sigmoid()

        def forward(self, x):
            return self.sigmoid(self.fc(self.avg_pool(x)) + self.fc(self.max_pool(x)))

    class SpatialAttention(nn.Module):
        def __init__(self, kernel_size=7):
            super().__init__()
            self.conv1 = nn.Conv2d(2, 1, kernel_size, padding=kernel_size // 2, bias=False)

        def forward(self, x):
            avg_out = torch.mean(x, dim=1, keepdim=True)
            max_out, _ = torch.max(x, dim=1, keepdim=True)
            x = torch.cat([avg_out, max_out], dim=1)
            return torch.sigmoid(self.conv1(x))

    class ECA(nn.Module):
        def __init__(self, channel, k_size=3):
            super().__init__()
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.conv = nn.Conv1d(1, 1, kernel_size=k_size, padding=(k_size - 1) // 2, bias=False)

        def forward(self, x):
            y = self.avg_pool(x)
            y = self.conv(y.squeeze(-1).transpose(-1, -2)).transpose(-1, -2).unsqueeze(-1)
            return x * y.sigmoid().expand_as(x)

    class h_swish(nn.Module):
        def __init__(self, inplace=True):
            super().__init__()
            self.relu = nn.ReLU6(inplace=inplace)

        def forward(self, x):
            return x * (self.relu(x + 3) / 6)

    class CoordAtt(nn.Module):
        def __init__(self, inp, oup, reduction=4):
            super().__init__()
            self.pool_h = nn.AdaptiveAvgPool2d((None, 1))
            self.pool_w = nn.AdaptiveAvgPool2d((1, None))
            mip = max(4, inp // reduction)
            self.conv1 = nn.Conv2d(inp, mip, 1)
            self.bn1 = nn.BatchNorm2d(mip)
            self.act = h_swish()
            self.conv_h = nn.Conv2d(mip, oup, 1)
            self.conv_w = nn.Conv2d(mip, oup, 1)

        def forward(self, x):
            identity = x
            n, c, h, w = x.size()
            x_h = self.pool_h(x)
            x_w = self.pool_w(x).permute(0, 1, 3, 2)
            y = torch.cat([x_h, x_w], dim=2)
            y = self.act(self.bn1(self.conv1(y)))
            x_h, x_w = torch.split(y, [h, w], dim=2)
            x_w = x_w.permute(0, 1, 3, 2)
            a_h = self.conv_h(x_h).sigmoid()
            a_w = self.conv_w(x_w).sigmoid()
            return identity * a_w * a_h

    class SKConv(nn.Module):
        def __init__(self, features, M=2, G=2, r=2, L=4):
            super().__init__()
            d = max(int(features / r), L)
            self.M = M
            self.features = features
            self.convs = nn.ModuleList(
                [
                    nn.Sequential(
                        nn.Conv2d(
                            features,
                            features,
                            kernel_size=3,
                            padding=1 + i,
                            dilation=1 + i,
                            groups=G,
                            bias=False,
                        ),
                        nn.BatchNorm2d(features),
                        nn.ReLU(inplace=True),
                    )
                    for i in range(M)
                ]
            )
            self.gap = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Sequential(
                nn.Conv2d(features, d, kernel_size=1, stride=1, bias=False),
                nn.BatchNorm2d(d),
                nn.ReLU(inplace=True),
            )
            self.fcs = nn.ModuleList(
                [nn.Conv2d(d, features, kernel_size=1, stride=1) for _ in range(M)]
            )
            self.softmax = nn.Softmax(dim=1)

        def forward(self, x):
            batch_size = x.shape[0]
            feats = [conv(x) for conv in self.convs]
            feats = torch.cat(feats, dim=1)
            feats = feats.view(batch_size, self.M, self.features, feats.shape[2], feats.shape[3])
            feats_U = torch.sum(feats, dim=1)
            feats_Z = self.fc(self.gap(feats_U))
            attention_vectors = [fc(feats_Z) for fc in self.fcs]
            attention_vectors = torch.cat(attention_vectors, dim=1)
            attention_vectors = attention_vectors.view(batch_size, self.M, self.features, 1, 1)
            attention_vectors = self.softmax(attention_vectors)
            return torch.sum(feats * attention_vectors, dim=1)

    class Bottle2neck(nn.Module):
        def __init__(self, planes, scale=4):
            super().__init__()
            width = planes // scale
            self.width = width
            self.nums = scale - 1
            self.scale = scale
            self.convs = nn.ModuleList(
                [nn.Conv2d(width, width, 3, 1, 1, bias=False) for _ in range(self.nums)]
            )
            self.bns = nn.ModuleList([nn.BatchNorm2d(width) for _ in range(self.nums)])
            self.relu = nn.ReLU(inplace=True)

        def forward(self, out):
            spx = torch.split(out, self.width, 1)
            for i in range(self.nums):
                sp = spx[i] if i == 0 else sp + spx[i]
                sp = self.relu(self.bns[i](self.convs[i](sp)))
                out2 = sp if i == 0 else torch.cat((out2, sp), 1)
            return torch.cat((out2, spx[self.nums]), 1)

    class GhostModule(nn.Module):
        def __init__(self, inp, oup, ratio=2, dw_size=3):
            super().__init__()
            self.oup = oup
            init_channels = math.ceil(oup / ratio)
            new_channels = init_channels * (ratio - 1)
            self.primary_conv = nn.Sequential(
                nn.Conv2d(inp, init_channels, 1, 1, 0, bias=False),
                nn.BatchNorm2d(init_channels),
                nn.ReLU(inplace=True),
            )
            self.cheap_operation = nn.Sequential(
                nn.Conv2d(
                    init_channels,
                    new_channels,
                    dw_size,
                    1,
                    dw_size // 2,
                    groups=init_channels,
                    bias=False,
                ),
                nn.BatchNorm2d(new_channels),
                nn.ReLU(inplace=True),
            )

        def forward(self, x):
            x1 = self.primary_conv(x)
            x2 = self.cheap_operation(x1)
            out = torch.cat([x1, x2], dim=1)
            return out[:, : self.oup, :, :]

    class NonLocal(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.inter = c // 2
            self.g = nn.Conv2d(c, self.inter, 1)
            self.theta = nn.Conv2d(c, self.inter, 1)
            self.phi = nn.Conv2d(c, self.inter, 1)
            self.W = nn.Sequential(nn.Conv2d(self.inter, c, 1), nn.BatchNorm2d(c))
            nn.init.constant_(self.W[1].weight, 0.5)
            nn.init.constant_(self.W[1].bias, 0)
            self.sub = nn.MaxPool2d(kernel_size=(2, 2))

        def forward(self, x):
            b = x.size(0)
            g_x = self.sub(self.g(x)).view(b, self.inter, -1).permute(0, 2, 1)
            theta_x = self.theta(x).view(b, self.inter, -1).permute(0, 2, 1)
            phi_x = self.sub(self.phi(x)).view(b, self.inter, -1)
            f = torch.matmul(theta_x, phi_x)
            f_div_C = F.softmax(f, dim=-1)
            y = torch.matmul(f_div_C, g_x).permute(0, 2, 1).contiguous()
            y = y.view(b, self.inter, *x.size()[2:])
            return self.W(y) + x

    class GRN(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.gamma = nn.Parameter(torch.zeros(1, 1, 1, dim) + 0.1)
            self.beta = nn.Parameter(torch.zeros(1, 1, 1, dim) + 0.05)

        def forward(self, x):
            x = x.permute(0, 2, 3, 1)
            Gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
            Nx = Gx / (Gx.mean(dim=-1, keepdim=True) + 1e-6)
            return (self.gamma * (x * Nx) + self.beta + x).permute(0, 3, 1, 2)

    class Pooling(nn.Module):
        def __init__(self, dim, pool_size=3):
            super().__init__()
            self.norm = nn.GroupNorm(1, dim)
            self.pool = nn.AvgPool2d(
                pool_size, stride=1, padding=pool_size // 2, count_include_pad=False
            )
            self.ls = nn.Parameter(1e-1 * torch.ones((dim)), requires_grad=True)

        def forward(self, x):
            y = self.norm(x)
            return x + self.ls.unsqueeze(-1).unsqueeze(-1) * (self.pool(y) - y)

    def get_same_padding(x, k, s, d):
        return max((math.ceil(x / s) - 1) * s + (k - 1) * d + 1 - x, 0)

    class Conv2dSame(nn.Conv2d):
        def forward(self, x):
            ih, iw = x.size()[-2:]
            kh, kw = self.weight.size()[-2:]
            pad_h = get_same_padding(ih, kh, self.stride[0], self.dilation[0])
            pad_w = get_same_padding(iw, kw, self.stride[1], self.dilation[1])
            if pad_h > 0 or pad_w > 0:
                x = F.pad(
                    x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2], value=0.0
                )
            return F.conv2d(
                x, self.weight, self.bias, self.stride, (0, 0), self.dilation, self.groups
            )

    class BlurPool(nn.Module):
        def __init__(self, channels, stride=2):
            super().__init__()
            self.channels = channels
            self.stride = stride
            a = torch.tensor([1.0, 2.0, 1.0])
            filt = a[:, None] * a[None, :]
            filt = filt / torch.sum(filt)
            self.register_buffer("filt", filt[None, None, :, :].repeat((self.channels, 1, 1, 1)))
            self.pad = nn.ReflectionPad2d([1, 1, 1, 1])

        def forward(self, inp):
            return F.conv2d(self.pad(inp), self.filt, stride=self.stride, groups=inp.shape[1])

    class AddCoords(nn.Module):
        def forward(self, x):
            b, _, h, w = x.size()
            xx = torch.linspace(-1, 1, w, dtype=x.dtype).view(1, 1, 1, w).expand(b, 1, h, w)
            yy = torch.linspace(-1, 1, h, dtype=x.dtype).view(1, 1, h, 1).expand(b, 1, h, w)
            return torch.cat([x, xx, yy], dim=1)

    class MobileViTUnfold(nn.Module):
        def __init__(self, c, p=2):
            super().__init__()
            self.p = p
            self.attn = nn.MultiheadAttention(c, 2, batch_first=True)
            self.norm = nn.LayerNorm(c)

        def forward(self, x):
            B, C, H, W = x.shape
            p = self.p
            nh, nw = H // p, W // p
            patches = x.reshape(B * C * nh, p, nw, p).transpose(1, 2)
            patches = (
                patches.reshape(B, C, nh * nw, p * p).transpose(1, 3).reshape(B * p * p, nh * nw, C)
            )
            y = self.norm(patches)
            y = patches + self.attn(y, y, y, need_weights=False)[0]
            y = (
                y.contiguous()
                .view(B, p * p, nh * nw, C)
                .transpose(1, 3)
                .reshape(B * C * nh, nw, p, p)
            )
            y = y.transpose(1, 2).reshape(B, C, nh * p, nw * p)
            return y

    class Net(nn.Module):
        def __init__(self, which):
            super().__init__()
            self.which = which
            c = 8
            self.stem = Conv2dSame(3, c, 3, 2) if which == "same" else nn.Conv2d(3, c, 3, 1, 1)
            blocks = {
                "cbam": lambda: nn.ModuleList([ChannelAttention(c), SpatialAttention()]),
                "eca": lambda: ECA(c),
                "coord": lambda: CoordAtt(c, c),
                "sk": lambda: SKConv(c),
                "res2": lambda: Bottle2neck(c),
                "ghost": lambda: GhostModule(c, 7),
                "nonlocal": lambda: NonLocal(c),
                "grn": lambda: GRN(c),
                "pool": lambda: Pooling(c),
                "same": lambda: Conv2dSame(c, c, 5, 2, dilation=1),
                "blur": lambda: BlurPool(c),
                "coordconv": lambda: nn.Sequential(AddCoords(), nn.Conv2d(c + 2, c, 3, padding=1)),
                "mvit": lambda: MobileViTUnfold(c),
            }
            self.block = blocks[which]()
            self.head = (
                nn.LazyLinear(5) if which == "ghost" else nn.Linear(7 if which == "ghost" else c, 5)
            )

        def forward(self, x):
            x = self.stem(x)
            if self.which == "cbam":
                x = self.block[0](x) * x
                x = self.block[1](x) * x
            else:
                x = self.block(x)
            return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))

    return Net


ATTENTION_KINDS = [
    "cbam",
    "eca",
    "coord",
    "sk",
    "res2",
    "ghost",
    "nonlocal",
    "grn",
    "pool",
    "same",
    "blur",
    "coordconv",
    "mvit",
]


# ---------------------------------------------------------------- timm_blocks


def zoo_timm_blocks(T):
    nn = T.nn
    F = T.nn.functional
    torch = T

    def _trunc_normal_(tensor, mean, std, a, b):
        def norm_cdf(x):
            return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

        l = norm_cdf((a - mean) / std)
        u = norm_cdf((b - mean) / std)
        tensor.uniform_(2 * l - 1, 2 * u - 1)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor

    def trunc_normal_tf_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
        with torch.no_grad():
            _trunc_normal_(tensor, 0, 1.0, a, b)
            tensor.mul_(std).add_(mean)
        return tensor

    def variance_scaling_(tensor, scale=1.0, mode="fan_in", distribution="normal"):
        fan_in, fan_out = nn.init._calculate_fan_in_and_fan_out(tensor)
        denom = (
            fan_in
            if mode == "fan_in"
            else (fan_out if mode == "fan_out" else (fan_in + fan_out) / 2)
        )
        variance = scale / denom
        if distribution == "truncated_normal":
            trunc_normal_tf_(tensor, std=math.sqrt(variance) / 0.87962566103423978)
        elif distribution == "normal":
            with torch.no_grad():
                tensor.normal_(std=math.sqrt(variance))
        else:
            bound = math.sqrt(3 * variance)
            with torch.no_grad():
                tensor.uniform_(-bound, bound)

    def lecun_normal_(tensor):
        variance_scaling_(tensor, mode="fan_in", distribution="truncated_normal")

    def named_apply(fn, module, name="", depth_first=True, include_root=False):
        if not depth_first and include_root:
            fn(module=module, name=name)
        for child_name, child_module in module.named_children():
            child_name = ".".join((name, child_name)) if name else child_name
            named_apply(
                fn=fn,
                module=child_module,
                name=child_name,
                depth_first=depth_first,
                include_root=True,
            )
        if depth_first and include_root:
            fn(module=module, name=name)
        return module

    class WindowAttentionV2(nn.Module):
        def __init__(
            self, dim, window_size, num_heads, qkv_bias=True, pretrained_window_size=[0, 0]
        ):
            super().__init__()
            self.dim = dim
            self.window_size = window_size
            self.pretrained_window_size = pretrained_window_size
            self.num_heads = num_heads
            self.logit_scale = nn.Parameter(
                torch.log(10 * torch.ones((num_heads, 1, 1))), requires_grad=True
            )
            self.cpb_mlp = nn.Sequential(
                nn.Linear(2, 16, bias=True),
                nn.ReLU(inplace=True),
                nn.Linear(16, num_heads, bias=False),
            )
            relative_coords_h = torch.arange(
                -(self.window_size[0] - 1), self.window_size[0], dtype=torch.float32
            )
            relative_coords_w = torch.arange(
                -(self.window_size[1] - 1), self.window_size[1], dtype=torch.float32
            )
            relative_coords_table = (
                torch.stack(torch.meshgrid([relative_coords_h, relative_coords_w], indexing="ij"))
                .permute(1, 2, 0)
                .contiguous()
                .unsqueeze(0)
            )
            relative_coords_table[:, :, :, 0] /= self.window_size[0] - 1
            relative_coords_table[:, :, :, 1] /= self.window_size[1] - 1
            relative_coords_table *= 8
            relative_coords_table = (
                torch.sign(relative_coords_table)
                * torch.log2(torch.abs(relative_coords_table) + 1.0)
                / np.log2(8)
            )
            self.register_buffer("relative_coords_table", relative_coords_table, persistent=False)
            coords_h = torch.arange(self.window_size[0])
            coords_w = torch.arange(self.window_size[1])
            coords = torch.stack(torch.meshgrid([coords_h, coords_w], indexing="ij"))
            coords_flatten = torch.flatten(coords, 1)
            relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
            relative_coords = relative_coords.permute(1, 2, 0).contiguous()
            relative_coords[:, :, 0] += self.window_size[0] - 1
            relative_coords[:, :, 1] += self.window_size[1] - 1
            relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
            self.register_buffer(
                "relative_position_index", relative_coords.sum(-1), persistent=False
            )
            self.qkv = nn.Linear(dim, dim * 3, bias=False)
            if qkv_bias:
                self.q_bias = nn.Parameter(torch.zeros(dim) + 0.1)
                self.v_bias = nn.Parameter(torch.zeros(dim) - 0.1)
            else:
                self.q_bias = None
                self.v_bias = None
            self.proj = nn.Linear(dim, dim)
            self.softmax = nn.Softmax(dim=-1)

        def forward(self, x, mask=None):
            B_, N, C = x.shape
            qkv_bias = None
            if self.q_bias is not None:
                qkv_bias = torch.cat(
                    (self.q_bias, torch.zeros_like(self.v_bias, requires_grad=False), self.v_bias)
                )
            qkv = F.linear(input=x, weight=self.qkv.weight, bias=qkv_bias)
            qkv = qkv.reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
            logit_scale = torch.clamp(
                self.logit_scale, max=torch.log(torch.tensor(1.0 / 0.01))
            ).exp()
            attn = attn * logit_scale
            relative_position_bias_table = self.cpb_mlp(self.relative_coords_table).view(
                -1, self.num_heads
            )
            relative_position_bias = relative_position_bias_table[
                self.relative_position_index.view(-1)
            ].view(
                self.window_size[0] * self.window_size[1],
                self.window_size[0] * self.window_size[1],
                -1,
            )
            relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()
            relative_position_bias = 16 * torch.sigmoid(relative_position_bias)
            attn = attn + relative_position_bias.unsqueeze(0)
            attn = self.softmax(attn)
            x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
            return self.proj(x)

    class LayerScale(nn.Module):
        def __init__(self, dim, init_values=1e-1, inplace=False):
            super().__init__()
            self.inplace = inplace
            self.gamma = nn.Parameter(init_values * torch.ones(dim))

        def forward(self, x):
            return x.mul_(self.gamma) if self.inplace else x * self.gamma

    class Attention(nn.Module):
        def __init__(
            self,
            dim,
            num_heads=2,
            qkv_bias=False,
            qk_norm=False,
            norm_layer=nn.LayerNorm,
            fused=True,
        ):
            super().__init__()
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.scale = self.head_dim**-0.5
            self.fused_attn = fused
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
            self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            q, k = self.q_norm(q), self.k_norm(k)
            if self.fused_attn:
                x = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0)
            else:
                q = q * self.scale
                attn = q @ k.transpose(-2, -1)
                attn = attn.softmax(dim=-1)
                x = attn @ v
            x = x.transpose(1, 2).reshape(B, N, C)
            return self.proj(x)

    class Block(nn.Module):
        def __init__(self, dim, fused, inplace_ls):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim)
            self.attn = Attention(dim, qk_norm=True, fused=fused)
            self.ls1 = LayerScale(dim, inplace=inplace_ls)
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
            self.ls2 = LayerScale(dim, inplace=inplace_ls)

        def forward(self, x):
            x = x + self.ls1(self.attn(self.norm1(x)))
            x = x + self.ls2(self.mlp(self.norm2(x)))
            return x

    class FRN(nn.Module):
        def __init__(self, c, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(1, c, 1, 1))
            self.bias = nn.Parameter(torch.zeros(1, c, 1, 1) + 0.1)
            self.tau = nn.Parameter(torch.zeros(1, c, 1, 1) - 0.05)
            self.eps = eps

        def forward(self, x):
            nu2 = x.pow(2).mean(dim=(2, 3), keepdim=True)
            x = x * torch.rsqrt(nu2 + self.eps)
            return torch.max(x * self.weight + self.bias, self.tau)

    def adaptive_avgmax_pool2d(x, output_size=1):
        return 0.5 * (F.adaptive_avg_pool2d(x, output_size) + F.adaptive_max_pool2d(x, output_size))

    def adaptive_catavgmax_pool2d(x, output_size=1):
        return torch.cat(
            (F.adaptive_avg_pool2d(x, output_size), F.adaptive_max_pool2d(x, output_size)), 1
        )

    def drop_block_2d(x, noise, drop_prob=0.1, block_size=3, gamma_scale=1.0):
        B, C, H, W = x.shape
        total_size = W * H
        clipped_block_size = min(block_size, min(W, H))
        gamma = (
            gamma_scale
            * drop_prob
            * total_size
            / clipped_block_size**2
            / ((W - block_size + 1) * (H - block_size + 1))
        )
        w_i, h_i = torch.meshgrid(
            torch.arange(W).to(x.device), torch.arange(H).to(x.device), indexing="ij"
        )
        valid_block = (
            (w_i >= clipped_block_size // 2) & (w_i < W - (clipped_block_size - 1) // 2)
        ) & ((h_i >= clipped_block_size // 2) & (h_i < H - (clipped_block_size - 1) // 2))
        valid_block = torch.reshape(valid_block, (1, 1, H, W)).to(dtype=x.dtype)
        uniform_noise = noise
        block_mask = ((2 - gamma - valid_block + uniform_noise) >= 1).to(dtype=x.dtype)
        block_mask = -F.max_pool2d(
            -block_mask, kernel_size=clipped_block_size, stride=1, padding=clipped_block_size // 2
        )
        normalize_scale = (
            block_mask.numel() / block_mask.to(dtype=torch.float32).sum().add(1e-7)
        ).to(x.dtype)
        return x * block_mask * normalize_scale

    class Net(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.kind = kind
            dim = 8
            self.stem = nn.Conv2d(3, dim, 2, 2)
            if kind == "swinv2":
                self.blk = WindowAttentionV2(dim, (4, 4), 2)
            elif kind.startswith("vit"):
                self.blk = nn.Sequential(
                    Block(dim, "fused" in kind, "inplace" in kind),
                    Block(dim, "fused" in kind, False),
                )
            elif kind == "frn":
                self.blk = FRN(dim)
            self.head = nn.Linear(2 * dim if kind == "frn" else dim, 5)

            def _init(module, name=""):
                if isinstance(module, nn.Linear):
                    if name.startswith("head"):
                        nn.init.zeros_(module.weight)
                        nn.init.constant_(module.bias, 0.05)
                    else:
                        lecun_normal_(module.weight)
                        if module.bias is not None:
                            nn.init.zeros_(module.bias)

            named_apply(_init, self)

        def forward(self, x, noise=None):
            x = self.stem(x)
            if self.kind == "frn":
                x = self.blk(x)
                if noise is not None:
                    x = drop_block_2d(x, noise)
                x = adaptive_catavgmax_pool2d(x) + 0 * adaptive_avgmax_pool2d(x).repeat(1, 2, 1, 1)
                return self.head(x.flatten(1))
            x = x.flatten(2).transpose(1, 2)
            x = self.blk(x)
            return self.head(x.mean(1))

    return Net, trunc_normal_tf_


# ---------------------------------------------------------------- the programs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("v3,train", [(False, False), (True, True), (True, False)])
def test_mobilenet_v2_v3(v3, train, dtype):
    run(lambda T: zoo_convnets(T)["MobileNet"](v3, p=0.0 if train else 0.2), X32, dtype,
        train=train)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("train", [True, False])
def test_efficientnet_mbconv_drop_path(train, dtype):
    # train: no drop path (its draws differ between the libraries); eval: drop path 0.3, off
    run(lambda T: zoo_convnets(T)["EffNet"](0.0 if train else 0.3, p=0.0), X32, dtype,
        train=train)


@pytest.mark.parametrize("dtype", DTYPES)
def test_convnext_channels_first_layernorm(dtype):
    run(lambda T: zoo_convnets(T)["ConvNeXt"](drop_path_rate=0.2), X32, dtype, train=False)
    run(lambda T: zoo_convnets(T)["ConvNeXt"](), X32, "float64",
        opt=lambda T, m: T.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.05))


def _swin_adamw(T, m):
    decay, no_decay = [], []
    for n, p in m.named_parameters():
        if p.ndim <= 1 or n.endswith(".bias") or "relative_position_bias_table" in n \
                or "absolute_pos_embed" in n:
            no_decay.append(p)
        else:
            decay.append(p)
    return T.optim.AdamW([{"params": no_decay, "weight_decay": 0.0},
                          {"params": decay, "weight_decay": 0.05}], lr=1e-2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_swin_shifted_windows(dtype):
    run(lambda T: zoo_swin(T)["Swin"](), X16, dtype)
    run(lambda T: zoo_swin(T)["Swin"](), X16, dtype, opt=_swin_adamw)


def test_swin_window_partition_round_trip_and_buffers():
    tm, rm = build(lambda T: zoo_swin(T)["Swin"](), "float64")
    for k, v in tm.state_dict().items():
        assert rm.state_dict()[k].dtype == v.numpy().dtype, k
    close(rm.blocks1[1].attn_mask, tm.blocks1[1].attn_mask, "attn_mask", 0)
    assert rm.blocks1[0].attn_mask is None and "blocks1.0.attn_mask" not in rm.state_dict()
    x = RNG.standard_normal((2, 8, 8, 3))
    for T in (torch, rg):
        z = zoo_swin(T)
        w = z["window_partition"](T.tensor(x), 4)
        assert tuple(w.shape) == (8, 4, 4, 3)
        close(z["window_reverse"](w, 4, 8, 8), x, "round trip", 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_densenet_and_inception(dtype):
    x = RNG.standard_normal((2, 3, 17, 17))
    run(lambda T: zoo_dense_inception(T)["DenseNet"](), x, dtype)
    run(lambda T: zoo_dense_inception(T)["DenseNet"](drop_rate=0.2), x, dtype, train=False)
    run(lambda T: zoo_dense_inception(T)["Incep"](), x, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["Mixer", "Hybrid"])
def test_mlp_mixer_and_conv_transformer_hybrid(kind, dtype):
    run(lambda T: zoo_mixer_hybrid(T)[kind](), X16, dtype)


_SEG_X = RNG.standard_normal((2, 3, 24, 20))
_SEG_Y = RNG.integers(0, 4, (2, 24, 20))
_SEG_Y[RNG.random((2, 24, 20)) < 0.2] = 255


def _seg(T, out, target):
    return seg_loss(T, out, _SEG_Y)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,aspp,train", [("nearest", True, False), ("bilinear", True, False),
                                             ("bilinear", False, True)])
def test_fpn_aspp_segmentation_dice(mode, aspp, train, dtype):
    run(lambda T: zoo_segmentation(T)["FPNSeg"](mode=mode, aspp=aspp), _SEG_X, dtype,
        loss_fn=_seg, train=train)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_attention_and_conv_blocks(kind, dtype):
    x = X_ODD if kind in ("same", "coord", "coordconv") else X12
    if kind == "ghost":  # LazyLinear: materialized by a first forward

        def make(T):
            m = zoo_attention_blocks(T)("ghost")
            m(T.tensor(x.astype("float32")))
            return m
    else:

        def make(T):
            return zoo_attention_blocks(T)(kind)

    run(make, x, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["swinv2", "vit", "vit_fused", "vit_fused_inplace", "frn"])
def test_timm_blocks(kind, dtype):
    run(lambda T: zoo_timm_blocks(T)[0](kind), RNG.standard_normal((2, 3, 8, 8)), dtype)


def test_drop_block_with_given_noise():
    x = RNG.standard_normal((2, 3, 8, 8))
    noise = RNG.random((2, 8, 4, 4))
    tm, rm = build(lambda T: zoo_timm_blocks(T)[0]("frn"), "float64")
    to, ro = tm(torch.tensor(x), torch.tensor(noise)), rm(rg.tensor(x), rg.tensor(noise))
    close(ro, to, "out", 1e-10)
    to.sum().backward()
    ro.sum().backward()
    for (k, tp), rp in zip(tm.named_parameters(), rm.parameters()):
        close(rp.grad, tp.grad, k, 1e-10)


# ---------------------------------------------------------------- the training recipe


def param_groups_weight_decay(model, weight_decay=1e-5, no_weight_decay_list=()):
    no_weight_decay_list = set(no_weight_decay_list)
    decay = []
    no_decay = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias") or name in no_weight_decay_list:
            no_decay.append(param)
        else:
            decay.append(param)
    return [{"params": no_decay, "weight_decay": 0.0},
            {"params": decay, "weight_decay": weight_decay}]


class ModelEma:
    def __init__(self, T, model, decay=0.9):
        self.T, self.decay = T, decay
        self.ema = copy.deepcopy(model)
        self.ema.eval()
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        d = self.decay
        with self.T.no_grad():
            for ema_p, p in zip(self.ema.parameters(), model.parameters()):
                ema_p.mul_(d).add_(p.detach(), alpha=1 - d)
            for ema_b, b in zip(self.ema.buffers(), model.buffers()):
                ema_b.copy_(b)


def _rand_bbox(size, lam, rng):
    W, H = size[2], size[3]
    cut_rat = np.sqrt(1.0 - lam)
    cut_w, cut_h = int(W * cut_rat), int(H * cut_rat)
    cx, cy = rng.integers(W), rng.integers(H)
    return (np.clip(cx - cut_w // 2, 0, W), np.clip(cy - cut_h // 2, 0, H),
            np.clip(cx + cut_w // 2, 0, W), np.clip(cy + cut_h // 2, 0, H))


def _recipe(T, dtype, data):
    nn, F = T.nn, T.nn.functional
    T.manual_seed(0)
    model = zoo_convnets(T)["MobileNet"](True, p=0.0)

    def init(m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            nn.init.zeros_(m.bias)

    model.apply(init)
    model = model.to(getattr(T, dtype))
    if T is rg:
        model.load_state_dict({k: v.numpy() for k, v in data["torch_state"].items()})
    else:
        data["torch_state"] = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.train()
    for m in model.features[0].modules():  # freeze the stem: BatchNorm statistics and weights
        if isinstance(m, nn.BatchNorm2d):
            m.eval()
        for p in m.parameters(recurse=False):
            p.requires_grad_(False)
    ema = ModelEma(T, model, 0.9)
    opt = T.optim.SGD(param_groups_weight_decay(model, 1e-2), lr=0.1, momentum=0.9,
                      nesterov=True)
    warm = T.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=2)
    cos = T.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=1e-4)
    sched = T.optim.lr_scheduler.SequentialLR(opt, schedulers=[warm, cos], milestones=[2])
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)
    log = []
    for i, (x, y, lam, perm) in enumerate(zip(*data["batches"])):
        x, y, idx = T.tensor(x.astype(dtype)), T.tensor(y), T.tensor(perm)
        if i % 2:  # cutmix
            x1, y1, x2, y2 = _rand_bbox(x.shape, lam, np.random.default_rng(i))
            x[:, :, x1:x2, y1:y2] = x[idx, :, x1:x2, y1:y2]
            lam = 1 - ((x2 - x1) * (y2 - y1) / (x.size()[-1] * x.size()[-2]))
        else:  # mixup
            x = lam * x + (1 - lam) * x[idx, :]
        out = model(x)
        loss = lam * crit(out, y) + (1 - lam) * crit(out, y[idx])
        oh = F.one_hot(y, 5).to(out.dtype)  # timm's soft targets, flipped batch
        soft = (oh * lam + oh.flip(0) * (1.0 - lam)) * 0.9 + 0.1 / 5
        loss = loss + T.sum(-soft * F.log_softmax(out, dim=-1), dim=-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = T.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5, norm_type=2.0)
        opt.step()
        sched.step()
        ema.update(model)
        log.append((float(loss), float(gn), [g["lr"] for g in opt.param_groups]))
    return log, model, ema.ema


@pytest.mark.parametrize("dtype", DTYPES)
def test_training_recipe_mixup_cutmix_ema(dtype):
    rng = np.random.default_rng(0)
    data = {"batches": ([rng.standard_normal((4, 3, 16, 16)) for _ in range(5)],
                        [rng.integers(0, 5, 4) for _ in range(5)],
                        [float(rng.beta(1.0, 1.0)) for _ in range(5)],
                        [rng.permutation(4) for _ in range(5)])}
    tlog, tmod, tema = _recipe(torch, dtype, data)
    rlog, rmod, rema = _recipe(rg, dtype, data)
    tol = 1e-9 if dtype == "float64" else 1e-3
    for (rl, rn, rlr), (tl, tn, tlr) in zip(rlog, tlog):
        np.testing.assert_allclose([rl, rn], [tl, tn], rtol=tol)
        np.testing.assert_allclose(rlr, tlr, rtol=1e-12)
    for r, t, what in ((rmod, tmod, "model"), (rema, tema, "ema")):
        ts, rs = t.state_dict(), r.state_dict()
        assert list(ts) == list(rs)
        ss = max(float(v.abs().max()) for v in ts.values() if v.is_floating_point())
        for k in ts:
            close(rs[k], ts[k], f"{what} {k}", tol, ss * 1e-3)
        assert [p.requires_grad for p in r.parameters()] == \
            [p.requires_grad for p in t.parameters()]
        assert [m.training for m in r.modules()] == [m.training for m in t.modules()]


def test_beta_and_randperm_draws_as_torch_types():
    for T in (torch, rg):
        T.manual_seed(0)
        lam = T.distributions.Beta(T.tensor([0.4]), T.tensor([0.4])).sample()
        assert tuple(lam.shape) == (1,) and 0 <= float(lam) <= 1
        assert isinstance(T.distributions.Beta(T.tensor(0.2), T.tensor(0.2)).sample().item(),
                          float)
        p = T.randperm(6)
        assert sorted(p.tolist()) == list(range(6)) and str(p.dtype).endswith("int64")


# ---------------------------------------------------------------- Tensor.unfold is a view


def _both(fn):
    return fn(torch), fn(rg)


def test_tensor_unfold_is_a_strided_view_as_torch():
    base = np.arange(2 * 3 * 8 * 8, dtype=np.float64).reshape(2, 3, 8, 8)
    for args in [(3, 2, 1), (2, 4, 4), (1, 2, 1), (3, 3, 2), (0, 1, 1), (-1, 8, 1)]:
        t, r = _both(lambda T, a=args: T.tensor(base.copy()).unfold(*a))
        close(r, t, f"unfold{args}", 0)
        assert r.stride() == t.stride(), (args, r.stride(), t.stride())
        assert r.is_contiguous() == t.is_contiguous(), args
    # the common patch extraction: windows of windows, then contiguous().view
    t, r = _both(lambda T: T.tensor(base.copy()).unfold(2, 4, 4).unfold(3, 4, 4))
    assert r.stride() == t.stride()
    close(r.contiguous().view(2, 3, -1, 4, 4), t.contiguous().view(2, 3, -1, 4, 4), "patches", 0)
    # 0-d input
    t, r = _both(lambda T: T.tensor(5.0).unfold(0, 1, 1))
    close(r, t, "0-d", 0)


def test_tensor_unfold_writes_reach_the_input():
    def write(T):
        x = T.arange(24.0).reshape(2, 12)
        w = x.unfold(1, 3, 3)  # windows side by side: each element once
        w[:, 1].mul_(10.0)
        w.select(2, 0).zero_()
        return x

    t, r = _both(write)
    close(r, t, "written", 0)


def test_tensor_unfold_view_refused_as_torch():
    def view(T, shape):
        x = T.arange(12.0).reshape(3, 4).unfold(1, 2, 1)  # overlapping windows
        try:
            return tuple(x.view(*shape).shape)
        except RuntimeError:
            return "RuntimeError"

    for shape in [(3, 6), (9, 2), (3, 3, 2, 1), (-1,)]:
        assert view(rg, shape) == view(torch, shape), shape


def test_tensor_unfold_gradients_through_views_and_writes():
    x0 = np.random.default_rng(3).standard_normal((2, 3, 8, 8))

    def grads(T):
        x = T.tensor(x0.copy(), requires_grad=True)
        p = x.unfold(2, 4, 4).unfold(3, 4, 4)
        q = p.contiguous().view(2, 3, -1, 4, 4)
        o = x.unfold(3, 3, 1).unfold(2, 3, 2)  # overlapping windows
        s = (q.pow(2) * T.arange(16.0).double().view(4, 4)).sum() + o.sin().sum()
        (g,) = T.autograd.grad(s, x, create_graph=True)
        (gg,) = T.autograd.grad((g * g).sum(), x)
        # a write into a (non-overlapping) window view of a non-leaf, recorded
        y = x * 1.0
        w = y.unfold(3, 2, 2)
        w[..., 1].mul_(T.linspace(0.5, 2.0, 4, dtype=T.float64))
        (g2,) = T.autograd.grad((y.unfold(2, 3, 1) ** 2).sum(), x)
        return [p, o, g, gg, y, g2]

    for i, (r, t) in enumerate(zip(*reversed(_both(grads)))):
        close(r, t, f"result {i}", 1e-12)


def test_tensor_unfold_forward_mode_and_vmap():
    x0 = np.random.default_rng(4).standard_normal((4, 6))
    t = torch.func.jacfwd(lambda v: v.unfold(0, 3, 1).pow(2).sum(-1))(torch.tensor(x0[0]))
    r = rg.func.jacfwd(lambda v: v.unfold(0, 3, 1).pow(2).sum(-1))(rg.tensor(x0[0]))
    close(r, t, "jacfwd", 1e-12)
    t = torch.func.vmap(lambda v: v.unfold(0, 2, 2).sum(-1))(torch.tensor(x0))
    r = rg.func.vmap(lambda v: v.unfold(0, 2, 2).sum(-1))(rg.tensor(x0))
    close(r, t, "vmap", 1e-12)


# ---------------------------------------------------------------- interpolate's refusals


@pytest.mark.parametrize("ndim", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("mode", ["nearest", "area", "linear", "bilinear", "bicubic",
                                  "trilinear", "bogus"])
def test_interpolate_refuses_a_mode_for_the_input_as_torch(mode, ndim):
    """A 3-D input to a bilinear decoder, an unknown mode: torch's NotImplementedError
    (what `except NotImplementedError` fallbacks in ported code catch)."""

    def call(T):
        x = T.ones(*([3] * ndim), dtype=T.float64)
        try:
            return tuple(T.nn.functional.interpolate(x, scale_factor=2, mode=mode).shape)
        except Exception as e:  # noqa: BLE001  (the type is what is compared)
            return e

    t, r = _both(call)
    if isinstance(t, Exception):
        assert isinstance(r, type(t)), (t, r)
        assert isinstance(r, ValueError)  # and still retrograd's bad-argument error
    else:
        assert r == t


def test_pad_refuses_an_unknown_mode_as_torch():
    def call(T):
        try:
            T.nn.functional.pad(T.ones(1, 2, 4, 4), (1, 1), mode="symmetric")
        except Exception as e:  # noqa: BLE001
            return e

    t, r = _both(call)
    assert isinstance(t, NotImplementedError) and isinstance(r, NotImplementedError), (t, r)


# ---------------------------------------------------------------- nn.init's refusals


_INF = float("inf")


@pytest.mark.parametrize("fn,kw", [
    ("uniform_", dict(a=2.0, b=-2.0)), ("uniform_", dict(a=0.0, b=_INF)),
    ("uniform_", dict(a=-_INF, b=0.0)), ("normal_", dict(std=-1.0)),
    ("trunc_normal_", dict(a=2.0, b=-2.0)), ("trunc_normal_", dict(a=3.0, b=_INF)),
    ("trunc_normal_", dict(a=2.0, b=-2.0, std=-1.0)), ("trunc_normal_", dict(std=-1.0)),
    ("trunc_normal_", dict(a=-_INF, b=_INF)), ("trunc_normal_", dict(a=1.0, b=1.0)),
    ("sparse_", dict(sparsity=0.5, std=-1.0)),
])
def test_init_refuses_bad_ranges_as_torch(fn, kw):
    """Reversed or infinite uniform ranges and negative stds: torch's RuntimeError (NumPy's
    ValueError before); what torch accepts (trunc_normal_ with a negative std or infinite
    bounds where it samples from normal_) stays accepted, in [a, b]."""

    def call(T):
        w = T.zeros(500) if fn != "sparse_" else T.zeros(20, 25)
        try:
            getattr(T.nn.init, fn)(w, **kw)
        except Exception as e:  # noqa: BLE001
            return e
        return (float(w.min()), float(w.max()))

    t, r = _both(call)
    if isinstance(t, Exception):
        assert isinstance(r, type(t)), (t, r)
    else:
        assert not isinstance(r, Exception), r
        lo, hi = kw.get("a", -2.0), kw.get("b", 2.0)
        assert lo <= r[0] <= r[1] <= hi


# ---------------------------------------------------------------- attention's result layout

_B, _H, _T, _D = 2, 3, 5, 4
_QKV = np.random.default_rng(5).standard_normal((3, _B, _H, _T, _D))
_LAYOUTS = {  # (B, H, T, D) query/key/value in the memory orders ported code makes
    "bhtd": (0, 1, 2, 3),       # contiguous
    "btHd": (0, 2, 1, 3),       # heads split from (B, T, C): qkv(x).view(B, T, H, D)
    "bhdt": (0, 1, 3, 2),       # last dimension strided: torch's math path
    "thbd": (2, 1, 0, 3),       # batch inner, last dimension contiguous
}


def _laid(T, a, order):
    """a (B, H, T, D) with its axes in memory in `order` (outermost first)."""
    inv = np.argsort(order)
    return T.tensor(np.ascontiguousarray(a.transpose(order))).permute(*inv.tolist())


@pytest.mark.parametrize("layout", list(_LAYOUTS))
@pytest.mark.parametrize("mask", [None, "causal", "bool", "float", "dropout"])
def test_sdpa_result_is_laid_out_as_torch(layout, mask):
    """torch's CPU kernel choice sets the layout: the fused kernel's result follows the
    query's (4-D, last dimensions contiguous, no dropout; masks or not), the math path's is
    row-major. So `.transpose(1, 2).view(B, T, C)` works (or is refused) as in torch."""

    def call(T):
        q, k, v = (_laid(T, a, _LAYOUTS[layout]) for a in _QKV)
        kw = {}
        if mask == "causal":
            kw["is_causal"] = True
        elif mask == "bool":
            kw["attn_mask"] = T.tensor(np.tril(np.ones((_T, _T), bool)))
        elif mask == "float":
            kw["attn_mask"] = T.tensor(np.triu(np.full((_T, _T), -1.5), 1))
        elif mask == "dropout":
            kw["dropout_p"] = 0.5
        return T.nn.functional.scaled_dot_product_attention(q, k, v, **kw)

    t, r = _both(call)
    assert r.stride() == t.stride(), (r.stride(), t.stride())
    if mask != "dropout":
        close(r, t, "values", 1e-12)


def test_sdpa_masked_heads_merge_with_view_as_torch():
    """timm / nanoGPT's `x.transpose(1, 2).view(B, N, C)` after attention with a padding
    mask, on heads split from (B, N, C): a view in torch (the fused kernel's result is laid
    out (B, N, H, D)); retrograd's masked path gave a row-major result, refused."""
    x0 = np.random.default_rng(6).standard_normal((_B, _T, _H * _D))
    keep = np.ones((_B, 1, 1, _T), bool)
    keep[0, ..., -2:] = False

    def call(T):
        x = T.tensor(x0, requires_grad=True)
        qkv = (x * 1.0).repeat(1, 1, 3).reshape(_B, _T, 3, _H, _D).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        o = T.nn.functional.scaled_dot_product_attention(q, k * 0.5, v, attn_mask=T.tensor(keep))
        y = o.transpose(1, 2).view(_B, _T, _H * _D)
        (y * y).sum().backward()
        return y, x.grad

    (ty, tg), (ry, rg_) = _both(call)
    close(ry, ty, "y", 1e-12)
    close(rg_, tg, "grad", 1e-12)


def test_sdpa_on_a_strided_last_dimension_gives_a_viewable_result():
    def call(T):
        q = _laid(T, _QKV[0], (0, 1, 3, 2))
        return T.nn.functional.scaled_dot_product_attention(q, q, q).view(_B, -1)

    t, r = _both(call)
    close(r, t, "values", 1e-12)


def test_matmul_of_batch_permuted_operands_is_row_major_as_torch():
    """Axial attention over a (B, H, W, C) map permuted to (W, B, H, C): torch's batched
    matrix product is row-major, so `.view` merges its batch dimensions; NumPy's kept the
    operands' batch order and the view was refused."""
    x0 = np.random.default_rng(7).standard_normal((2, 3, 4, 5))

    def call(T):
        x = T.tensor(x0, requires_grad=True)
        a = x.permute(1, 0, 2, 3)
        s = a @ a.transpose(-1, -2)
        y = s.view(3, -1)
        (y * y).sum().backward()
        return y, s.stride(), x.grad

    (ty, ts, tg), (ry, rs, rg_) = _both(call)
    assert rs == ts
    close(ry, ty, "y", 1e-12)
    close(rg_, tg, "grad", 1e-12)
