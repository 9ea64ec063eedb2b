"""`rg._dynamo.config`: `torch._dynamo.config`'s common settings, with its defaults.
Nothing reads them (see `retrograd._config_module`)."""

import sys

from .._config_module import make_settings_module

make_settings_module(sys.modules[__name__], "retrograd._dynamo.config", {
    "suppress_errors": False, "cache_size_limit": 8, "recompile_limit": 8,
    "accumulated_cache_size_limit": 256, "accumulated_recompile_limit": 256,
    "verbose": False, "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False, "optimize_ddp": True,
    "automatic_dynamic_shapes": True, "assume_static_by_default": True,
    "inline_inbuilt_nn_modules": True, "force_parameter_static_shapes": True,
    "guard_nn_modules": True, "specialize_int": False, "dynamic_shapes": True,
    "allow_unspec_int_on_nn_module": False, "error_on_recompile": False,
    "replay_record_enabled": False, "log_compilation_metrics": True,
    "compiled_autograd": False, "skip_nnmodule_hook_guards": True,
    "raise_on_ctx_manager_usage": True,
})
