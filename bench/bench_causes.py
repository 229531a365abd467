"""Failure-classifier benchmark: time to classify pathological log lines, against the targets.

    python bench/bench_causes.py [--rounds 5]

The supervisor classifies the last :data:`~vllm_deploy_wizard.launcher.causes.CLASSIFY_LINES` lines of
a process that exited (docs/supervision.md §5, linear time). A line can be huge — a tensor dump, a
progress bar without newlines — and a pattern that backtracks turns that into minutes. Each case is
classified through :func:`~vllm_deploy_wizard.launcher.causes.explain` (what the supervisor calls),
best of ``--rounds``, and prints PASS/FAIL against ≤ 100 ms:

1. one 2 MB line of log text (a vLLM log line repeated without newlines);
2. one 1 MB run of word characters (``aaaa…``: what made ``\\w*(?:Error|Exception)`` quadratic);
3. a 1 MB run of word characters after ``ValueError: `` (an exception line that long);
4. the same 1 MB run between 399 ordinary log lines (a full classification window).

The exit status is 0 even on FAIL (figures, not a test).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vllm_deploy_wizard.launcher.causes import CLASSIFY_LINES, explain  # noqa: E402 — after sys.path: the checkout itself

TARGET_S = 0.100
LOG_LINE = ("(EngineCore_DP0 pid=181) ERROR 01-29 22:59:30 [multiproc_executor.py:852] worker output with "
            "an error-looking word, CUDA, NCCL and a path /opt/vllm/model_executor/models/llama.py ")


def _cases() -> list[tuple[str, list[str]]]:
    two_mb = (LOG_LINE * (2_000_000 // len(LOG_LINE) + 1))[:2_000_000]
    word_run = "a" * 1_000_000
    ordinary = [f"INFO 11-30 10:00:{i % 60:02d} [engine.py:123] ordinary start-up line {i}"
                for i in range(CLASSIFY_LINES - 1)]
    return [
        ("a 2 MB line of log text", [two_mb]),
        ("a 1 MB run of word characters", [word_run]),
        ("ValueError: + a 1 MB word run", ["ValueError: " + word_run]),
        (f"a 1 MB word run among {CLASSIFY_LINES - 1} log lines", [*ordinary[:200], word_run, *ordinary[200:]]),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="classifications per case; the best counts (default 5)")
    args = ap.parse_args()
    for name, lines in _cases():
        best = float("inf")
        cause = None
        for _ in range(max(1, args.rounds)):
            t = time.perf_counter()
            cause = explain(lines, 1, ["vllm", "serve", "m"], {})
            best = min(best, time.perf_counter() - t)
        verdict = "PASS" if best <= TARGET_S else "FAIL"
        print(f"{name:<45} {best * 1000:8.1f} ms  (target ≤ {TARGET_S * 1000:.0f} ms)  {verdict}  "
              f"[{cause.kind}; quoted line {len(cause.line or '')} chars]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
