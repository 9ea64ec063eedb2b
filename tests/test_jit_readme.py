"""Every ```python block of README.md runs twice in a row (in order, in one namespace): a
recipe that works once but not on its second call (a jitted step whose outputs lose
requires_grad, state that goes stale) fails here."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 5


def test_every_readme_block_runs_twice_in_a_row(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the tour writes a checkpoint
    namespace: dict = {}
    for k, block in enumerate(BLOCKS):
        code = compile(block, f"README block {k}", "exec")
        for attempt in (1, 2):
            try:
                exec(code, namespace)
            except Exception as e:  # name the block and the run that failed
                pytest.fail(f"README python block {k}, run {attempt}: {e!r}\n{block}")
