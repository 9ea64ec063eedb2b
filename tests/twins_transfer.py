"""Torch twin of `to_device` (a copy to the device named; here the host)."""

TWINS = {
    "to_device": lambda x, device, src: x.to(device),
}
