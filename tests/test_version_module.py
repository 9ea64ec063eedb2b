"""`rg.version`, as `torch.version`: the same names; the release matches the package's."""

import tomllib
from pathlib import Path

import torch

import retrograd as rg


def test_version_module_has_torchs_names():
    names = {n for n in dir(torch.version) if not n.startswith("_") and n != "Optional"}
    assert names <= set(dir(rg.version)), names - set(dir(rg.version))
    assert rg.version.cuda is None and rg.version.hip is None  # no toolkit built in


def test_version_is_the_packages():
    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert rg.version.__version__ == rg.__version__ == meta["project"]["version"]
