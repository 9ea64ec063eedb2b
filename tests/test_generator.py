"""rg.Generator (torch.Generator's interface) and `generator=` on every drawing function."""

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd.utils.data import DataLoader, random_split


def test_interface_like_torch():
    g, tg = rg.Generator(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed()  # torch's default seed
    assert g.manual_seed(7) is g and g.initial_seed() == tg.manual_seed(7).initial_seed()
    assert g.manual_seed(-1).initial_seed() == tg.manual_seed(-1).initial_seed()
    assert str(g.device) == str(tg.device) == "cpu"
    s = g.seed()
    assert g.initial_seed() == s
    for bad in (1.5, "3", True):
        with pytest.raises(TypeError):
            g.manual_seed(bad)
    with pytest.raises(RuntimeError):
        rg.Generator("cuda")


def _draws(gen):
    return [rg.rand(3, generator=gen), rg.randn(2, 2, generator=gen),
            rg.randint(0, 10, (4,), generator=gen), rg.randperm(6, generator=gen),
            rg.rand_like(rg.zeros(2), generator=gen), rg.randn_like(rg.zeros(2), generator=gen),
            rg.randint_like(rg.zeros(3), 5, generator=gen),
            rg.multinomial(rg.ones(5), 3, generator=gen),
            rg.normal(0.0, 1.0, (2,), generator=gen), rg.bernoulli(rg.full((4,), 0.5),
                                                                    generator=gen)]


def test_same_seed_same_draws_and_apart_from_the_global_stream():
    rg.manual_seed(0)
    a = _draws(rg.Generator().manual_seed(3))
    rg.manual_seed(1)  # the global stream differs: the generator's draws do not
    b = _draws(rg.Generator().manual_seed(3))
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and np.array_equal(x.data, y.data)
    # a generator seeded s draws what the global stream seeded s draws
    rg.manual_seed(11)
    glob = rg.randn(5)
    assert np.array_equal(rg.randn(5, generator=rg.Generator().manual_seed(11)).data, glob.data)


def test_state_round_trip_and_bad_state():
    g = rg.Generator().manual_seed(5)
    rg.rand(3, generator=g)
    st = g.get_state()
    assert st.dtype == np.uint8 and st.ndim == 1
    x = rg.rand(4, generator=g)
    g.set_state(st)
    assert np.array_equal(rg.rand(4, generator=g).data, x.data)
    with pytest.raises(TypeError):
        g.set_state(rg.zeros(3))
    with pytest.raises(ValueError):
        g.set_state(rg.tensor(np.zeros(3, np.uint8)))


def test_in_place_fills_and_data_utilities_take_it():
    t1, t2 = rg.zeros(4), rg.zeros(4)
    t1.normal_(generator=rg.Generator().manual_seed(2))
    t2.normal_(generator=rg.Generator().manual_seed(2))
    assert np.array_equal(t1.data, t2.data)
    splits = [random_split(range(10), [0.8, 0.2], generator=rg.Generator().manual_seed(42))
              for _ in range(2)]
    assert [len(s) for s in splits[0]] == [8, 2]
    assert list(splits[0][0].indices) == list(splits[1][0].indices)
    runs = [[b.tolist() for b in DataLoader(range(6), batch_size=3, shuffle=True,
                                            generator=rg.Generator().manual_seed(0))]
            for _ in range(2)]
    assert runs[0] == runs[1] and sorted(sum(runs[0], [])) == list(range(6))


def test_default_generator_is_the_global_stream():
    rg.default_generator.manual_seed(9)
    a = rg.rand(3)
    rg.manual_seed(9)
    assert np.array_equal(rg.rand(3).data, a.data)
    assert rg.default_generator.initial_seed() == 9


@pytest.mark.parametrize("fn", [lambda g: rg.rand(2, generator=g),
                                lambda g: rg.randperm(3, generator=g),
                                lambda g: rg.zeros(2).normal_(generator=g)])
def test_not_a_generator_is_refused(fn):
    with pytest.raises(TypeError, match="generator"):
        fn(3)


def test_default_generator_state_and_seed_follow_the_global_stream():
    rg.manual_seed(21)
    assert rg.default_generator.initial_seed() == rg.initial_seed() == 21
    st = rg.default_generator.get_state()
    a = rg.rand(3)
    rg.default_generator.set_state(st)
    np.testing.assert_array_equal(rg.rand(3).data, a.data)
    assert rg.initial_seed() == 21
