"""torchvision's classification models (resnet, vgg, mobilenet v2/v3, squeezenet, shufflenet v2,
densenet, efficientnet, googlenet, alexnet, convnext, regnet), re-typed at tiny widths with the
constructs their sources use, built once on torch and once on retrograd from the same class
bodies. torch's weights are loaded into retrograd through load_state_dict (numpy arrays, keys
matched exactly, BatchNorm buffers included); then outputs (train and eval), every parameter's
loss gradient, BatchNorm running statistics and three SGD(momentum, weight_decay) steps are
compared in float64 (in float32 both libraries drift from the float64 result by ~1e-2 on
these tiny-batch BatchNorm nets, torch as much as retrograd, so float32 is no test of
agreement). Then the pieces around the models: loading BatchNorm checkpoints into
FrozenBatchNorm2d backbones, torch.jit's eager names, torchvision's training recipe (EMA via
swa_utils.AveragedModel), fine-tuning a frozen backbone, one-element tensor conversions."""

from __future__ import annotations

import math
from collections import OrderedDict
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.utils.checkpoint

import retrograd as rg
import retrograd.utils.checkpoint

RTOL = 1e-6


def zoo(T):
    """The models of torchvision, written against the module object T (torch or retrograd)."""
    nn = T.nn
    F = T.nn.functional
    z = SimpleNamespace()

    def _make_divisible(v, divisor, min_value=None):
        if min_value is None:
            min_value = divisor
        new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
        if new_v < 0.9 * v:
            new_v += divisor
        return new_v

    z._make_divisible = _make_divisible

    # ------------------------------------------------------------ ops/misc.py
    class Conv2dNormActivation(nn.Sequential):
        def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None,
                     groups=1, norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1,
                     inplace=True, bias=None):
            if padding is None:
                padding = (kernel_size - 1) // 2 * dilation
            if bias is None:
                bias = norm_layer is None
            layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding,
                                dilation=dilation, groups=groups, bias=bias)]
            if norm_layer is not None:
                layers.append(norm_layer(out_channels))
            if activation_layer is not None:
                params = {} if inplace is None else {"inplace": inplace}
                layers.append(activation_layer(**params))
            super().__init__(*layers)
            self.out_channels = out_channels

    class SqueezeExcitation(nn.Module):
        def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU,
                     scale_activation=nn.Sigmoid):
            super().__init__()
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
            self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
            self.activation = activation()
            self.scale_activation = scale_activation()

        def _scale(self, input):
            scale = self.avgpool(input)
            scale = self.fc1(scale)
            scale = self.activation(scale)
            scale = self.fc2(scale)
            return self.scale_activation(scale)

        def forward(self, input):
            scale = self._scale(input)
            return scale * input

    class Permute(nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.dims = dims

        def forward(self, x):
            return T.permute(x, self.dims)

    def stochastic_depth(input, p, mode, training=True):
        if not T.jit.is_scripting() and not T.jit.is_tracing():
            pass  # torchvision logs its API usage here
        if p < 0.0 or p > 1.0:
            raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
        if mode not in ["batch", "row"]:
            raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
        if not training or p == 0.0:
            return input
        survival_rate = 1.0 - p
        if mode == "row":
            size = [input.shape[0]] + [1] * (input.ndim - 1)
        else:
            size = [1] * input.ndim
        noise = T.empty(size, dtype=input.dtype, device=input.device)
        noise = noise.bernoulli_(survival_rate)
        if survival_rate > 0.0:
            noise.div_(survival_rate)
        return input * noise

    class StochasticDepth(nn.Module):
        def __init__(self, p, mode):
            super().__init__()
            self.p = p
            self.mode = mode

        def forward(self, input):
            return stochastic_depth(input, self.p, self.mode, self.training)

    class FrozenBatchNorm2d(nn.Module):
        """torchvision.ops.misc's: BatchNorm2d with fixed statistics and affine parameters."""

        def __init__(self, num_features, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.register_buffer("weight", T.ones(num_features))
            self.register_buffer("bias", T.zeros(num_features))
            self.register_buffer("running_mean", T.zeros(num_features))
            self.register_buffer("running_var", T.ones(num_features))

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            num_batches_tracked_key = prefix + "num_batches_tracked"
            if num_batches_tracked_key in state_dict:
                del state_dict[num_batches_tracked_key]
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                          missing_keys, unexpected_keys, error_msgs)

        def forward(self, x):
            w = self.weight.reshape(1, -1, 1, 1)
            b = self.bias.reshape(1, -1, 1, 1)
            rv = self.running_var.reshape(1, -1, 1, 1)
            rm = self.running_mean.reshape(1, -1, 1, 1)
            scale = w * (rv + self.eps).rsqrt()
            bias = b - rm * scale
            return x * scale + bias

    z.FrozenBatchNorm2d = FrozenBatchNorm2d
    z.Conv2dNormActivation = Conv2dNormActivation
    z.SqueezeExcitation = SqueezeExcitation
    z.StochasticDepth = StochasticDepth

    # ------------------------------------------------------------ resnet.py
    def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation,
                         groups=groups, bias=False, dilation=dilation)

    def conv1x1(in_planes, out_planes, stride=1):
        return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1,
                     base_width=64, dilation=1, norm_layer=None):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            self.conv1 = conv3x3(inplanes, planes, stride)
            self.bn1 = norm_layer(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = conv3x3(planes, planes)
            self.bn2 = norm_layer(planes)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x):
            identity = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            out = self.relu(out)
            return out

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1,
                     base_width=64, dilation=1, norm_layer=None):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            width = int(planes * (base_width / 64.0)) * groups
            self.conv1 = conv1x1(inplanes, width)
            self.bn1 = norm_layer(width)
            self.conv2 = conv3x3(width, width, stride, groups, dilation)
            self.bn2 = norm_layer(width)
            self.conv3 = conv1x1(width, planes * self.expansion)
            self.bn3 = norm_layer(planes * self.expansion)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x):
            identity = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            out = self.relu(out)
            out = self.conv3(out)
            out = self.bn3(out)
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            out = self.relu(out)
            return out

    class ResNet(nn.Module):
        def __init__(self, block, layers, num_classes=10, zero_init_residual=False, groups=1,
                     width_per_group=64, replace_stride_with_dilation=None, norm_layer=None,
                     width=8):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            self._norm_layer = norm_layer
            self.inplanes = width
            self.dilation = 1
            if replace_stride_with_dilation is None:
                replace_stride_with_dilation = [False, False, False]
            self.groups = groups
            self.base_width = width_per_group
            self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3,
                                   bias=False)
            self.bn1 = norm_layer(self.inplanes)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(block, width, layers[0])
            self.layer2 = self._make_layer(block, 2 * width, layers[1], stride=2,
                                           dilate=replace_stride_with_dilation[0])
            self.layer3 = self._make_layer(block, 4 * width, layers[2], stride=2,
                                           dilate=replace_stride_with_dilation[1])
            self.layer4 = self._make_layer(block, 8 * width, layers[3], stride=2,
                                           dilate=replace_stride_with_dilation[2])
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(8 * width * block.expansion, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
            if zero_init_residual:
                for m in self.modules():
                    if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                        nn.init.constant_(m.bn3.weight, 0)
                    elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                        nn.init.constant_(m.bn2.weight, 0)

        def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
            norm_layer = self._norm_layer
            downsample = None
            previous_dilation = self.dilation
            if dilate:
                self.dilation *= stride
                stride = 1
            if stride != 1 or self.inplanes != planes * block.expansion:
                downsample = nn.Sequential(
                    conv1x1(self.inplanes, planes * block.expansion, stride),
                    norm_layer(planes * block.expansion),
                )
            layers = []
            layers.append(block(self.inplanes, planes, stride, downsample, self.groups,
                                self.base_width, previous_dilation, norm_layer))
            self.inplanes = planes * block.expansion
            for _ in range(1, blocks):
                layers.append(block(self.inplanes, planes, groups=self.groups,
                                    base_width=self.base_width, dilation=self.dilation,
                                    norm_layer=norm_layer))
            return nn.Sequential(*layers)

        def _forward_impl(self, x):
            x = self.conv1(x)
            x = self.bn1(x)
            x = self.relu(x)
            x = self.maxpool(x)
            x = self.layer1(x)
            x = self.layer2(x)
            x = self.layer3(x)
            x = self.layer4(x)
            x = self.avgpool(x)
            x = T.flatten(x, 1)
            x = self.fc(x)
            return x

        def forward(self, x):
            return self._forward_impl(x)

    z.BasicBlock, z.Bottleneck, z.ResNet = BasicBlock, Bottleneck, ResNet

    # ------------------------------------------------------------ vgg.py
    class VGG(nn.Module):
        def __init__(self, features, num_classes=10, init_weights=True, dropout=0.5, hidden=16,
                     channels=16):
            super().__init__()
            self.features = features
            self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
            self.classifier = nn.Sequential(
                nn.Linear(channels * 7 * 7, hidden),
                nn.ReLU(True),
                nn.Dropout(p=dropout),
                nn.Linear(hidden, hidden),
                nn.ReLU(True),
                nn.Dropout(p=dropout),
                nn.Linear(hidden, num_classes),
            )
            if init_weights:
                for m in self.modules():
                    if isinstance(m, nn.Conv2d):
                        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                        if m.bias is not None:
                            nn.init.constant_(m.bias, 0)
                    elif isinstance(m, nn.BatchNorm2d):
                        nn.init.constant_(m.weight, 1)
                        nn.init.constant_(m.bias, 0)
                    elif isinstance(m, nn.Linear):
                        nn.init.normal_(m.weight, 0, 0.01)
                        nn.init.constant_(m.bias, 0)

        def forward(self, x):
            x = self.features(x)
            x = self.avgpool(x)
            x = T.flatten(x, 1)
            x = self.classifier(x)
            return x

    def make_layers(cfg, batch_norm=False):
        layers = []
        in_channels = 3
        for v in cfg:
            if v == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
                if batch_norm:
                    layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                else:
                    layers += [conv2d, nn.ReLU(inplace=True)]
                in_channels = v
        return nn.Sequential(*layers)

    z.VGG, z.make_layers = VGG, make_layers

    # ------------------------------------------------------------ mobilenetv2.py
    class InvertedResidualV2(nn.Module):
        def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
            super().__init__()
            self.stride = stride
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            hidden_dim = int(round(inp * expand_ratio))
            self.use_res_connect = self.stride == 1 and inp == oup
            layers = []
            if expand_ratio != 1:
                layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1,
                                                   norm_layer=norm_layer,
                                                   activation_layer=nn.ReLU6))
            layers.extend([
                Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim,
                                     norm_layer=norm_layer, activation_layer=nn.ReLU6),
                nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
                norm_layer(oup),
            ])
            self.conv = nn.Sequential(*layers)
            self.out_channels = oup
            self._is_cn = stride > 1

        def forward(self, x):
            if self.use_res_connect:
                return x + self.conv(x)
            return self.conv(x)

    class MobileNetV2(nn.Module):
        def __init__(self, num_classes=10, width_mult=0.25, round_nearest=8, dropout=0.2):
            super().__init__()
            block = InvertedResidualV2
            norm_layer = nn.BatchNorm2d
            input_channel = 32
            last_channel = 64
            inverted_residual_setting = [
                [1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 2, 2], [6, 64, 1, 2], [6, 96, 1, 1],
            ]
            input_channel = _make_divisible(input_channel * width_mult, round_nearest)
            self.last_channel = _make_divisible(last_channel * max(1.0, width_mult),
                                                round_nearest)
            features = [Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer,
                                             activation_layer=nn.ReLU6)]
            for t, c, n, s in inverted_residual_setting:
                output_channel = _make_divisible(c * width_mult, round_nearest)
                for i in range(n):
                    stride = s if i == 0 else 1
                    features.append(block(input_channel, output_channel, stride, expand_ratio=t,
                                          norm_layer=norm_layer))
                    input_channel = output_channel
            features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1,
                                                 norm_layer=norm_layer,
                                                 activation_layer=nn.ReLU6))
            self.features = nn.Sequential(*features)
            self.classifier = nn.Sequential(nn.Dropout(p=dropout),
                                            nn.Linear(self.last_channel, num_classes))
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
            x = F.adaptive_avg_pool2d(x, (1, 1))
            x = T.flatten(x, 1)
            x = self.classifier(x)
            return x

    z.MobileNetV2 = MobileNetV2

    # ------------------------------------------------------------ mobilenetv3.py
    class InvertedResidualConfig:
        def __init__(self, input_channels, kernel, expanded_channels, out_channels, use_se,
                     activation, stride, dilation, width_mult):
            self.input_channels = self.adjust_channels(input_channels, width_mult)
            self.kernel = kernel
            self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
            self.out_channels = self.adjust_channels(out_channels, width_mult)
            self.use_se = use_se
            self.use_hs = activation == "HS"
            self.stride = stride
            self.dilation = dilation

        @staticmethod
        def adjust_channels(channels, width_mult):
            return _make_divisible(channels * width_mult, 8)

    class InvertedResidualV3(nn.Module):
        def __init__(self, cnf, norm_layer, se_layer=None):
            super().__init__()
            if se_layer is None:  # torchvision's default argument
                se_layer = partial(SqueezeExcitation, scale_activation=nn.Hardsigmoid)
            self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
            layers = []
            activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
            if cnf.expanded_channels != cnf.input_channels:
                layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels,
                                                   kernel_size=1, norm_layer=norm_layer,
                                                   activation_layer=activation_layer))
            stride = 1 if cnf.dilation > 1 else cnf.stride
            layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels,
                                               kernel_size=cnf.kernel, stride=stride,
                                               dilation=cnf.dilation,
                                               groups=cnf.expanded_channels,
                                               norm_layer=norm_layer,
                                               activation_layer=activation_layer))
            if cnf.use_se:
                squeeze_channels = _make_divisible(cnf.expanded_channels // 4, 8)
                layers.append(se_layer(cnf.expanded_channels, squeeze_channels))
            layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels,
                                               kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=None))
            self.block = nn.Sequential(*layers)
            self.out_channels = cnf.out_channels
            self._is_cn = cnf.stride > 1

        def forward(self, input):
            result = self.block(input)
            if self.use_res_connect:
                result += input
            return result

    class MobileNetV3(nn.Module):
        def __init__(self, inverted_residual_setting, last_channel, num_classes=10,
                     dropout=0.2):
            super().__init__()
            block = InvertedResidualV3
            norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
            layers = []
            firstconv_output_channels = inverted_residual_setting[0].input_channels
            layers.append(Conv2dNormActivation(3, firstconv_output_channels, kernel_size=3,
                                               stride=2, norm_layer=norm_layer,
                                               activation_layer=nn.Hardswish))
            for cnf in inverted_residual_setting:
                layers.append(block(cnf, norm_layer))
            lastconv_input_channels = inverted_residual_setting[-1].out_channels
            lastconv_output_channels = 6 * lastconv_input_channels
            layers.append(Conv2dNormActivation(lastconv_input_channels, lastconv_output_channels,
                                               kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.Hardswish))
            self.features = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Sequential(
                nn.Linear(lastconv_output_channels, last_channel),
                nn.Hardswish(inplace=True),
                nn.Dropout(p=dropout, inplace=True),
                nn.Linear(last_channel, num_classes),
            )
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
            x = self.avgpool(x)
            x = T.flatten(x, 1)
            x = self.classifier(x)
            return x

    def mobilenet_v3_small(dropout=0.2, width_mult=0.25, dilated=False):
        bneck_conf = partial(InvertedResidualConfig, width_mult=width_mult)
        dilation = 2 if dilated else 1
        setting = [
            bneck_conf(16, 3, 16, 16, True, "RE", 2, 1),
            bneck_conf(16, 3, 72, 24, False, "RE", 2, 1),
            bneck_conf(24, 3, 88, 24, False, "RE", 1, 1),
            bneck_conf(24, 5, 96, 40, True, "HS", 2, 1),
            bneck_conf(40, 5, 240, 40, True, "HS", 1, 1),
            bneck_conf(40, 5, 144, 48, True, "HS", 1, 1),
            bneck_conf(48, 5, 288, 96, True, "HS", 2, dilation),
            bneck_conf(96, 5, 576, 96, True, "HS", 1, dilation),
        ]
        return MobileNetV3(setting, 32, dropout=dropout)

    z.mobilenet_v3_small = mobilenet_v3_small

    # ------------------------------------------------------------ squeezenet.py
    class Fire(nn.Module):
        def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
            super().__init__()
            self.inplanes = inplanes
            self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
            self.squeeze_activation = nn.ReLU(inplace=True)
            self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
            self.expand1x1_activation = nn.ReLU(inplace=True)
            self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3,
                                       padding=1)
            self.expand3x3_activation = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.squeeze_activation(self.squeeze(x))
            return T.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)

    class SqueezeNet(nn.Module):
        def __init__(self, version="1_0", num_classes=10, dropout=0.5):
            super().__init__()
            self.num_classes = num_classes
            if version == "1_0":
                self.features = nn.Sequential(
                    nn.Conv2d(3, 12, kernel_size=7, stride=2),
                    nn.ReLU(inplace=True),
                    nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                    Fire(12, 2, 4, 4),
                    Fire(8, 2, 4, 4),
                    Fire(8, 4, 8, 8),
                    nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                    Fire(16, 4, 8, 8),
                    Fire(16, 6, 12, 12),
                    nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                    Fire(24, 8, 16, 16),
                )
            else:
                self.features = nn.Sequential(
                    nn.Conv2d(3, 8, kernel_size=3, stride=2),
                    nn.ReLU(inplace=True),
                    nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                    Fire(8, 2, 4, 4),
                    nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                    Fire(8, 4, 8, 8),
                    nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                    Fire(16, 6, 12, 12),
                )
            final_conv = nn.Conv2d(self.features[-1].expand1x1.out_channels * 2,
                                   self.num_classes, kernel_size=1)
            self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv,
                                            nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    if m is final_conv:
                        nn.init.normal_(m.weight, mean=0.0, std=0.01)
                    else:
                        nn.init.kaiming_uniform_(m.weight)
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)

        def forward(self, x):
            x = self.features(x)
            x = self.classifier(x)
            return T.flatten(x, 1)

    z.SqueezeNet = SqueezeNet

    # ------------------------------------------------------------ shufflenetv2.py
    def channel_shuffle(x, groups):
        batchsize, num_channels, height, width = x.size()
        channels_per_group = num_channels // groups
        x = x.view(batchsize, groups, channels_per_group, height, width)
        x = T.transpose(x, 1, 2).contiguous()
        x = x.view(batchsize, -1, height, width)
        return x

    class ShuffleInvertedResidual(nn.Module):
        def __init__(self, inp, oup, stride):
            super().__init__()
            self.stride = stride
            branch_features = oup // 2
            if self.stride > 1:
                self.branch1 = nn.Sequential(
                    self.depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1),
                    nn.BatchNorm2d(inp),
                    nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0,
                              bias=False),
                    nn.BatchNorm2d(branch_features),
                    nn.ReLU(inplace=True),
                )
            else:
                self.branch1 = nn.Sequential()
            self.branch2 = nn.Sequential(
                nn.Conv2d(inp if (self.stride > 1) else branch_features, branch_features,
                          kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
                self.depthwise_conv(branch_features, branch_features, kernel_size=3,
                                    stride=self.stride, padding=1),
                nn.BatchNorm2d(branch_features),
                nn.Conv2d(branch_features, branch_features, kernel_size=1, stride=1, padding=0,
                          bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
            )

        @staticmethod
        def depthwise_conv(i, o, kernel_size, stride=1, padding=0, bias=False):
            return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

        def forward(self, x):
            if self.stride == 1:
                x1, x2 = x.chunk(2, dim=1)
                out = T.cat((x1, self.branch2(x2)), dim=1)
            else:
                out = T.cat((self.branch1(x), self.branch2(x)), dim=1)
            out = channel_shuffle(out, 2)
            return out

    class ShuffleNetV2(nn.Module):
        def __init__(self, stages_repeats, stages_out_channels, num_classes=10):
            super().__init__()
            self._stage_out_channels = stages_out_channels
            input_channels = 3
            output_channels = self._stage_out_channels[0]
            self.conv1 = nn.Sequential(
                nn.Conv2d(input_channels, output_channels, 3, 2, 1, bias=False),
                nn.BatchNorm2d(output_channels),
                nn.ReLU(inplace=True),
            )
            input_channels = output_channels
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            stage_names = [f"stage{i}" for i in [2, 3, 4]]
            for name, repeats, output_channels in zip(stage_names, stages_repeats,
                                                      self._stage_out_channels[1:]):
                seq = [ShuffleInvertedResidual(input_channels, output_channels, 2)]
                for _ in range(repeats - 1):
                    seq.append(ShuffleInvertedResidual(output_channels, output_channels, 1))
                setattr(self, name, nn.Sequential(*seq))
                input_channels = output_channels
            output_channels = self._stage_out_channels[-1]
            self.conv5 = nn.Sequential(
                nn.Conv2d(input_channels, output_channels, 1, 1, 0, bias=False),
                nn.BatchNorm2d(output_channels),
                nn.ReLU(inplace=True),
            )
            self.fc = nn.Linear(output_channels, num_classes)

        def _forward_impl(self, x):
            x = self.conv1(x)
            x = self.maxpool(x)
            x = self.stage2(x)
            x = self.stage3(x)
            x = self.stage4(x)
            x = self.conv5(x)
            x = x.mean([2, 3])
            x = self.fc(x)
            return x

        def forward(self, x):
            return self._forward_impl(x)

    z.channel_shuffle, z.ShuffleNetV2 = channel_shuffle, ShuffleNetV2

    # ------------------------------------------------------------ densenet.py
    cp = torch.utils.checkpoint if T is torch else rg.utils.checkpoint

    class _DenseLayer(nn.Module):
        def __init__(self, num_input_features, growth_rate, bn_size, drop_rate,
                     memory_efficient=False):
            super().__init__()
            self.norm1 = nn.BatchNorm2d(num_input_features)
            self.relu1 = nn.ReLU(inplace=True)
            self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1,
                                   stride=1, bias=False)
            self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
            self.relu2 = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1,
                                   padding=1, bias=False)
            self.drop_rate = float(drop_rate)
            self.memory_efficient = memory_efficient

        def bn_function(self, inputs):
            concated_features = T.cat(inputs, 1)
            bottleneck_output = self.conv1(self.relu1(self.norm1(concated_features)))
            return bottleneck_output

        def any_requires_grad(self, input):
            for tensor in input:
                if tensor.requires_grad:
                    return True
            return False

        @T.jit.unused
        def call_checkpoint_bottleneck(self, input):
            def closure(*inputs):
                return self.bn_function(inputs)
            return cp.checkpoint(closure, *input, use_reentrant=False)

        @T.jit._overload_method
        def forward(self, input):  # noqa: F811 - a TorchScript overload declaration
            pass

        def forward(self, input):  # noqa: F811
            if isinstance(input, T.Tensor):
                prev_features = [input]
            else:
                prev_features = input
            if self.memory_efficient and self.any_requires_grad(prev_features):
                if T.jit.is_scripting():
                    raise Exception("Memory Efficient not supported in JIT")
                bottleneck_output = self.call_checkpoint_bottleneck(prev_features)
            else:
                bottleneck_output = self.bn_function(prev_features)
            new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
            if self.drop_rate > 0:
                new_features = F.dropout(new_features, p=self.drop_rate,
                                         training=self.training)
            return new_features

    class _DenseBlock(nn.ModuleDict):
        _version = 2

        def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate,
                     memory_efficient=False):
            super().__init__()
            for i in range(num_layers):
                layer = _DenseLayer(num_input_features + i * growth_rate, growth_rate=growth_rate,
                                    bn_size=bn_size, drop_rate=drop_rate,
                                    memory_efficient=memory_efficient)
                self.add_module(f"denselayer{i + 1}", layer)

        def forward(self, init_features):
            features = [init_features]
            for _name, layer in self.items():
                new_features = layer(features)
                features.append(new_features)
            return T.cat(features, 1)

    class _Transition(nn.Sequential):
        def __init__(self, num_input_features, num_output_features):
            super().__init__()
            self.norm = nn.BatchNorm2d(num_input_features)
            self.relu = nn.ReLU(inplace=True)
            self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1,
                                  stride=1, bias=False)
            self.pool = nn.AvgPool2d(kernel_size=2, stride=2)

    class DenseNet(nn.Module):
        def __init__(self, growth_rate=4, block_config=(2, 2, 2), num_init_features=8,
                     bn_size=2, drop_rate=0, num_classes=10, memory_efficient=False):
            super().__init__()
            self.features = nn.Sequential(OrderedDict([
                ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3,
                                    bias=False)),
                ("norm0", nn.BatchNorm2d(num_init_features)),
                ("relu0", nn.ReLU(inplace=True)),
                ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
            ]))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                block = _DenseBlock(num_layers=num_layers, num_input_features=num_features,
                                    bn_size=bn_size, growth_rate=growth_rate,
                                    drop_rate=drop_rate, memory_efficient=memory_efficient)
                self.features.add_module(f"denseblock{i + 1}", block)
                num_features = num_features + num_layers * growth_rate
                if i != len(block_config) - 1:
                    trans = _Transition(num_input_features=num_features,
                                        num_output_features=num_features // 2)
                    self.features.add_module(f"transition{i + 1}", trans)
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
            out = T.flatten(out, 1)
            out = self.classifier(out)
            return out

    z.DenseNet = DenseNet

    # ------------------------------------------------------------ efficientnet.py
    class MBConvConfig:
        def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels,
                     num_layers, width_mult=1.0, depth_mult=1.0, block=None):
            self.expand_ratio = expand_ratio
            self.kernel = kernel
            self.stride = stride
            self.input_channels = _make_divisible(input_channels * width_mult, 8)
            self.out_channels = _make_divisible(out_channels * width_mult, 8)
            self.num_layers = int(math.ceil(num_layers * depth_mult))
            self.block = block

    class MBConv(nn.Module):
        def __init__(self, cnf, stochastic_depth_prob, norm_layer,
                     se_layer=SqueezeExcitation):
            super().__init__()
            self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
            layers = []
            activation_layer = nn.SiLU
            expanded_channels = _make_divisible(cnf.input_channels * cnf.expand_ratio, 8)
            if expanded_channels != cnf.input_channels:
                layers.append(Conv2dNormActivation(cnf.input_channels, expanded_channels,
                                                   kernel_size=1, norm_layer=norm_layer,
                                                   activation_layer=activation_layer))
            layers.append(Conv2dNormActivation(expanded_channels, expanded_channels,
                                               kernel_size=cnf.kernel, stride=cnf.stride,
                                               groups=expanded_channels, norm_layer=norm_layer,
                                               activation_layer=activation_layer))
            squeeze_channels = max(1, cnf.input_channels // 4)
            layers.append(se_layer(expanded_channels, squeeze_channels,
                                   activation=partial(nn.SiLU, inplace=True)))
            layers.append(Conv2dNormActivation(expanded_channels, cnf.out_channels,
                                               kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=None))
            self.block = nn.Sequential(*layers)
            self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
            self.out_channels = cnf.out_channels

        def forward(self, input):
            result = self.block(input)
            if self.use_res_connect:
                result = self.stochastic_depth(result)
                result += input
            return result

    class FusedMBConv(nn.Module):
        def __init__(self, cnf, stochastic_depth_prob, norm_layer):
            super().__init__()
            self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
            layers = []
            activation_layer = nn.SiLU
            expanded_channels = _make_divisible(cnf.input_channels * cnf.expand_ratio, 8)
            if expanded_channels != cnf.input_channels:
                layers.append(Conv2dNormActivation(cnf.input_channels, expanded_channels,
                                                   kernel_size=cnf.kernel, stride=cnf.stride,
                                                   norm_layer=norm_layer,
                                                   activation_layer=activation_layer))
                layers.append(Conv2dNormActivation(expanded_channels, cnf.out_channels,
                                                   kernel_size=1, norm_layer=norm_layer,
                                                   activation_layer=None))
            else:
                layers.append(Conv2dNormActivation(cnf.input_channels, cnf.out_channels,
                                                   kernel_size=cnf.kernel, stride=cnf.stride,
                                                   norm_layer=norm_layer,
                                                   activation_layer=activation_layer))
            self.block = nn.Sequential(*layers)
            self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
            self.out_channels = cnf.out_channels

        def forward(self, input):
            result = self.block(input)
            if self.use_res_connect:
                result = self.stochastic_depth(result)
                result += input
            return result

    class EfficientNet(nn.Module):
        def __init__(self, inverted_residual_setting, dropout, stochastic_depth_prob=0.2,
                     num_classes=10, norm_layer=None, last_channel=None):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            layers = []
            firstconv_output_channels = inverted_residual_setting[0].input_channels
            layers.append(Conv2dNormActivation(3, firstconv_output_channels, kernel_size=3,
                                               stride=2, norm_layer=norm_layer,
                                               activation_layer=nn.SiLU))
            total_stage_blocks = sum(cnf.num_layers for cnf in inverted_residual_setting)
            stage_block_id = 0
            for cnf in inverted_residual_setting:
                stage = []
                for _ in range(cnf.num_layers):
                    block_cnf = MBConvConfig(cnf.expand_ratio, cnf.kernel, cnf.stride,
                                             cnf.input_channels, cnf.out_channels, 1,
                                             block=cnf.block)
                    block_cnf.input_channels = cnf.input_channels
                    block_cnf.out_channels = cnf.out_channels
                    if stage:
                        block_cnf.input_channels = block_cnf.out_channels
                        block_cnf.stride = 1
                    sd_prob = stochastic_depth_prob * float(stage_block_id) / total_stage_blocks
                    stage.append(block_cnf.block(block_cnf, sd_prob, norm_layer))
                    stage_block_id += 1
                layers.append(nn.Sequential(*stage))
            lastconv_input_channels = inverted_residual_setting[-1].out_channels
            lastconv_output_channels = (last_channel if last_channel is not None
                                        else 4 * lastconv_input_channels)
            layers.append(Conv2dNormActivation(lastconv_input_channels, lastconv_output_channels,
                                               kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.SiLU))
            self.features = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True),
                                            nn.Linear(lastconv_output_channels, num_classes))
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out")
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
                elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Linear):
                    init_range = 1.0 / math.sqrt(m.out_features)
                    nn.init.uniform_(m.weight, -init_range, init_range)
                    nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.features(x)
            x = self.avgpool(x)
            x = T.flatten(x, 1)
            x = self.classifier(x)
            return x

    def efficientnet_b0(dropout=0.2, stochastic_depth_prob=0.2):
        c = partial(MBConvConfig, width_mult=0.25, depth_mult=0.5, block=MBConv)
        setting = [c(1, 3, 1, 32, 16, 1), c(6, 3, 2, 16, 24, 2), c(6, 5, 2, 24, 40, 2),
                   c(6, 3, 1, 40, 40, 2)]
        return EfficientNet(setting, dropout, stochastic_depth_prob)

    def efficientnet_v2(dropout=0.2, stochastic_depth_prob=0.2):
        fused = partial(MBConvConfig, block=FusedMBConv)
        mb = partial(MBConvConfig, block=MBConv)
        setting = [fused(1, 3, 1, 8, 8, 2), fused(4, 3, 2, 8, 16, 2), mb(4, 3, 2, 16, 16, 2),
                   mb(6, 3, 1, 16, 24, 1)]
        return EfficientNet(setting, dropout, stochastic_depth_prob,
                            norm_layer=partial(nn.BatchNorm2d, eps=1e-03), last_channel=32)

    z.efficientnet_b0, z.efficientnet_v2 = efficientnet_b0, efficientnet_v2

    # ------------------------------------------------------------ googlenet.py
    GoogLeNetOutputs = __import__("collections").namedtuple(
        "GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])

    class BasicConv2d(nn.Module):
        def __init__(self, in_channels, out_channels, **kwargs):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
            self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

        def forward(self, x):
            x = self.conv(x)
            x = self.bn(x)
            return F.relu(x, inplace=True)

    class Inception(nn.Module):
        def __init__(self, in_channels, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj):
            super().__init__()
            conv_block = BasicConv2d
            self.branch1 = conv_block(in_channels, ch1x1, kernel_size=1)
            self.branch2 = nn.Sequential(conv_block(in_channels, ch3x3red, kernel_size=1),
                                         conv_block(ch3x3red, ch3x3, kernel_size=3, padding=1))
            self.branch3 = nn.Sequential(conv_block(in_channels, ch5x5red, kernel_size=1),
                                         conv_block(ch5x5red, ch5x5, kernel_size=3, padding=1))
            self.branch4 = nn.Sequential(
                nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
                conv_block(in_channels, pool_proj, kernel_size=1))

        def _forward(self, x):
            return [self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)]

        def forward(self, x):
            outputs = self._forward(x)
            return T.cat(outputs, 1)

    class InceptionAux(nn.Module):
        def __init__(self, in_channels, num_classes, dropout=0.7):
            super().__init__()
            self.conv = BasicConv2d(in_channels, 8, kernel_size=1)
            self.fc1 = nn.Linear(8 * 4 * 4, 16)
            self.fc2 = nn.Linear(16, num_classes)
            self.dropout = nn.Dropout(p=dropout)

        def forward(self, x):
            x = F.adaptive_avg_pool2d(x, (4, 4))
            x = self.conv(x)
            x = T.flatten(x, 1)
            x = F.relu(self.fc1(x), inplace=True)
            x = self.dropout(x)
            x = self.fc2(x)
            return x

    class GoogLeNet(nn.Module):
        def __init__(self, num_classes=10, aux_logits=True, transform_input=True,
                     dropout=0.2, dropout_aux=0.7):
            super().__init__()
            self.aux_logits = aux_logits
            self.transform_input = transform_input
            self.conv1 = BasicConv2d(3, 8, kernel_size=7, stride=2, padding=3)
            self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
            self.conv2 = BasicConv2d(8, 8, kernel_size=1)
            self.conv3 = BasicConv2d(8, 12, kernel_size=3, padding=1)
            self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
            self.inception3a = Inception(12, 4, 4, 6, 2, 2, 2)
            self.inception3b = Inception(14, 6, 4, 6, 2, 4, 4)
            self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
            self.inception4a = Inception(20, 6, 4, 6, 2, 2, 2)
            self.inception4b = Inception(16, 4, 4, 6, 2, 2, 2)
            self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)
            self.inception5a = Inception(14, 6, 4, 6, 2, 4, 4)
            if aux_logits:
                self.aux1 = InceptionAux(16, num_classes, dropout=dropout_aux)
                self.aux2 = InceptionAux(14, num_classes, dropout=dropout_aux)
            else:
                self.aux1 = None
                self.aux2 = None
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.dropout = nn.Dropout(p=dropout)
            self.fc = nn.Linear(20, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d) or isinstance(m, nn.Linear):
                    nn.init.trunc_normal_(m.weight, mean=0.0, std=0.01, a=-2, b=2)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

        def _transform_input(self, x):
            if self.transform_input:
                x_ch0 = T.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
                x_ch1 = T.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
                x_ch2 = T.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
                x = T.cat((x_ch0, x_ch1, x_ch2), 1)
            return x

        def _forward(self, x):
            x = self.conv1(x)
            x = self.maxpool1(x)
            x = self.conv2(x)
            x = self.conv3(x)
            x = self.maxpool2(x)
            x = self.inception3a(x)
            x = self.inception3b(x)
            x = self.maxpool3(x)
            x = self.inception4a(x)
            aux1 = T.jit.annotate(T.Tensor | None, None)
            if self.aux1 is not None and self.training:
                aux1 = self.aux1(x)
            x = self.inception4b(x)
            aux2 = T.jit.annotate(T.Tensor | None, None)
            if self.aux2 is not None and self.training:
                aux2 = self.aux2(x)
            x = self.maxpool4(x)
            x = self.inception5a(x)
            x = self.avgpool(x)
            x = T.flatten(x, 1)
            x = self.dropout(x)
            x = self.fc(x)
            return x, aux2, aux1

        @T.jit.unused
        def eager_outputs(self, x, aux2, aux1):
            if self.training and self.aux_logits:
                return GoogLeNetOutputs(x, aux2, aux1)
            return x

        def forward(self, x):
            x = self._transform_input(x)
            x, aux1, aux2 = self._forward(x)
            if T.jit.is_scripting():
                return GoogLeNetOutputs(x, aux2, aux1)
            return self.eager_outputs(x, aux2, aux1)

    z.GoogLeNet = GoogLeNet

    # ------------------------------------------------------------ alexnet.py
    class AlexNet(nn.Module):
        def __init__(self, num_classes=10, dropout=0.5):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, kernel_size=11, stride=4, padding=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2),
                nn.Conv2d(8, 12, kernel_size=5, padding=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2),
                nn.Conv2d(12, 16, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(16, 12, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(12, 12, kernel_size=3, padding=1),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2),
            )
            self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
            self.classifier = nn.Sequential(
                nn.Dropout(p=dropout),
                nn.Linear(12 * 6 * 6, 16),
                nn.ReLU(inplace=True),
                nn.Dropout(p=dropout),
                nn.Linear(16, 16),
                nn.ReLU(inplace=True),
                nn.Linear(16, num_classes),
            )

        def forward(self, x):
            x = self.features(x)
            x = self.avgpool(x)
            x = T.flatten(x, 1)
            x = self.classifier(x)
            return x

    z.AlexNet = AlexNet

    # ------------------------------------------------------------ convnext.py
    class LayerNorm2d(nn.LayerNorm):
        def forward(self, x):
            x = x.permute(0, 2, 3, 1)
            x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
            x = x.permute(0, 3, 1, 2)
            return x

    class CNBlock(nn.Module):
        def __init__(self, dim, layer_scale, stochastic_depth_prob, norm_layer=None):
            super().__init__()
            if norm_layer is None:
                norm_layer = partial(nn.LayerNorm, eps=1e-6)
            self.block = nn.Sequential(
                nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
                Permute([0, 2, 3, 1]),
                norm_layer(dim),
                nn.Linear(in_features=dim, out_features=4 * dim, bias=True),
                nn.GELU(),
                nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
                Permute([0, 3, 1, 2]),
            )
            self.layer_scale = nn.Parameter(T.ones(dim, 1, 1) * layer_scale)
            self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

        def forward(self, input):
            result = self.layer_scale * self.block(input)
            result = self.stochastic_depth(result)
            result += input
            return result

    class CNBlockConfig:
        def __init__(self, input_channels, out_channels, num_layers):
            self.input_channels = input_channels
            self.out_channels = out_channels
            self.num_layers = num_layers

    class ConvNeXt(nn.Module):
        def __init__(self, block_setting, stochastic_depth_prob=0.0, layer_scale=1e-6,
                     num_classes=10):
            super().__init__()
            block = CNBlock
            norm_layer = partial(LayerNorm2d, eps=1e-6)
            layers = []
            firstconv_output_channels = block_setting[0].input_channels
            layers.append(Conv2dNormActivation(3, firstconv_output_channels, kernel_size=4,
                                               stride=4, padding=0, norm_layer=norm_layer,
                                               activation_layer=None, bias=True))
            total_stage_blocks = sum(cnf.num_layers for cnf in block_setting)
            stage_block_id = 0
            for cnf in block_setting:
                stage = []
                for _ in range(cnf.num_layers):
                    sd_prob = stochastic_depth_prob * stage_block_id / (total_stage_blocks - 1.0)
                    stage.append(block(cnf.input_channels, layer_scale, sd_prob))
                    stage_block_id += 1
                layers.append(nn.Sequential(*stage))
                if cnf.out_channels is not None:
                    layers.append(nn.Sequential(
                        norm_layer(cnf.input_channels),
                        nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2),
                    ))
            self.features = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            lastblock = block_setting[-1]
            lastconv_output_channels = (lastblock.out_channels if lastblock.out_channels
                                        is not None else lastblock.input_channels)
            self.classifier = nn.Sequential(norm_layer(lastconv_output_channels),
                                            nn.Flatten(1),
                                            nn.Linear(lastconv_output_channels, num_classes))
            for m in self.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    nn.init.trunc_normal_(m.weight, std=0.02)
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.features(x)
            x = self.avgpool(x)
            x = self.classifier(x)
            return x

    def convnext_tiny(stochastic_depth_prob=0.1, layer_scale=1e-6):
        setting = [CNBlockConfig(8, 16, 1), CNBlockConfig(16, 24, 2), CNBlockConfig(24, None, 1)]
        return ConvNeXt(setting, stochastic_depth_prob, layer_scale)

    z.convnext_tiny = convnext_tiny

    # ------------------------------------------------------------ regnet.py
    class SimpleStemIN(Conv2dNormActivation):
        def __init__(self, width_in, width_out, norm_layer, activation_layer):
            super().__init__(width_in, width_out, kernel_size=3, stride=2,
                             norm_layer=norm_layer, activation_layer=activation_layer)

    class BottleneckTransform(nn.Sequential):
        def __init__(self, width_in, width_out, stride, norm_layer, activation_layer,
                     group_width, bottleneck_multiplier, se_ratio):
            layers = OrderedDict()
            w_b = int(round(width_out * bottleneck_multiplier))
            g = w_b // group_width
            layers["a"] = Conv2dNormActivation(width_in, w_b, kernel_size=1, stride=1,
                                               norm_layer=norm_layer,
                                               activation_layer=activation_layer)
            layers["b"] = Conv2dNormActivation(w_b, w_b, kernel_size=3, stride=stride,
                                               groups=g, norm_layer=norm_layer,
                                               activation_layer=activation_layer)
            if se_ratio:
                width_se_out = int(round(se_ratio * width_in))
                layers["se"] = SqueezeExcitation(input_channels=w_b,
                                                 squeeze_channels=width_se_out,
                                                 activation=activation_layer)
            layers["c"] = Conv2dNormActivation(w_b, width_out, kernel_size=1, stride=1,
                                               norm_layer=norm_layer, activation_layer=None)
            super().__init__(layers)

    class ResBottleneckBlock(nn.Module):
        def __init__(self, width_in, width_out, stride, norm_layer, activation_layer,
                     group_width=1, bottleneck_multiplier=1.0, se_ratio=None):
            super().__init__()
            self.proj = None
            should_proj = (width_in != width_out) or (stride != 1)
            if should_proj:
                self.proj = Conv2dNormActivation(width_in, width_out, kernel_size=1,
                                                 stride=stride, norm_layer=norm_layer,
                                                 activation_layer=None)
            self.f = BottleneckTransform(width_in, width_out, stride, norm_layer,
                                         activation_layer, group_width, bottleneck_multiplier,
                                         se_ratio)
            self.activation = activation_layer(inplace=True)

        def forward(self, x):
            if self.proj is not None:
                x = self.proj(x) + self.f(x)
            else:
                x = x + self.f(x)
            return self.activation(x)

    class AnyStage(nn.Sequential):
        def __init__(self, width_in, width_out, stride, depth, block_constructor, norm_layer,
                     activation_layer, group_width, bottleneck_multiplier, se_ratio=None,
                     stage_index=0):
            super().__init__()
            for i in range(depth):
                block = block_constructor(width_in if i == 0 else width_out, width_out,
                                          stride if i == 0 else 1, norm_layer,
                                          activation_layer, group_width,
                                          bottleneck_multiplier, se_ratio)
                self.add_module(f"block{stage_index}-{i}", block)

    class RegNet(nn.Module):
        def __init__(self, widths, depths, group_width, se_ratio, num_classes=10,
                     stem_width=8):
            super().__init__()
            norm_layer = partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1)
            activation = nn.ReLU
            self.stem = SimpleStemIN(3, stem_width, norm_layer, activation)
            current_width = stem_width
            blocks = []
            for i, (width_out, depth) in enumerate(zip(widths, depths)):
                blocks.append((f"block{i + 1}", AnyStage(
                    current_width, width_out, 2, depth, ResBottleneckBlock, norm_layer,
                    activation, group_width, 1.0, se_ratio, stage_index=i + 1)))
                current_width = width_out
            self.trunk_output = nn.Sequential(OrderedDict(blocks))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(in_features=current_width, out_features=num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                    nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                    nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.stem(x)
            x = self.trunk_output(x)
            x = self.avgpool(x)
            x = x.flatten(start_dim=1)
            x = self.fc(x)
            return x

    z.RegNet = RegNet
    return z


TV = zoo(torch)
RV = zoo(rg)


# ---------------------------------------------------------------- the comparison

def build(make, seed=0):
    """The same model on both sides: torch's initialised by its own code, retrograd's built
    by the same code and then given torch's weights (numpy) through load_state_dict."""
    torch.manual_seed(seed)
    rg.manual_seed(seed)
    tm = make(TV).double()
    rm = make(RV).double()
    tsd = tm.state_dict()
    assert list(rm.state_dict()) == list(tsd)
    res = rm.load_state_dict({k: v.detach().numpy().copy() for k, v in tsd.items()})
    assert not res.missing_keys and not res.unexpected_keys
    return tm, rm


def close(ours, ref, what="", scale=None):
    """1e-6 relative; a tensor that is zero up to rounding (a conv bias feeding a train-mode
    BatchNorm has gradient 0 exactly in real arithmetic) is held to 1e-6 of `scale`, the
    largest magnitude among its kind (all gradients, say), rather than of its own noise."""
    a = ours.detach().numpy() if hasattr(ours, "detach") else np.asarray(ours)
    b = ref.detach().numpy() if hasattr(ref, "detach") else np.asarray(ref)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
    scale = max(np.abs(b).max(initial=0.0), scale or 0.0, 1e-30)
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale, err_msg=what)


