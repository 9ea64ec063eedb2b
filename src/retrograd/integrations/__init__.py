"""Glue that lets third-party libraries work on retrograd Tensors. Each module here
imports its library only once the user has imported it: `import retrograd` never needs
them.

    einops.py         einops' functions (rearrange, reduce, repeat, einsum, pack, ...)
    einops_layers.py  einops' layers as `rg.nn` modules: Rearrange, Reduce, EinMix
"""
