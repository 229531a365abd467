"""Run the non-e2e test suite several times while busy-loop processes load every core.

Timing-sensitive tests (pollers, supervisors, the TUI pilot) must hold under a loaded machine.
This script shows it: it starts ``--busy`` processes that spin forever, runs
``python -m pytest -q -m "not e2e and not bench"`` ``--runs`` times in a row, and prints one line
per run (passed / failed / errors, seconds) and a total.  The busy loops are killed on exit,
Ctrl-C included.

Usage::

    python tools/suite_under_load.py                # 5 runs, 2 busy loops
    python tools/suite_under_load.py --runs 3 --busy 4 --log-dir /tmp/loaded -- tests/launcher

Exit status: 0 when every run passed, 1 when any run had a failure or error.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

_SPIN = "while True:\n    pass\n"
#: pytest's last line: ``1111 passed, 9 deselected in 466.63s (0:07:46)`` (with -q no ``=`` rule around it)
_SUMMARY = re.compile(r"^=*\s*(?P<body>\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed)\b.*?)"
                      r" in (?P<secs>[\d.]+)s", re.MULTILINE)


def _count(body: str, word: str) -> int:
    match = re.search(rf"(\d+) {word}", body)
    return int(match.group(1)) if match else 0


def main(argv: list[str] | None = None) -> int:
    """Run the suite ``--runs`` times under ``--busy`` spinning processes.

    Returns the exit status (0 all green, 1 any failure).  Raises nothing; a pytest run
    that prints no summary line counts as a failed run.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="suite runs in a row (default 5)")
    parser.add_argument("--busy", type=int, default=2, help="busy-loop processes (default 2)")
    parser.add_argument("--log-dir", type=Path, default=None,
                        help="write each run's full pytest output here as run-N.log")
    parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (after --)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.busy < 0:
        parser.error("--runs must be at least 1 and --busy at least 0")
    if args.log_dir:
        args.log_dir.mkdir(parents=True, exist_ok=True)

    spinners = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(args.busy)]
    print(f"{args.busy} busy loops (pids {' '.join(str(p.pid) for p in spinners) or '-'}) "
          f"on {os.cpu_count()} cores", flush=True)
    failed_runs = 0
    started = time.monotonic()
    try:
        for run in range(1, args.runs + 1):
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-m", "not e2e and not bench", *args.pytest_args]
            t0 = time.monotonic()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            secs = time.monotonic() - t0
            out = proc.stdout + proc.stderr
            if args.log_dir:
                (args.log_dir / f"run-{run}.log").write_text(out)
            summaries = _SUMMARY.findall(out)
            body = summaries[-1][0] if summaries else "no pytest summary"
            bad = _count(body, "failed") + _count(body, "errors?") + (0 if summaries else 1)
            bad += 0 if proc.returncode == 0 else (0 if bad else 1)
            failed_runs += bool(bad)
            print(f"run {run}/{args.runs}: {body} ({secs:.0f} s, exit {proc.returncode})", flush=True)
            for line in out.splitlines():
                if line.startswith(("FAILED ", "ERROR ")):
                    print(f"    {line}", flush=True)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    total = time.monotonic() - started
    print(f"{args.runs - failed_runs}/{args.runs} runs green in {total / 60:.1f} min "
          f"under {args.busy} busy loops", flush=True)
    return 1 if failed_runs else 0


if __name__ == "__main__":
    raise SystemExit(main())
