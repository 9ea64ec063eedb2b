"""`rg._inductor.config`: `torch._inductor.config`'s common settings, with its defaults.
Nothing reads them (see `retrograd._config_module`)."""

import sys

from .._config_module import make_settings_module

make_settings_module(sys.modules[__name__], "retrograd._inductor.config", {
    "coordinate_descent_tuning": False, "coordinate_descent_check_all_directions": False,
    "fx_graph_cache": True, "fx_graph_remote_cache": None, "autotune_local_cache": True,
    "freezing": False, "max_autotune": False, "max_autotune_gemm": False,
    "max_autotune_pointwise": False, "epilogue_fusion": True, "aggressive_fusion": False,
    "fallback_random": False, "split_reductions": True, "benchmark_kernel": False,
    "compile_threads": 2, "debug": False, "allow_buffer_reuse": True,
    "reorder_for_compute_comm_overlap": False, "force_fuse_int_mm_with_mul": False,
    "use_mixed_mm": True, "size_asserts": True, "nan_asserts": False,
    "layout_optimization": True, "keep_output_stride": True, "shape_padding": True,
    "comprehensive_padding": True, "emulate_precision_casts": False,
    "unroll_reductions_threshold": 8, "realize_opcount_threshold": None,
    "cpp_wrapper": False, "joint_graph_constant_folding": True, "pattern_matcher": True,
    "implicit_fallbacks": True,
    "triton.unique_kernel_names": True, "triton.cudagraphs": False,
    "triton.cudagraph_trees": True, "triton.max_tiles": None,
    "triton.autotune_pointwise": True, "triton.store_cubin": False,
    "triton.descriptive_names": "original_aten", "triton.persistent_reductions": True,
    "triton.multi_kernel": 0, "triton.use_block_ptr": False,
    "cpp.enable_kernel_profile": False, "cpp.threads": -1, "cpp.simdlen": None,
    "cpp.dynamic_threads": False, "cpp.weight_prepack": True,
    "cpp.enable_unsafe_math_opt_flag": False, "cpp.enable_floating_point_contract_flag": "off",
    "trace.enabled": False, "trace.debug_log": False, "trace.graph_diagram": False,
})
