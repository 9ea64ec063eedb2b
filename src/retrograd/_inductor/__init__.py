"""`rg._inductor`: `torch._inductor.config`, whose settings scripts tune before
`torch.compile` (see `retrograd._config_module`)."""

from . import config

__all__ = ["config"]