def compare_state(rm, tm, what):
    rsd, tsd = rm.state_dict(), tm.state_dict()
    assert list(rsd) == list(tsd)
    scale = max(float(v.abs().max()) for v in tsd.values() if v.is_floating_point())
    for k in tsd:
        close(rsd[k], tsd[k], f"{what}: {k}", scale * 1e-3)


def outputs(o):
    return list(o) if isinstance(o, tuple) else [o]


def run_model(make, shape=(2, 3, 32, 32), num_classes=10, steps=3, eval_make=None):
    """Train-mode outputs, gradients of every parameter, BatchNorm running statistics,
    `steps` SGD steps, then eval-mode outputs under no_grad; all against torch."""
    tm, rm = build(make)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(shape) for _ in range(steps)]
    ys = [rng.integers(0, num_classes, shape[0]) for _ in range(steps)]
    topt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    ropt = rg.optim.SGD(rm.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    tm.train()
    rm.train()
    for step in range(steps):
        tx, rx = torch.tensor(xs[step]), rg.tensor(xs[step])
        ty, ry = torch.tensor(ys[step]), rg.tensor(ys[step])
        to, ro = outputs(tm(tx)), outputs(rm(rx))
        assert len(to) == len(ro)
        for i, (a, b) in enumerate(zip(ro, to)):
            close(a, b, f"train output {i}, step {step}")
        tloss = sum(torch.nn.functional.cross_entropy(o, ty) for o in to)
        rloss = sum(rg.nn.functional.cross_entropy(o, ry) for o in ro)
        close(rloss, tloss, "loss")
        topt.zero_grad()
        ropt.zero_grad()
        tloss.backward()
        rloss.backward()
        rparams = dict(rm.named_parameters())
        tparams = dict(tm.named_parameters())
        assert list(rparams) == list(tparams)
        gscale = max(float(p.grad.abs().max()) for p in tparams.values() if p.grad is not None)
        for k, p in tparams.items():
            if p.grad is None:
                assert rparams[k].grad is None, k
            else:
                close(rparams[k].grad, p.grad, f"grad {k}, step {step}", gscale)
        compare_state(rm, tm, f"after training forward {step}")
        topt.step()
        ropt.step()
        compare_state(rm, tm, f"after SGD step {step}")
    tm.eval()
    rm.eval()
    x = rng.standard_normal(shape)
    with torch.no_grad():
        to = tm(torch.tensor(x))
    with rg.no_grad():
        ro = rm(rg.tensor(x))
    close(ro, to, "eval output")
    assert not ro.requires_grad
    compare_state(rm, tm, "after eval forward")
    # eval mode with gradients (fine-tuning with BatchNorm statistics fixed)
    topt.zero_grad()
    ropt.zero_grad()
    torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(ys[0])).backward()
    rg.nn.functional.cross_entropy(rm(rg.tensor(x)), rg.tensor(ys[0])).backward()
    tparams = dict(tm.named_parameters())
    gscale = max(float(p.grad.abs().max()) for p in tparams.values() if p.grad is not None)
    for k, p in rm.named_parameters():
        if tparams[k].grad is None:  # GoogLeNet's auxiliary heads do not run in eval mode
            assert p.grad is None, k
        else:
            close(p.grad, tparams[k].grad, f"eval-mode grad {k}", gscale)
    compare_state(rm, tm, "after eval backward")
    # and back: retrograd's state_dict loads into torch
    tm2 = make(TV).double()
    tm2.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in rm.state_dict().items()})
    compare_state(rm, tm2, "exported to torch")
    if eval_make is not None:
        tm, rm = build(eval_make)
        tm.eval()
        rm.eval()
        with torch.no_grad():
            to = tm(torch.tensor(x))
        with rg.no_grad():
            ro = rm(rg.tensor(x))
        close(ro, to, "eval output (dropout / stochastic depth on)")
    return tm, rm


