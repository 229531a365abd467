"""Benchmark: the fixed start-up cost of the headless commands, against ``python -c "import pydantic, yaml"``.

What it times: wall time of a fresh process from spawn to exit (``subprocess.run``, output
discarded), for ``vllm-wizard --help`` and for ``vllm-wizard plan --model M --hardware H`` (the
bundled catalog: import, load, plan, print), each paired with the reference command — both run
back to back, the order alternating, the ratio taken per pair, the median of the ratios compared
with the target: ``plan`` ≤ 1.5× the reference (the catalog's pydantic models are the floor of any
``plan``). ``--help`` is reported against the bare interpreter (``python -c pass``), for
information. Prints PASS/FAIL; the exit status is 0 (figures, not a test).

Run: ``python bench/bench_cli_start.py [--pairs 9] [--model Qwen/Qwen3-32B] [--hardware h200]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def wall_s(argv: list[str]) -> float:
    """Seconds from spawning ``argv`` until it exits (its output thrown away; a failure raises)."""
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def paired(ours: list[str], reference: list[str], pairs: int) -> tuple[float, float, float]:
    """``(median ours s, median reference s, median per-pair ratio)``, order alternating."""
    wall_s(ours), wall_s(reference)  # warm the page cache
    rows = []
    for i in range(pairs):
        if i % 2 == 0:
            a, b = wall_s(ours), wall_s(reference)
        else:
            b, a = wall_s(reference), wall_s(ours)
        rows.append((a, b))
    return (statistics.median(a for a, _ in rows), statistics.median(b for _, b in rows),
            statistics.median(a / b for a, b in rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--model", default="Qwen/Qwen3-32B")
    ap.add_argument("--hardware", default="h200")
    args = ap.parse_args()
    py = sys.executable
    cli = [py, "-m", "vllm_deploy_wizard"]
    print(f"fresh processes, spawn → exit, wall ms, {args.pairs} pairs (order alternating), median of per-pair ratios")
    h, r, ratio = paired([*cli, "--help"], [py, "-c", "pass"], args.pairs)
    print(f"  vllm-wizard --help: {h * 1e3:.0f}   python -c pass: {r * 1e3:.0f}   ratio {ratio:.2f}x (information)")
    p, r, ratio = paired([*cli, "plan", "--model", args.model, "--hardware", args.hardware],
                         [py, "-c", "import pydantic, yaml"], args.pairs)
    print(f"  vllm-wizard plan --model {args.model} --hardware {args.hardware}: {p * 1e3:.0f}   "
          f"python -c 'import pydantic, yaml': {r * 1e3:.0f}   ratio {ratio:.2f}x   "
          f"{'PASS' if ratio <= 1.5 else 'FAIL'} (target <= 1.5x)")


if __name__ == "__main__":
    main()
