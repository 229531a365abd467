"""Benchmark: full in-process ``detect()`` on this machine (target ≤ 150 ms).

Prints the import time of ``vllm_deploy_wizard.detect``, the first (cold) detect, and the median/max of
repeated detects, plus the replay time of every shared fixture. Run: ``python bench/bench_detect.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

TARGET_MS = 150.0


def main(repeats: int = 20) -> int:
    t0 = time.perf_counter()
    from vllm_deploy_wizard.detect import detect
    from vllm_deploy_wizard.detect.fixture import FixtureFacts, scenario_ids

    import_ms = (time.perf_counter() - t0) * 1000
    t1 = time.perf_counter()
    detect()
    cold_ms = (time.perf_counter() - t1) * 1000
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        detect()
        runs.append((time.perf_counter() - t) * 1000)
    print(f"import vllm_deploy_wizard.detect: {import_ms:.1f} ms")
    print(f"detect() cold: {cold_ms:.1f} ms; warm median {statistics.median(runs):.1f} ms, "
          f"max {max(runs):.1f} ms over {repeats} runs (target <= {TARGET_MS:.0f} ms)")
    fixtures = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "detect"
    if fixtures.is_dir():
        t = time.perf_counter()
        n = 0
        for path in sorted(fixtures.glob("*.yaml")):
            for sc in scenario_ids(path) or [None]:
                detect(FixtureFacts.load(path, sc))
                n += 1
        print(f"replay of {n} fixtures/scenarios: {(time.perf_counter() - t) * 1000 / n:.1f} ms each")
    return 0 if cold_ms <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
