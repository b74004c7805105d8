"""How long loading the built-in benchmarks takes, against reading the same file with json alone.

Baseline: gzip + json.loads of every row of the shipped file (the least any loader must do). Measured in
the same run, in a fresh interpreter per measurement so that the cache of corecode.benchmarks is cold.

    python benchmarks/benchmarks_loading.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys

REPEATS = 5

BASELINE = """
import gzip, json, time
from corecode.benchmarks import BENCHMARKS
path = BENCHMARKS[{name!r}].builtin()
t = time.perf_counter()
with gzip.open(path, "rt") as fh:
    text = fh.read()
rows = json.loads(text) if path.name.endswith(".json.gz") else [json.loads(l) for l in text.splitlines() if l]
print(time.perf_counter() - t)
"""

CORECODE = """
import time
from corecode.benchmarks import load_benchmark
t = time.perf_counter()
load_benchmark({name!r}, "all")
cold = time.perf_counter() - t
t = time.perf_counter()
load_benchmark({name!r}, "all")
print(cold, time.perf_counter() - t)
"""


def measure(code: str) -> list[float]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [float(x) for x in out.stdout.split()]


def main() -> None:
    print(f"{'benchmark':16} {'json only':>10} {'corecode cold':>14} {'ratio':>6} {'cached':>9}  (median of {REPEATS})")
    for name in ("humaneval", "mbpp", "mbpp-sanitized", "apps-150"):
        base = statistics.median(measure(BASELINE.format(name=name))[0] for _ in range(REPEATS))
        runs = [measure(CORECODE.format(name=name)) for _ in range(REPEATS)]
        cold = statistics.median(r[0] for r in runs)
        warm = statistics.median(r[1] for r in runs)
        print(f"{name:16} {base * 1e3:8.1f}ms {cold * 1e3:12.1f}ms {cold / base:6.1f} {warm * 1e3:7.2f}ms")


if __name__ == "__main__":
    main()
