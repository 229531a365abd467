"""The fit model against the real vLLM 0.32 CPU build: five tiny architectures this test makes
(``fit_tiny_models.py``), each served with a fixed ``VLLM_CPU_KVCACHE_SPACE``; the KV token capacity
:mod:`vllm_deploy_wizard.catalog.fit` predicts from the model's config.json must equal the
``KV cache size: N tokens`` line vLLM logs, within 1 % (docs/fit.md §7).

Each start takes ~35–60 s here; the server is stopped as soon as the line is logged. Measurements
are written to ``<e2e cache>/fit-e2e-results.json`` for ``bench/bench_fit.py``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "launcher"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_env import E2EUnavailable, cache_root, tiny_model, vllm_env  # noqa: E402
from fit_tiny_models import ARCHITECTURES, make_tiny_model  # noqa: E402

from vllm_deploy_wizard.catalog.fit import GIB, ServeShape, kv_capacity  # noqa: E402
from vllm_deploy_wizard.catalog.model_facts import load_model_facts  # noqa: E402

pytestmark = pytest.mark.e2e

KV_SPACE_GIB = 1
BATCHED_TOKENS = 256
#: max_model_len per architecture: 500 is no block multiple (vLLM's int(concurrency × len) rounding).
MAX_MODEL_LEN = {"llama-gqa": 500, "qwen3": 512, "mistral-sliding": 512, "qwen3-moe": 512, "deepseek-v2-mla": 512}
START_DEADLINE_S = 240
_LINE = re.compile(r"KV cache size: ([\d,]+) tokens")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def logged_kv_tokens(bin_dir: Path, model: Path, max_model_len: int, log: Path) -> int | None:
    """Start ``vllm serve model`` and return the tokens of its ``KV cache size`` line (None when the
    server exits or the deadline passes first); the server's process group is stopped either way."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE=str(KV_SPACE_GIB))
    argv = [str(bin_dir / "vllm"), "serve", str(model), "--host", "127.0.0.1", "--port", str(_free_port()),
            "--max-model-len", str(max_model_len), "--max-num-batched-tokens", str(BATCHED_TOKENS),
            "--enforce-eager"]
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + START_DEADLINE_S
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            m = _LINE.search(log.read_text(errors="replace"))
            if m:
                return int(m.group(1).replace(",", ""))
            time.sleep(0.5)
        m = _LINE.search(log.read_text(errors="replace"))
        return int(m.group(1).replace(",", "")) if m else None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


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
    """Make every tiny model, serve each once, and record ``name, max_model_len, predicted, actual``.

    Raises:
        E2EUnavailable: the vLLM CPU build or the tiny tokenizer can't be had here."""
    bin_dir, tok = vllm_env(), tiny_model()
    rows = []
    for name in ARCHITECTURES:
        model = make_tiny_model(name, bin_dir / "python", tok, cache_root())
        length = MAX_MODEL_LEN[name]
        log = cache_root() / f"fit-{name}.serve.log"
        actual = logged_kv_tokens(bin_dir, model, length, log)
        rows.append({"name": name, "max_model_len": length, "predicted": predicted_tokens(model, length),
                     "actual": actual, "log": str(log)})
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