# ---------------------------------------------------------------- the models

@pytest.mark.parametrize("kind", ["basic", "bottleneck_zero_init", "resnext_dilated"])
def test_resnet(kind):
    def make(z):
        if kind == "basic":
            return z.ResNet(z.BasicBlock, [2, 1, 1, 1], width=4)
        if kind == "bottleneck_zero_init":
            return z.ResNet(z.Bottleneck, [1, 1, 1, 1], zero_init_residual=True, width=4)
        return z.ResNet(z.Bottleneck, [1, 1, 2, 1], groups=2, width_per_group=32, width=4,
                        replace_stride_with_dilation=[False, True, True])
    tm, rm = run_model(make)
    if kind == "bottleneck_zero_init":
        m = build(make)[1]
        assert float(m.layer1[0].bn3.weight.abs().sum()) == 0.0


@pytest.mark.parametrize("bn", [False, True])
def test_vgg(bn):
    cfg = [8, "M", 8, "M", 16, 16, "M", 16, "M", 16, "M"]
    run_model(lambda z: z.VGG(z.make_layers(cfg, batch_norm=bn), dropout=0.0),
              eval_make=lambda z: z.VGG(z.make_layers(cfg, batch_norm=bn), dropout=0.5))


def test_mobilenet_v2():
    run_model(lambda z: z.MobileNetV2(dropout=0.0),
              eval_make=lambda z: z.MobileNetV2(dropout=0.2))


