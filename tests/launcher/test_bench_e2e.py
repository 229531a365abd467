"""End to end: ``vllm-wizard bench`` runs the real ``vllm bench serve`` (vLLM CPU build) against a run of
the tiny model that the wizard planned and launched, over a small sweep (1, 2), and saves the results
with the run (docs/benchmark.md §1)."""

from __future__ import annotations

import csv
import json
import os
import re
import time
from pathlib import Path

import pytest

from children import run_cli
from e2e_env import E2EUnavailable, tiny_model, vllm_env
from vllm_deploy_wizard.launcher.ports import free_port

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def real_vllm():
    try:
        return {"vllm": vllm_env(), "model": tiny_model()}
    except E2EUnavailable as exc:
        pytest.skip(f"real environment unavailable: {exc}")


def test_bench_sweeps_a_live_run_with_the_installed_vllm(real_vllm, env, tmp_path) -> None:
    env = dict(env, PATH=f"{real_vllm['vllm']}{os.pathsep}{env['PATH']}", HF_HUB_OFFLINE="1")
    port = free_port()
    plan_path = tmp_path / "plan.yaml"
    r = run_cli(env, "plan", "--model", str(real_vllm["model"]), "--detect", f"--arg=--port {port}",
                "--arg=--max-model-len=256", "--arg=--enforce-eager", "--arg=--dtype=float32",
                "--arg=--gpu-memory-utilization=0.3", "--out", str(plan_path),
                timeout=120)
    assert r.returncode == 0, r.stderr
    r = run_cli(env, "launch", str(plan_path), "--wait", timeout=600)
    m = re.search(r"launched run (\S+)", r.stdout)
    assert m and r.returncode == 0, r.stdout + r.stderr
    run_id = m.group(1)
    try:
        t0 = time.monotonic()
        b = run_cli(env, "bench", run_id, "--concurrency", "1,2", "--input-len", "16", "--output-len", "8",
                    "--min-prompts", "4", "--prompts-per-slot", "2", "--budget", "150", "--json", timeout=200)
        bench_s = time.monotonic() - t0
    finally:
        stopped = run_cli(env, "stop", run_id, timeout=120)
    assert b.returncode == 0, b.stdout + b.stderr
    record = json.loads(b.stdout)
    steps = record["steps"]
    assert [s["concurrency"] for s in steps] == [1, 2]
    assert [s["num_prompts"] for s in steps] == [4, 4]
    assert all(s["completed"] == 4 and s["failed"] == 0 for s in steps)
    assert all(s["output_throughput"] > 0 and s["ttft_p50_ms"] > 0 and s["itl_p99_ms"] > 0 for s in steps)
    assert "concurrency 1:" in b.stderr  # live progress
    folder = Path(record["path"])
    assert folder.parent.parent.name == run_id  # saved with the run
    rows = list(csv.DictReader((folder / "sweep.csv").open()))
    assert [int(r["concurrency"]) for r in rows] == [1, 2]
    raw = json.loads((folder / "c2.json").read_text())  # vLLM's own result file
    assert raw["max_concurrency"] == 2 and raw["completed"] == 4
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    print(f"\nE2E figures: bench sweep (1, 2) {bench_s:.1f} s; output tok/s "
          f"{', '.join('%.1f' % s['output_throughput'] for s in steps)}")
