"""Benchmark: ``options(catalog, selection)`` latency over many selections (target p95 ≤ 16 ms).

The TUI recomputes every axis on each keystroke, so this walks a broad set of selections — every
snapshot recipe × several hardware profiles × the strategies each offers × KV options — and prints
p50/p95/p99/max in milliseconds. Run: ``python bench/bench_constraints.py [RECIPES_DIR]``
(default ``../shared/recipes-snapshot``, else the bundled catalog).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from vllm_deploy_wizard.catalog.constraints import options
from vllm_deploy_wizard.catalog.loader import load_catalog

HARDWARE = ("h200", "h100", "b200", "gb200", "mi300x", "mi355x", "rtx_5090", "xeon6", "trillium")
KV = ("none", "simple", "offloading_cpu", "lmcache", "kv_store_distributed_mooncake")


def selections(cat):
    """Yield selection dicts covering recipes × hardware × strategies × KV options."""
    for hf_id, recipe in cat.recipes.items():
        for hw in HARDWARE:
            if hw not in cat.taxonomy.hardware_profiles:
                continue
            for sid in (recipe.compatible_strategies or [None])[:4]:
                nodes = 2 if sid and sid.startswith("multi_node") else 1
                for kv in KV:
                    yield {"model": hf_id, "hardware": hw, "strategy": sid, "nodes": nodes, "kv_offload": kv}


def main() -> int:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "recipes-snapshot"
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else (default if default.is_dir() else None)
    cat = load_catalog(src)
    sels = list(selections(cat))
    for sel in sels[:50]:  # warm-up
        options(cat, sel)
    times = []
    for sel in sels:
        t0 = time.perf_counter()
        options(cat, sel)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    q = statistics.quantiles(times, n=100)
    print(f"catalog: {cat.source} ({len(cat.recipes)} recipes)")
    print(f"options() over {len(times)} selections: p50 {q[49]:.3f} ms  p95 {q[94]:.3f} ms  "
          f"p99 {q[98]:.3f} ms  max {times[-1]:.3f} ms  (target p95 <= 16 ms)")
    return 0 if q[94] <= 16 else 1


if __name__ == "__main__":
    raise SystemExit(main())
