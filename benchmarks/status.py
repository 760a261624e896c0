"""`orchestrate status` on finished campaigns of 1,000 and 10,000 nodes (checkpoint plus the journal after it).

Run by hand: .venv/bin/python benchmarks/status.py [--sizes 1000,10000]
Baselines, measured in the same run: `orchestrate --version` (the process and import floor) and reading
and JSON-parsing every journal line (what status would cost if it replayed the whole journal).
Target: 10,000 nodes < 1 s.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from resume import setup  # noqa: E402  (the same synthetic campaigns as the resume benchmark)

from bytecode import compiled

BIN = Path(sys.executable).parent / "orchestrate"


def median(cmd: list[str], cwd: Path, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        assert done.returncode == 0, done.stderr
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000")
    a = ap.parse_args()
    compiled()
    print(f"{'nodes':>7} {'--version':>10} {'parse all':>10} {'status':>8} {'/version':>9} {'/parse':>7}  target")
    for n in (int(x) for x in a.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
            layout, parse = setup(root, n)
            floor = median([str(BIN), "--version"], root)
            took = median([str(BIN), "status", "--topic", "bench", "--json"], root)
            shown = json.loads(subprocess.run([str(BIN), "status", "--topic", "bench", "--json"], cwd=root,
                                              capture_output=True, text=True, check=True).stdout)
            assert len(shown["nodes"]) == n
            verdict = f"< 1s: {'PASS' if took < 1 else 'MISS'}" if n == 10000 else ""
            print(f"{n:>7} {floor:>9.3f}s {parse:>9.2f}s {took:>7.3f}s {took / floor:>9.1f} {took / parse:>7.2f}  {verdict}")


if __name__ == "__main__":
    main()
