"""The glibc buffer-keeping at import: on where it can be, off when asked, never an error."""

import os
import subprocess
import sys

from retrograd import _allocator


def _active_in_child(env_value):
    env = dict(os.environ)
    env.pop("RETROGRAD_KEEP_MEMORY", None)
    if env_value is not None:
        env["RETROGRAD_KEEP_MEMORY"] = env_value
    code = "import retrograd._allocator as a; print(a.ACTIVE)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


def test_opt_out_leaves_malloc_alone():
    assert _active_in_child("0") == "False"


def test_on_glibc_linux_the_thresholds_are_set(monkeypatch):
    import platform
    expected = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert _active_in_child(None) == str(expected)


def test_elsewhere_it_is_a_no_op(monkeypatch):
    monkeypatch.setattr(_allocator.platform, "libc_ver", lambda: ("", ""))
    assert _allocator.keep_freed_memory() is False
