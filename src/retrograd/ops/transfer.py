"""Moving a value between devices, as an op: `t.to("cuda")` of a tensor that requires
grad is differentiable, its gradient moved back to where the input lives.

`device` and `src` are the target and source devices ("cpu", "cuda:0"); the rule of
each direction is the other direction, so it serves any order of derivative.
"""

from __future__ import annotations

from .. import devices
from ..primitive import defop


def _to_device(x, *, device, src):
    return devices.to(x, device)


to_device = defop(
    "to_device", _to_device,
    (lambda m, g, out, x, device, src: m.to_device(g, device=src, src=device),),
    (lambda m, t, out, x, device, src: m.to_device(t, device=device, src=src),),
    reads=())
