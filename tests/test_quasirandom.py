"""rg.quasirandom.SobolEngine against torch.quasirandom.SobolEngine: unscrambled points
equal torch's (the same direction numbers), draw/draw_base2/fast_forward/reset bookkeeping,
dtypes, `out=`, and torch's refusals. Scrambled points are checked for what scrambling
promises (in [0, 1), reproducible by seed, balanced), not torch's numbers."""

import numpy as np
import pytest
import torch

import retrograd as rg


@pytest.mark.parametrize("dim", [1, 2, 5, 40])
def test_unscrambled_points_equal_torch(dim):
    a, b = torch.quasirandom.SobolEngine(dim), rg.quasirandom.SobolEngine(dim)
    for n in (1, 3, 4, 8, 17):
        want, got = a.draw(n, dtype=torch.float64), b.draw(n, dtype=rg.float64)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert a.num_generated == b.num_generated
    a.fast_forward(5)
    b.fast_forward(5)
    np.testing.assert_array_equal(b.draw(4).numpy(), a.draw(4).numpy())
    a.reset()
    b.reset()
    np.testing.assert_array_equal(b.draw_base2(3).numpy(), a.draw_base2(3).numpy())
    assert b.draw(2).dtype == rg.float32 and a.draw(2).dtype == torch.float32


def test_out_argument_is_resized_and_filled():
    out_t, out_r = torch.zeros(1), rg.zeros(1)
    torch.quasirandom.SobolEngine(3).draw(4, out=out_t)
    rg.quasirandom.SobolEngine(3).draw(4, out=out_r)
    np.testing.assert_array_equal(out_r.numpy(), out_t.numpy())


def test_scrambled_points_are_seeded_and_balanced():
    e1 = rg.quasirandom.SobolEngine(3, scramble=True, seed=7)
    e2 = rg.quasirandom.SobolEngine(3, scramble=True, seed=7)
    p1, p2 = e1.draw_base2(6).numpy(), e2.draw_base2(6).numpy()
    np.testing.assert_array_equal(p1, p2)
    assert (p1 >= 0).all() and (p1 < 1).all()
    for k in range(3):  # 64 points: each eighth of each axis holds 8 of them
        np.testing.assert_array_equal(np.bincount((p1[:, k] * 8).astype(int), minlength=8),
                                      np.full(8, 8))
    assert not np.array_equal(p1, rg.quasirandom.SobolEngine(3).draw(64).numpy())
    assert repr(e1) == repr(torch.quasirandom.SobolEngine(3, scramble=True, seed=7))


def test_refusals_match_torch():
    for bad in (0, 21202):
        with pytest.raises(ValueError, match="dimensionality"):
            torch.quasirandom.SobolEngine(bad)
        with pytest.raises(ValueError, match="dimensionality"):
            rg.quasirandom.SobolEngine(bad)
    for lib in (torch, rg):
        e = lib.quasirandom.SobolEngine(2)
        e.draw(3)
        with pytest.raises(ValueError, match="power of 2"):
            e.draw_base2(2)
