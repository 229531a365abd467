"""Benchmark: catalog loading and plan synthesis against the speed targets (prints figures, asserts nothing).

1. Load the recipes snapshot and the bundled catalog (seeds + every recipe in facts-only
   form + kv_store) with :func:`load_catalog`, against a bare parse of the same files
   (``yaml.load(..., CSafeLoader)`` for YAML, ``json.loads`` for JSON), measured in the same run
   (best of N, alternating, process CPU time — the box is shared, so wall time mostly measures the
   neighbours). Target: ratio ≤ 1.5, for the two together and for the bundled catalog alone.
   The loader pauses cyclic GC during a load (see ``catalog/loader.py``); the bench also prints the
   bare parse with GC paused, so the validation overhead alone is visible. What is validated is
   said on each line: a ``--recipes`` snapshot is validated whole when loaded; the bundled
   catalog's recipes are validated on first read (``catalog/loader.py`` ``LazyRecipes``), so the
   uncached bundled figures are printed twice — the load alone, and the load plus reading
   (validating) every recipe, each against the same bare parse. What a start normally gets is the
   validated catalog from the user's cache (``catalog/bundled_cache.py``: taxonomy, strategies and
   every recipe already validated): printed as a third line.
2. Per-plan synthesis: ``synthesize`` (and ``synthesize`` + ``plan_to_json``) over every golden
   selection. Target: < 2 ms per plan.

Run: ``python bench/bench_catalog.py [--shared ../shared] [--repeat 7]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from pathlib import Path

import yaml

from vllm_deploy_wizard.catalog import load_catalog, plan_to_json, synthesize
from vllm_deploy_wizard.catalog.loader import DATA_DIR, _load_bundled_uncached
from vllm_deploy_wizard.catalog.selection import selection_from_data


def catalog_files(snapshot: Path) -> list[Path]:
    files = [snapshot / "taxonomy.yaml", *sorted(snapshot.glob("strategies/*.yaml")),
             *sorted(snapshot.glob("kv_store/*.yaml")), *sorted(snapshot.glob("models/*/*.yaml"))]
    return files + bundled_files()


def bundled_files() -> list[Path]:
    """The bundled catalog's data files (what ``load_catalog()`` reads)."""
    return [DATA_DIR / "taxonomy.json", DATA_DIR / "strategies.json", *sorted(DATA_DIR.glob("kv_store/*.yaml")),
            DATA_DIR / "recipes.json", *sorted(DATA_DIR.glob("recipes/*/*.yaml"))]


#: CPU time of this process: on a shared box other processes steal wall time, not CPU time.
clock = time.process_time


def bare_yaml(files: list[Path], no_gc: bool = False) -> float:
    if no_gc:
        gc.disable()
    try:
        t = clock()
        for f in files:
            if f.suffix == ".json":
                json.loads(f.read_bytes())
            else:
                yaml.load(f.read_bytes(), Loader=yaml.CSafeLoader)
        return clock() - t
    finally:
        gc.enable()


def ours_bundled() -> float:
    """The bundled load without the validated-catalog cache (recipes validated on first read)."""
    t = clock()
    _load_bundled_uncached(DATA_DIR)
    return clock() - t


def ours_bundled_validated() -> float:
    """The uncached bundled load plus reading every recipe (each one validated on that first read)."""
    t = clock()
    cat = _load_bundled_uncached(DATA_DIR)
    for hf_id in list(cat.recipes):
        cat.recipes[hf_id]
    return clock() - t


def ours_bundled_cached(read_all: bool) -> float:
    """``load_catalog()`` as a start gets it: the validated catalog from the cache (every recipe read
    when ``read_all``; a start reads one or two)."""
    t = clock()
    cat = load_catalog()
    if read_all:
        for hf_id in list(cat.recipes):
            cat.recipes[hf_id]
    return clock() - t


def verdict(ratio: float, target: float) -> str:
    return f"{'PASS' if ratio <= target else 'FAIL'} (target <= {target}x)"