@pytest.mark.parametrize("dilated", [False, True])
def test_mobilenet_v3(dilated):
    run_model(lambda z: z.mobilenet_v3_small(dropout=0.0, dilated=dilated),
              eval_make=lambda z: z.mobilenet_v3_small(dropout=0.2, dilated=dilated))


@pytest.mark.parametrize("version", ["1_0", "1_1"])
def test_squeezenet(version):
    run_model(lambda z: z.SqueezeNet(version, dropout=0.0),
              eval_make=lambda z: z.SqueezeNet(version, dropout=0.5))


def test_shufflenet_v2():
    run_model(lambda z: z.ShuffleNetV2([2, 2, 1], [8, 16, 32, 32, 48]))


@pytest.mark.parametrize("memory_efficient", [False, True])
def test_densenet(memory_efficient):
    run_model(lambda z: z.DenseNet(memory_efficient=memory_efficient),
              eval_make=lambda z: z.DenseNet(drop_rate=0.3))


@pytest.mark.parametrize("v2", [False, True])
def test_efficientnet(v2):
    make = (lambda z, **k: z.efficientnet_v2(**k)) if v2 else (
        lambda z, **k: z.efficientnet_b0(**k))
    run_model(lambda z: make(z, dropout=0.0, stochastic_depth_prob=0.0),
              eval_make=lambda z: make(z, dropout=0.2, stochastic_depth_prob=0.2))


