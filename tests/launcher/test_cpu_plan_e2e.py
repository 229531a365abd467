"""End to end: the wizard's own CPU plan, unedited, serves the test-made model on the real vLLM CPU build.

``vllm-wizard plan --model <tiny model folder> --detect --out plan.yaml`` sizes the CPU settings from
this node (docs/backends.md §7); ``vllm-wizard launch plan.yaml --wait`` runs exactly that file; a
completion is answered; ``vllm-wizard stop`` leaves nothing behind. The only inputs besides the model
are ``--arg`` values given to ``plan`` (a free port, a short context, eager mode for a quick start):
what the wizard writes is what runs.
"""

from __future__ import annotations

import os
import re
import time

import httpx
import psutil
import pytest
import yaml

from children import run_cli
from e2e_env import E2EUnavailable, tiny_model, vllm_env
from vllm_deploy_wizard.launcher.ports import free_port

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def real():
    try:
        return {"vllm": vllm_env(), "model": tiny_model()}
    except E2EUnavailable as exc:
        pytest.skip(f"real environment unavailable: {exc}")


def test_wizard_cpu_plan_serves_unedited(real, env, tmp_path) -> None:
    env = dict(env, PATH=f"{real['vllm']}{os.pathsep}{env['PATH']}", HF_HUB_OFFLINE="1")
    port = free_port()
    plan_path = tmp_path / "plan.yaml"
    r = run_cli(env, "plan", "--model", str(real["model"]), "--detect", f"--arg=--port {port}",
                "--arg=--max-model-len=256", "--arg=--enforce-eager", "--arg=--dtype=float32", "--out", str(plan_path),
                timeout=120)
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(plan_path.read_text())
    [serve] = [p for p in doc["plan"]["processes"] if p["role"] == "serve"]
    assert serve["health"]["url"] == f"http://127.0.0.1:{port}/health"
    # the CPU settings come from this node's detection, not from the test
    assert serve["argv"][:3] == ["vllm", "serve", str(real["model"])]
    assert int(serve["env"]["VLLM_CPU_KVCACHE_SPACE"]) >= 1
    assert re.fullmatch(r"[\d,\-]+", serve["env"]["VLLM_CPU_OMP_THREADS_BIND"])
    before = plan_path.read_bytes()

    t0 = time.monotonic()
    r = run_cli(env, "launch", str(plan_path), "--wait", timeout=600)
    up_s = time.monotonic() - t0
    m = re.search(r"launched run (\S+)", r.stdout)
    assert m, r.stdout + r.stderr
    run_id = m.group(1)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        assert plan_path.read_bytes() == before  # launched as written
        with httpx.Client(trust_env=False, timeout=60) as http:
            reply = http.post(f"http://127.0.0.1:{port}/v1/completions",
                              json={"model": str(real["model"]), "prompt": "Hello", "max_tokens": 4})
        assert reply.status_code == 200, reply.text
        engine = [p for p in psutil.process_iter(["cmdline", "environ"])
                  if "serve" in (p.info["cmdline"] or []) and str(port) in (p.info["cmdline"] or [])]
        assert engine, "no vllm serve process of this run"
        assert engine[0].info["environ"]["VLLM_CPU_OMP_THREADS_BIND"] == serve["env"]["VLLM_CPU_OMP_THREADS_BIND"]
    finally:
        stopped = run_cli(env, "stop", run_id, timeout=120)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    print(f"\nE2E figures: plan→all READY {up_s:.1f} s")