def ours(snapshot: Path) -> float:
    t = clock()
    load_catalog(snapshot)
    load_catalog()
    return clock() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    snapshot = args.shared / "recipes-snapshot"
    files = catalog_files(snapshot)

    bare_t, bare_nogc_t, ours_t = [], [], []
    for _ in range(args.repeat):  # alternate so drift on a shared box hits all alike
        bare_t.append(bare_yaml(files))
        bare_nogc_t.append(bare_yaml(files, no_gc=True))
        ours_t.append(ours(snapshot))
    b, bn, o = min(bare_t), min(bare_nogc_t), min(ours_t)
    print(f"files: {len(files)} ({sum(f.stat().st_size for f in files) / 1e6:.2f} MB)")
    print("CPU time (time.process_time), best of", args.repeat)
    print(f"bare yaml.load(CSafeLoader): best {b * 1e3:.1f} ms  median {statistics.median(bare_t) * 1e3:.1f} ms")
    print(f"load_catalog(snapshot) + load_catalog() (snapshot validated whole; bundled from the "
          f"validated-catalog cache): best {o * 1e3:.1f} ms  median {statistics.median(ours_t) * 1e3:.1f} ms")
    print(f"bare yaml.load, GC paused like the loader: best {bn * 1e3:.1f} ms")
    print(f"ratio (best/best) vs bare yaml.load: {o / b:.2f}x   {verdict(o / b, 1.5)}")
    print(f"ratio vs bare with GC paused too (validation overhead alone): {o / bn:.2f}x")

    bfiles = bundled_files()
    bare_b, ours_b, ours_v, ours_c, ours_ca = [], [], [], [], []
    load_catalog()  # writes the cache entry when there is none
    for _ in range(args.repeat * 3):
        bare_b.append(bare_yaml(bfiles))
        ours_b.append(ours_bundled())
        ours_v.append(ours_bundled_validated())
        ours_c.append(ours_bundled_cached(read_all=False))
        ours_ca.append(ours_bundled_cached(read_all=True))
    bb, ob, ov, oc, oca = min(bare_b), min(ours_b), min(ours_v), min(ours_c), min(ours_ca)
    n = len(load_catalog().recipes)
    print(f"bundled catalog ({len(bfiles)} files, {sum(f.stat().st_size for f in bfiles) / 1e6:.2f} MB, {n} recipes):")
    print(f"  bare parse (json.loads / CSafeLoader): best {bb * 1e3:.1f} ms")
    print(f"  uncached load, recipes not yet validated: best {ob * 1e3:.1f} ms   ratio {ob / bb:.2f}x   "
          f"{verdict(ob / bb, 1.5)}")
    print(f"  uncached load + every recipe read (validated): best {ov * 1e3:.1f} ms   ratio {ov / bb:.2f}x   "
          f"{verdict(ov / bb, 1.5)}")
    print(f"  load_catalog() from the validated-catalog cache: best {oc * 1e3:.1f} ms   "
          f"ratio {oc / bb:.2f}x   {verdict(oc / bb, 1.5)}")
    print(f"  load_catalog() from the validated-catalog cache + every recipe read: best {oca * 1e3:.1f} ms   "
          f"ratio {oca / bb:.2f}x   {verdict(oca / bb, 1.5)}")

    cat = load_catalog(snapshot)
    cases = [json.loads(line) for line in (args.shared / "golden" / "cases.jsonl").open()]
    sels = [selection_from_data(c["selection"]) for c in cases]
    per, per_json = [], []
    for sel in sels:
        t0 = time.perf_counter()
        plan = synthesize(cat, sel)
        t1 = time.perf_counter()
        plan_to_json(plan)
        t2 = time.perf_counter()
        per.append(t1 - t0)
        per_json.append(t2 - t0)
    per.sort()
    per_json.sort()

    def q(xs, p):
        return xs[min(len(xs) - 1, int(p * len(xs)))] * 1e3

    print(f"synthesize over {len(sels)} golden selections: mean {statistics.mean(per) * 1e3:.3f} ms  "
          f"p50 {q(per, 0.5):.3f} ms  p95 {q(per, 0.95):.3f} ms  max {per[-1] * 1e3:.3f} ms   "
          f"{'PASS' if q(per, 0.95) < 2 else 'FAIL'} (target p95 < 2 ms)")
    print(f"synthesize + plan_to_json: mean {statistics.mean(per_json) * 1e3:.3f} ms  p95 {q(per_json, 0.95):.3f} ms")


if __name__ == "__main__":
    main()