def test_googlenet_aux_outputs():
    tm, rm = run_model(lambda z: z.GoogLeNet(dropout=0.0, dropout_aux=0.0),
                       eval_make=lambda z: z.GoogLeNet())
    rm.train()
    out = rm(rg.randn(2, 3, 32, 32, dtype=rg.float64))
    assert type(out).__name__ == "GoogLeNetOutputs" and out.logits.shape == (2, 10)


def test_alexnet():
    run_model(lambda z: z.AlexNet(dropout=0.0), shape=(2, 3, 64, 64),
              eval_make=lambda z: z.AlexNet(dropout=0.5))


def test_convnext():
    run_model(lambda z: z.convnext_tiny(stochastic_depth_prob=0.0, layer_scale=0.5),
              eval_make=lambda z: z.convnext_tiny(stochastic_depth_prob=0.1))


@pytest.mark.parametrize("se", [None, 0.25])
def test_regnet(se):
    run_model(lambda z: z.RegNet([8, 16, 32], [1, 2, 1], group_width=4, se_ratio=se))


# ---------------------------------------------------------------- pieces on their own

def test_stochastic_depth_row_and_batch():
    x = np.random.default_rng(2).standard_normal((64, 3, 2, 2)) + 5.0
    for T, Z in ((torch, TV), (rg, RV)):
        T.manual_seed(0)
        sd = Z.StochasticDepth(0.25, "row")
        out = sd(T.tensor(x)).numpy()
        kept = np.all(np.isclose(out, x / 0.75), axis=(1, 2, 3))
        dropped = np.all(out == 0, axis=(1, 2, 3))
        assert np.all(kept | dropped) and 0 < dropped.sum() < 64
        sd.eval()
        assert np.array_equal(sd(T.tensor(x)).numpy(), x)
        b = Z.StochasticDepth(0.5, "batch")(T.tensor(x)).numpy()
        assert np.array_equal(b, 0 * x) or np.allclose(b, 2 * x)
        with pytest.raises(ValueError):
            Z.StochasticDepth(1.5, "row")(T.tensor(x))


