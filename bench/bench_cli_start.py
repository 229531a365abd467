"""Benchmark: the fixed start-up cost of the headless commands, against ``python -c "import pydantic, yaml"``.

What it times: wall time of a fresh process from spawn to exit (``subprocess.run``, output
discarded), for ``vllm-wizard --help`` and for ``vllm-wizard plan --model M --hardware H`` (the
bundled catalog: import, load, plan, print), each paired with the reference command — both run
back to back, the order alternating, the ratio taken per pair, the median of the ratios compared
with the target: ``plan`` ≤ 1.5× the reference. ``--help`` is reported against the bare interpreter
(``python -c pass``), for information. Each line also gives the CPU time (user + system) of the child
processes, medians and their ratio: on a shared box the neighbours steal wall time, much less CPU
time. Prints PASS/FAIL (on the wall-time ratio); the exit status is 0 (figures, not a test).

Before timing, the package's bytecode is compiled (``bench/start_conditions.py``: an editable
install under ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module at every start), and
one warm-up run of each command fills the page cache and the validated-catalog cache
(``catalog/bundled_cache.py``), as any earlier start on the machine would.

Run: ``python bench/bench_cli_start.py [--pairs 9] [--model Qwen/Qwen3-32B] [--hardware h200]``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from start_conditions import precompile_package  # noqa: E402 — a sibling of this script


def wall_s(argv: list[str]) -> tuple[float, float]:
    """``(wall s, CPU s)`` from spawning ``argv`` until it exits (its output thrown away; a failure
    raises); CPU is the child's user + system time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def paired(ours: list[str], reference: list[str], pairs: int) -> tuple[float, float, float, str]:
    """``(median ours s, median reference s, median per-pair ratio, CPU line)``, order alternating."""
    wall_s(ours), wall_s(reference)  # warm the page cache (and the catalog cache)
    rows = []
    for i in range(pairs):
        if i % 2 == 0:
            a, b = wall_s(ours), wall_s(reference)
        else:
            b, a = wall_s(reference), wall_s(ours)
        rows.append((a, b))
    cpu_a, cpu_b = statistics.median(a[1] for a, _ in rows), statistics.median(b[1] for _, b in rows)
    cpu = (f"CPU ms: {cpu_a * 1e3:.0f} vs {cpu_b * 1e3:.0f}, ratio of medians {cpu_a / cpu_b:.2f}x, "
           f"per-pair median {statistics.median(a[1] / b[1] for a, b in rows):.2f}x")
    return (statistics.median(a[0] for a, _ in rows), statistics.median(b[0] for _, b in rows),
            statistics.median(a[0] / b[0] for a, b in rows), cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--model", default="Qwen/Qwen3-32B")
    ap.add_argument("--hardware", default="h200")
    args = ap.parse_args()
    precompile_package()
    py = sys.executable
    cli = [py, "-m", "vllm_deploy_wizard"]
    print(f"fresh processes, spawn → exit, wall ms, {args.pairs} pairs (order alternating), median of per-pair ratios")
    h, r, ratio, cpu = paired([*cli, "--help"], [py, "-c", "pass"], args.pairs)
    print(f"  vllm-wizard --help: {h * 1e3:.0f}   python -c pass: {r * 1e3:.0f}   ratio {ratio:.2f}x (information)")
    print(f"    {cpu}")
    p, r, ratio, cpu = paired([*cli, "plan", "--model", args.model, "--hardware", args.hardware],
                              [py, "-c", "import pydantic, yaml"], args.pairs)
    print(f"  vllm-wizard plan --model {args.model} --hardware {args.hardware}: {p * 1e3:.0f}   "
          f"python -c 'import pydantic, yaml': {r * 1e3:.0f}   ratio {ratio:.2f}x   "
          f"{'PASS' if ratio <= 1.5 else 'FAIL'} (target <= 1.5x)")
    print(f"    {cpu}")


if __name__ == "__main__":
    main()
