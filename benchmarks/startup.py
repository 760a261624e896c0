"""Start-up cost: `orchestrate --version` and `orchestrate status` against `python -c pass`, median of 15.

Run by hand: .venv/bin/python benchmarks/startup.py   (target: ratio < 3; heavy imports are lazy)
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compiled

BIN = Path(sys.executable).parent


def median_seconds(cmd: list[str], cwd: str | None = None, runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    compiled()
    base = median_seconds([sys.executable, "-c", "pass"])
    version = median_seconds([str(BIN / "orchestrate"), "--version"])
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([str(BIN / "orchestrate"), "demo", f"{tmp}/demo", "--quiet"], stdout=subprocess.DEVNULL)
        status = median_seconds([str(BIN / "orchestrate"), "status"], cwd=f"{tmp}/demo")
    print(f"python -c pass          {base * 1000:7.1f} ms")
    for name, t in (("orchestrate --version", version), ("orchestrate status", status)):
        print(f"{name:<23} {t * 1000:7.1f} ms   ratio {t / base:4.2f}  (target < 3: {'PASS' if t / base < 3 else 'MISS'})")


if __name__ == "__main__":
    main()