def test_channel_shuffle_and_make_divisible():
    x = np.arange(2 * 8 * 3 * 3, dtype=np.float64).reshape(2, 8, 3, 3)
    close(RV.channel_shuffle(rg.tensor(x), 2), TV.channel_shuffle(torch.tensor(x), 2))
    for r, t in zip(rg.chunk(rg.tensor(x), 2, dim=1), torch.chunk(torch.tensor(x), 2, dim=1)):
        close(r, t)
    assert [RV._make_divisible(v, 8) for v in (3, 12, 20, 33.6)] == \
        [TV._make_divisible(v, 8) for v in (3, 12, 20, 33.6)]


def test_module_apply_and_init_in_place():
    def init(nn, m):
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 0.5)
            nn.init.zeros_(m.bias)
    for T in (torch, rg):
        m = T.nn.Sequential(T.nn.Conv2d(3, 64, 3), T.nn.BatchNorm2d(64))
        w = m[0].weight
        out = m.apply(partial(init, T.nn))
        assert out is m and m[0].weight is w
        assert float(m[1].weight.sum()) == 32.0
        std = float(m[0].weight.std())
        assert abs(std - math.sqrt(2.0 / (64 * 9))) < 0.01


# ---------------------------------------------------------------- loading checkpoints

def test_frozen_batchnorm_backbone_loads_a_batchnorm_checkpoint():
    """Detection and fine-tuning code builds resnet(norm_layer=FrozenBatchNorm2d) and loads
    ImageNet weights saved with BatchNorm2d: the layer's _load_from_state_dict override drops
    num_batches_tracked, which load_state_dict must call (it was never called: strict loading
    failed on unexpected keys)."""
    torch.manual_seed(0)
    src = TV.ResNet(TV.Bottleneck, [1, 1, 1, 1], width=4).double()
    src.train()
    src(torch.randn(4, 3, 32, 32, dtype=torch.float64))  # running statistics away from 0 / 1
    sd = {k: v.detach().numpy().copy() for k, v in src.state_dict().items()}
    tm = TV.ResNet(TV.Bottleneck, [1, 1, 1, 1], width=4, norm_layer=TV.FrozenBatchNorm2d)
    rm = RV.ResNet(RV.Bottleneck, [1, 1, 1, 1], width=4, norm_layer=RV.FrozenBatchNorm2d)
    tm, rm = tm.double(), rm.double()
    tres = tm.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    rres = rm.load_state_dict(sd)
    assert repr(rres) == repr(tres) == "<All keys matched successfully>"
    assert list(rm.state_dict()) == list(tm.state_dict())
    compare_state(rm, tm, "frozen")
    x = np.random.default_rng(3).standard_normal((2, 3, 32, 32))
    to, ro = tm(torch.tensor(x)), rm(rg.tensor(x))
    close(ro, to, "frozen output")
    to.square().sum().backward()
    ro.square().sum().backward()
    for (k, rp), (_, tp) in zip(rm.named_parameters(), tm.named_parameters()):
        close(rp.grad, tp.grad, k)
    # the override sees the keys under its own prefix only, and strictness still holds
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "bn1.zzz"'):
        rm.load_state_dict({**sd, "bn1.zzz": np.zeros(1)})


