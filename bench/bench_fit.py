"""Benchmark: the fit model (catalog/fit.py, docs/fit.md) predicted vs what vLLM printed.

Two tables:

1. **Published vLLM logs** (``tests/catalog/fixtures/fit/cases.json``): for each case the figure
   a public thread printed (address in the table) and the prediction from the model's config.json
   and the KV memory the same log printed; where the log also printed the device memory, the full
   budget prediction (utilization × device − weights − activation − overhead → KV → blocks).
2. **Real vLLM CPU build on this machine**: the tiny architectures of
   ``tests/catalog/fit_tiny_models.py`` — prediction vs the ``KV cache size: N tokens`` line. The
   e2e test (``tests/catalog/test_fit_e2e.py``) records its measurements under the e2e cache
   (``fit-e2e-results.json``); this bench prints them (``--run`` starts vLLM itself instead).

Run: ``python bench/bench_fit.py [--run]``. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vllm_deploy_wizard.catalog.fit import GIB, Overhead, ServeShape, gpu_kv_bytes, kv_capacity
from vllm_deploy_wizard.catalog.model_facts import facts_from_config

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "catalog" / "fixtures" / "fit"


def published_rows(fixtures: Path = FIXTURES) -> list[dict]:
    """One row per (case, figure): ``id, figure, predicted, actual, error`` (relative), ``address``."""
    data = json.loads((fixtures / "cases.json").read_text())
    rows = []
    for case in data["cases"]:
        config = json.loads((fixtures / case["config"]).read_text())
        facts = facts_from_config(config, model=case["config"].removesuffix(".config.json"), source=case["config"])
        shape = ServeShape(**case["shape"])
        cap = kv_capacity(facts, shape, int(case["kv_gib"] * GIB))
        predicted = {"tokens": cap.tokens, "num_blocks": cap.num_blocks,
                     "longest_max_model_len": cap.longest_model_len,
                     "needed_gib": cap.blocks_per_request * cap.bytes_per_block / GIB}
        for figure, actual in case["expect"].items():
            rows.append(_row(case, figure, predicted[figure], actual, "from logged KV memory"))
        dev = case.get("device")
        if dev:
            full = ServeShape(**{**case["shape"], "device_bytes": int(dev["total_gib"] * GIB),
                                 "gpu_memory_utilization": dev["gpu_memory_utilization"],
                                 "max_num_batched_tokens": dev["max_num_batched_tokens"]})
            overhead = Overhead(non_torch_bytes=int(0.35 * GIB), cuda_graph_bytes=int(dev["cuda_graph_gib"] * GIB),
                                nccl_bytes=0)
            kv = gpu_kv_bytes(facts, full, overhead)["kv"]
            cap2 = kv_capacity(facts, full, kv)
            for figure, actual in case["expect"].items():
                if figure == "num_blocks":
                    rows.append(_row(case, figure, cap2.num_blocks, actual, "from device memory"))
    return rows


def _row(case: dict, figure: str, predicted: float, actual: float, how: str) -> dict:
    return {"id": case["id"], "figure": figure, "how": how, "predicted": predicted, "actual": actual,
            "error": (predicted - actual) / actual, "address": case["address"]}


def e2e_rows(run: bool = False) -> list[dict]:
    """Rows of the real-vLLM cases: recorded by the e2e test, or measured now with ``run``."""
    sys.path.insert(0, str(ROOT / "tests" / "catalog"))
    sys.path.insert(0, str(ROOT / "tests" / "launcher"))
    from e2e_env import cache_root

    path = cache_root() / "fit-e2e-results.json"
    if run:
        from test_fit_e2e import measure_all

        measure_all()
    if not path.exists():
        return []
    return json.loads(path.read_text())


def main() -> None:
    """Print both tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", action="store_true", help="start the real vLLM CPU build for each tiny model now")
    args = ap.parse_args()
    print(f"{'case':34} {'figure':22} {'how':22} {'predicted':>12} {'vLLM':>12} {'error':>8}  address")
    for r in published_rows():
        p = f"{r['predicted']:.2f}" if isinstance(r["predicted"], float) else f"{r['predicted']:,}"
        a = f"{r['actual']:.2f}" if isinstance(r["actual"], float) else f"{r['actual']:,}"
        print(f"{r['id']:34} {r['figure']:22} {r['how']:22} {p:>12} {a:>12} {r['error']:+8.2%}  {r['address']}")
    rows = e2e_rows(args.run)
    print()
    if not rows:
        print("real vLLM: no measurements recorded (run `pytest -m e2e tests/catalog/test_fit_e2e.py` or --run)")
        return
    print(f"{'tiny model (real vLLM 0.32 CPU)':34} {'max_model_len':>14} {'predicted':>12} {'vLLM':>12} {'error':>8}")
    for r in rows:
        err = (r["predicted"] - r["actual"]) / r["actual"] if r.get("actual") else float("nan")
        print(f"{r['name']:34} {r['max_model_len']:>14} {r['predicted']:>12,} {r.get('actual') or 0:>12,} {err:+8.2%}")


if __name__ == "__main__":
    main()
