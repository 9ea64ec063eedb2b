"""The README's tour runs as written: every ```python block, in order, in one namespace."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)  # the tour writes a checkpoint
    namespace: dict = {}
    for k, block in enumerate(blocks):
        try:
            exec(compile(block, f"README block {k}", "exec"), namespace)
        except Exception as e:  # name the block that failed
            raise AssertionError(f"README python block {k} failed: {e!r}\n{block}") from e