def test_batchnorm_checkpoint_without_num_batches_tracked():
    """A BatchNorm state_dict with no version recorded (or version 1) and no
    num_batches_tracked keeps the layer's count, as torch; with version 2 recorded the key is
    missing (strict error) on both."""
    tb, rb = torch.nn.BatchNorm2d(3), rg.nn.BatchNorm2d(3)
    tb.num_batches_tracked.fill_(5)
    rb.num_batches_tracked.fill_(5)
    sd = {"weight": np.full(3, 2.0, np.float32), "bias": np.ones(3, np.float32),
          "running_mean": np.full(3, 0.5, np.float32), "running_var": np.full(3, 3.0, np.float32)}
    tres = tb.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    rres = rb.load_state_dict(sd)
    assert repr(rres) == repr(tres)
    compare_state(rb, tb, "old checkpoint")
    seq_sd = {f"1.{k}": v for k, v in sd.items()}
    ts, rs = torch.nn.Sequential(torch.nn.ReLU(), tb), rg.nn.Sequential(rg.nn.ReLU(), rb)
    for version, fails in ((1, False), (2, True)):
        tsd = OrderedDict((k, torch.from_numpy(v)) for k, v in seq_sd.items())
        tsd._metadata = {"": {"version": 1}, "1": {"version": version}}
        rsd = OrderedDict(seq_sd)
        rsd._metadata = tsd._metadata
        if fails:
            with pytest.raises(RuntimeError, match='Missing key.*"1.num_batches_tracked"'):
                ts.load_state_dict(tsd)
            with pytest.raises(RuntimeError, match='Missing key.*"1.num_batches_tracked"'):
                rs.load_state_dict(rsd)
        else:
            assert repr(rs.load_state_dict(rsd)) == repr(ts.load_state_dict(tsd))


def test_torch_jit_eager_names():
    """torch.jit's names that torchvision's model files call in eager mode (googlenet,
    densenet, stochastic_depth), on rg.jit with eager PyTorch's answers."""
    def f(x):
        return x

    for T in (torch, rg):
        assert T.jit.is_scripting() is False and T.jit.is_tracing() is False
        assert T.jit.unused(f) is f and T.jit.export(f) is f and T.jit.ignore(f) is f
        assert T.jit.ignore(drop=True)(f) is f
        v = [1]
        assert T.jit.annotate(list[int], v) is v
    assert float(rg.jit(lambda x: x * 2)(rg.ones(1))[0]) == 2.0  # still retrograd's jit


# ---------------------------------------------------------------- the training recipe

def _split_normalization_params(model, nn):
    """references/classification/utils.py: norm layers' parameters get their own group."""
    norm_classes = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm,
                    nn.modules.instancenorm._InstanceNorm, nn.LocalResponseNorm)
    norm_params, other_params = [], []
    for module in model.modules():
        if next(module.children(), None):
            other_params.extend(p for p in module.parameters(recurse=False) if p.requires_grad)
        elif isinstance(module, norm_classes):
            norm_params.extend(p for p in module.parameters() if p.requires_grad)
        else:
            other_params.extend(p for p in module.parameters() if p.requires_grad)
    return norm_params, other_params


