"""`rg._dynamo` and `rg._inductor.config`: the compiler knobs training scripts set run as
in PyTorch (known names read and set, with PyTorch's defaults; unknown ones raise)."""

import numpy as np
import pytest

import retrograd as rg

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor.config")  # (imports torch._dynamo too)

DYNAMO = ["suppress_errors", "cache_size_limit", "recompile_limit", "verbose",
          "capture_scalar_outputs", "optimize_ddp", "automatic_dynamic_shapes",
          "assume_static_by_default", "specialize_int", "error_on_recompile"]
INDUCTOR = ["coordinate_descent_tuning", "fx_graph_cache", "freezing", "max_autotune",
            "epilogue_fusion", "triton.unique_kernel_names", "triton.cudagraphs",
            "cpp.threads", "trace.enabled"]


def _get(cfg, key):
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


@pytest.mark.parametrize("key", DYNAMO)
def test_dynamo_defaults(key):
    assert _get(rg._dynamo.config, key) == _get(torch._dynamo.config, key)


@pytest.mark.parametrize("key", INDUCTOR)
def test_inductor_defaults(key):
    assert _get(rg._inductor.config, key) == _get(torch._inductor.config, key)


def test_set_patch_and_unknown_names():
    for L in (torch, rg):
        cfg = L._dynamo.config
        with cfg.patch(cache_size_limit=64):
            assert cfg.cache_size_limit == 64
        assert cfg.cache_size_limit == 8
        with pytest.raises(AttributeError, match="does not exist"):
            cfg.no_such_setting = 1
        with pytest.raises(AttributeError):
            _ = L._inductor.config.no_such_setting
        old = L._inductor.config.coordinate_descent_tuning
        L._inductor.config.coordinate_descent_tuning = True
        assert L._inductor.config.coordinate_descent_tuning is True
        L._inductor.config.coordinate_descent_tuning = old


def test_script_calls_run_and_change_nothing():
    x = rg.tensor(np.arange(6.0).reshape(2, 3))
    rg._dynamo.reset()
    rg._dynamo.mark_dynamic(x, 0)
    rg._dynamo.maybe_mark_dynamic(x, 1)
    with pytest.raises(IndexError):
        rg._dynamo.mark_dynamic(x, 2)

    @rg._dynamo.disable
    def f(t):
        return t * 2

    g = rg._dynamo.optimize("eager")(f)
    np.testing.assert_array_equal(g(x).numpy(), x.numpy() * 2)
