"""End to end: ``vllm-wizard bench`` runs the real ``vllm bench serve`` (vLLM CPU build) against a run of
the tiny model that the wizard planned and launched, over a small sweep (1, 2), and saves the results
with the run (docs/benchmark.md §1)."""

from __future__ import annotations

import asyncio
import csv
import html
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
        if b.returncode == 0:
            t0 = time.monotonic()
            tui = asyncio.run(_bench_screen(Path(json.loads(b.stdout)["path"]).parent.parent))
            tui_s = time.monotonic() - t0
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
    # the TUI's screen drove the same real vllm bench serve: a sweep to its limit, plots filled, an SVG
    assert tui["concurrencies"] == [1, 2] and tui["plotted"] == [1, 2]
    assert tui["svg"].startswith("<svg") and "Output throughput" in html.unescape(tui["svg"]).replace("\xa0", " ")
    print(f"\nE2E figures: bench sweep (1, 2) {bench_s:.1f} s; output tok/s "
          f"{', '.join(format(s['output_throughput'], '.1f') for s in steps)}; TUI sweep (1, 2) {tui_s:.1f} s")


async def _bench_screen(run_dir: Path) -> dict:
    """Open the benchmark screen on the live run (as ``b`` in the monitor does), sweep to concurrency 2."""
    from textual.app import App
    from textual.widgets import Input

    from vllm_deploy_wizard.launcher.bench import target_from_run
    from vllm_deploy_wizard.tui.screen_bench import BenchScreen

    target = target_from_run(run_dir)
    screen = BenchScreen(run_dir.name, run_dir, target)

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(screen)

    app = Host()
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.pause()
        for wid, value in (("bench-max-conc", "2"), ("bench-input-len", "16"), ("bench-output-len", "8"),
                           ("bench-budget", "150")):
            screen.query_one(f"#{wid}", Input).value = value
        await pilot.press("g")
        deadline = time.monotonic() + 180
        while screen.sweep is None and not screen.error and time.monotonic() < deadline:
            await pilot.pause(0.2)
        assert screen.sweep is not None, screen.error
        await pilot.press("e")
        await pilot.pause(0.2)
        return {"concurrencies": [s.concurrency for s in screen.sweep.steps],
                "plotted": screen.series()["plot-output"][0][1],
                "svg": (screen.sweep.path / "bench.svg").read_text()}
