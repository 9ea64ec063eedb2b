"""Wrap a benchmark's raw --json output with the date, the machine and the command,
as the site's benchmarks page reads it.

    python docs/benchmarks/save_run.py engine /tmp/raw.json "benchmarks/bench_engine.py --quick ..."
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy
    return (f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, "
            f"Python {platform.python_version()}, NumPy {numpy.__version__}")


def main() -> None:
    name, raw, command = sys.argv[1:4]
    out = Path(__file__).parent / f"{name}.json"
    record = {"name": name, "date": datetime.date.today().isoformat(), "machine": machine(),
              "command": command, "raw": json.loads(Path(raw).read_text())}
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
