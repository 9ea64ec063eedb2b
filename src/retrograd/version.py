"""`rg.version`, as `torch.version`: the release, and None for the GPU toolkits it was
built against (retrograd is built against none; `rg.cuda` asks CuPy at run time)."""

__version__ = "0.1.0"
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "unknown"