def _recipe(T, model, opt_name, steps=4):
    nn = T.nn

    class ExponentialMovingAverage(T.optim.swa_utils.AveragedModel):
        def __init__(self, model, decay, device="cpu"):
            def ema_avg(avg_model_param, model_param, num_averaged):
                return decay * avg_model_param + (1 - decay) * model_param
            super().__init__(model, device, ema_avg, use_buffers=True)

    norm, other = _split_normalization_params(model, nn)
    groups = [{"params": other, "weight_decay": 1e-4}, {"params": norm, "weight_decay": 0.0}]
    if opt_name == "sgd":
        opt = T.optim.SGD(groups, lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)
    elif opt_name == "rmsprop":
        opt = T.optim.RMSprop(groups, lr=0.01, momentum=0.9, weight_decay=1e-4, eps=0.0316,
                              alpha=0.9)
    else:
        opt = T.optim.AdamW(groups, lr=0.01, weight_decay=0.05)
    warm = T.optim.lr_scheduler.LinearLR(opt, start_factor=0.01, total_iters=2)
    main = T.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3, eta_min=0.0)
    sched = T.optim.lr_scheduler.SequentialLR(opt, schedulers=[warm, main], milestones=[2])
    ema = ExponentialMovingAverage(model, decay=1.0 - min(1.0, 0.01 * 2 / 4))
    swa = T.optim.swa_utils.AveragedModel(model)
    multi = T.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=T.optim.swa_utils.get_ema_multi_avg_fn(0.9), use_buffers=True)
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)
    rng = np.random.default_rng(5)
    lrs = []
    for _ in range(steps):
        x = T.tensor(rng.standard_normal((2, 3, 32, 32)))
        y = T.tensor(rng.integers(0, 10, 2))
        loss = crit(model(x), y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        for avg in (ema, swa, multi):
            avg.update_parameters(model)
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
    loader = [T.tensor(rng.standard_normal((2, 3, 32, 32))) for _ in range(2)]
    T.optim.swa_utils.update_bn([(b, 0) for b in loader], swa)
    ema.eval()
    with T.no_grad():
        out = ema(loader[0])
    return lrs, (ema, swa, multi), out


@pytest.mark.parametrize("opt_name", ["sgd", "rmsprop", "adamw"])
def test_classification_recipe_with_ema(opt_name):
    """torchvision's references/classification recipe around a model: parameter groups
    without weight decay on norm layers, label smoothing, gradient clipping, warmup then
    cosine (SequentialLR), its ExponentialMovingAverage (an AveragedModel subclass averaging
    buffers too), plain SWA with update_bn, and get_ema_multi_avg_fn."""
    tm, rm = build(lambda z: z.ResNet(z.BasicBlock, [1, 1, 1, 1], width=4))
    tl, tavg, to = _recipe(torch, tm, opt_name)
    rl, ravg, ro = _recipe(rg, rm, opt_name)
    np.testing.assert_allclose(rl, tl, rtol=1e-12)
    compare_state(rm, tm, "model")
    for r, t in zip(ravg, tavg):
        assert int(r.n_averaged) == int(t.n_averaged) == 4
        compare_state(r, t, type(t).__name__)
    close(ro, to, "ema output")


@pytest.mark.parametrize("strategy,anneal", [("cos", 3), ("linear", 2), ("cos", 0)])
def test_swalr(strategy, anneal):
    lrs = []
    for T in (torch, rg):
        opt = T.optim.SGD([T.nn.Parameter(T.zeros(2)), ], lr=0.5)
        sched = T.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=anneal,
                                        anneal_strategy=strategy)
        seen = [opt.param_groups[0]["lr"]]
        for _ in range(5):
            opt.step()
            sched.step()
            seen.append(opt.param_groups[0]["lr"])
        lrs.append(seen)
    np.testing.assert_allclose(lrs[1], lrs[0], rtol=1e-12)


def test_avg_fns():
    a, b = np.array([1.0, 2.0, -3.0]), np.array([0.5, 4.0, 1.0])
    for name, args in (("get_ema_avg_fn", (0.9,)), ("get_swa_avg_fn", ())):
        t = getattr(torch.optim.swa_utils, name)(*args)(torch.tensor(a), torch.tensor(b), 3)
        r = getattr(rg.optim.swa_utils, name)(*args)(rg.tensor(a), rg.tensor(b), 3)
        close(r, t, name)
    with pytest.raises(RuntimeError):
        torch.optim.swa_utils.get_swa_multi_avg_fn()([torch.tensor([1])], [torch.tensor([2])],
                                                     torch.tensor(3))
    with pytest.raises(RuntimeError):
        rg.optim.swa_utils.get_swa_multi_avg_fn()([rg.tensor([1])], [rg.tensor([2])],
                                                  rg.tensor(3))
    for name, args in (("get_ema_multi_avg_fn", (0.9,)), ("get_swa_multi_avg_fn", ())):
        ta, ra = [torch.tensor(a), torch.tensor([3, 4])], [rg.tensor(a), rg.tensor([3, 4])]
        tb, rb = [torch.tensor(b), torch.tensor([8, 1])], [rg.tensor(b), rg.tensor([8, 1])]
        getattr(torch.optim.swa_utils, name)(*args)(ta[:1], tb[:1], torch.tensor(3))
        if name == "get_ema_multi_avg_fn":  # integers: the weighted sum cast back
            getattr(torch.optim.swa_utils, name)(*args)(ta[1:], tb[1:], torch.tensor(3))
        getattr(rg.optim.swa_utils, name)(*args)(ra[:1], rb[:1], rg.tensor(3))
        if name == "get_ema_multi_avg_fn":
            getattr(rg.optim.swa_utils, name)(*args)(ra[1:], rb[1:], rg.tensor(3))
        for r, t in zip(ra, ta):
            close(r, t, name)
    with pytest.raises(ValueError, match="decay"):
        rg.optim.swa_utils.get_ema_avg_fn(1.5)


def test_one_element_tensors_convert_like_torch():
    """torchvision's RandomCutmix: `int(torch.clamp(r_x - r_w_half, min=0))` with
    r_x = torch.randint(W, (1,)); PyTorch converts any one-element tensor (NumPy 2 only 0-d
    arrays), and refuses more elements with its own error types."""
    for shape in ((1,), (1, 1), ()):
        for v in (2.7, -2.7, 3):
            a = np.full(shape, v)
            t, r = torch.tensor(a), rg.tensor(a)
            assert int(r) == int(t) and float(r) == float(t) and complex(r) == complex(t)
            assert bool(r) == bool(t)
        assert [5, 6, 7][rg.tensor(np.ones(shape, np.int64))] == 6
    W = 8
    r_x = rg.randint(W, (1,))
    x1 = int(rg.clamp(r_x - 2, min=0))
    assert 0 <= x1 < W
    for conv in (int, float, complex, bool, lambda v: [1, 2][v]):
        with pytest.raises(Exception) as want:
            conv(torch.ones(2, dtype=torch.long))
        with pytest.raises(want.type):
            conv(rg.ones(2, dtype=rg.int64))


def test_finetune_frozen_backbone_new_head():
    """The transfer-learning pattern: load weights, freeze every parameter, replace the head
    (model.fc = nn.Linear(...)), train only the head; frozen parameters get no gradient."""
    tm, rm = build(lambda z: z.ResNet(z.BasicBlock, [1, 1, 1, 1]))
    heads = []
    for T, m in ((torch, tm), (rg, rm)):
        for p in m.parameters():
            p.requires_grad = False
        T.manual_seed(0)
        m.fc = T.nn.Linear(m.fc.in_features, 3).double()
        heads.append(m.fc)
    heads[1].load_state_dict({k: v.numpy() for k, v in heads[0].state_dict().items()})
    rng = np.random.default_rng(4)
    topt = torch.optim.SGD(tm.fc.parameters(), lr=0.1, momentum=0.9)
    ropt = rg.optim.SGD(rm.fc.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        x, y = rng.standard_normal((2, 3, 32, 32)), rng.integers(0, 3, 2)
        for T, m, opt in ((torch, tm, topt), (rg, rm, ropt)):
            opt.zero_grad()
            T.nn.functional.cross_entropy(m(T.tensor(x)), T.tensor(y)).backward()
            opt.step()
        for (k, rp), (_, tp) in zip(rm.named_parameters(), tm.named_parameters()):
            assert (rp.grad is None) == (tp.grad is None), k
        compare_state(rm, tm, "fine-tuned")


def test_init_fans_as_torch():
    """nn.init's private fan helpers, which custom init code calls, and mode case."""
    for shape in ((8, 1, 3, 3), (16, 8, 1, 1), (10, 20), (4, 2, 5, 5)):
        t = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
        assert rg.nn.init._calculate_fan_in_and_fan_out(rg.empty(shape)) == t
        for mode in ("fan_in", "fan_out", "FAN_OUT"):
            assert rg.nn.init._calculate_correct_fan(rg.empty(shape), mode) == \
                torch.nn.init._calculate_correct_fan(torch.empty(shape), mode)
    w = rg.empty(64, 64, 3, 3)
    rg.nn.init.kaiming_normal_(w, mode="FAN_OUT", nonlinearity="relu")
    assert abs(float(w.std()) - math.sqrt(2.0 / (64 * 9))) < 0.005
    with pytest.raises(ValueError):
        rg.nn.init._calculate_fan_in_and_fan_out(rg.empty(6))
