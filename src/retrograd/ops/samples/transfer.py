"""Samples for `to_device` (between the host and itself here: the generated tests run on
the CPU; tests/test_device.py moves them to a device)."""

from __future__ import annotations

SAMPLES = {
    "to_device": lambda rng: [([rng.uniform(-2, 2, s)], {"device": "cpu", "src": "cpu"})
                              for s in [(), (3,), (2, 3)]],
}
