"""The real vLLM CPU build (0.32): READY only once ``/v1/models`` lists the model, and the engine
check (a 1-token completion) answering while READY (docs/supervision.md §2, §10). One start, ~1–3 min."""

from __future__ import annotations

import asyncio
import time

import pytest
from polling import wait_until_async

from vllm_deploy_wizard.launcher.health import HttpProber
from vllm_deploy_wizard.launcher.plan_file import parse_plan
from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.states import ProcessEvent, State
from vllm_deploy_wizard.launcher.supervisor import Supervisor

pytestmark = pytest.mark.e2e



async def test_real_vllm_is_ready_once_it_lists_its_model_and_answers_the_engine_check(real, tmp_path):
    port = free_port()
    model = str(real["model"])
    plan = {"plan_version": 1, "plan": {"processes": [{
        "name": "vllm", "role": "serve",
        "argv": [str(real["vllm"] / "vllm"), "serve", model, "--host", "127.0.0.1", "--port", str(port),
                 "--max-model-len", "256", "--enforce-eager", "--dtype", "float32"],
        "env": {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}, "ports": [port], "ready_timeout_s": 400,
        # the derived engine check, at a rate a test can wait for
        "health": {"url": f"http://127.0.0.1:{port}/health", "liveness": {
            "url": f"http://127.0.0.1:{port}/v1/completions", "body": {"model": model, "prompt": "ping",
                                                                        "max_tokens": 1},
            "interval_s": 3, "timeout_s": 60, "failure_threshold": 1}},
    }]}}
    spec = parse_plan(plan)
    assert spec.processes[0].probe.model == model  # derived from argv: vLLM lists the model path
    prober = HttpProber()
    calls: list[tuple[float, str, bool, str]] = []

    async def probe(url, expect_status=200, timeout=2.0, body=False, post=None):
        res = await prober(url, expect_status, timeout, body=body or url.endswith("/v1/models"), post=post)
        calls.append((time.monotonic(), url.rsplit("/", 1)[-1], res.ok, res.body or ""))
        return res

    events: list[tuple[float, ProcessEvent]] = []
    sup = Supervisor(spec, probe=probe, log_dir=tmp_path,
                     listeners=[lambda m: isinstance(m, ProcessEvent) and events.append((time.monotonic(), m))])
    task = asyncio.create_task(sup.run())
    t0 = time.monotonic()
    try:
        await wait_until_async(lambda: any(e.state is State.READY for _, e in events) or task.done(), 400,
                               "vllm READY (or the supervisor ending)", interval=0.5)
        ready_at = next(t for t, e in events if e.state is State.READY)
        listed = [c for c in calls if c[1] == "models" and c[2] and model in c[3] and c[0] <= ready_at]
        assert listed, "READY without a /v1/models answer listing the model"
        await wait_until_async(lambda: [c for c in calls if c[1] == "completions" and c[0] > ready_at],
                               max(0.0, ready_at + 60 - time.monotonic()), "an engine check after READY", interval=0.5)
        checks = [c for c in calls if c[1] == "completions"]
        assert checks and all(c[2] for c in checks), checks
        assert sup.policy.states["vllm"].state is State.READY
    finally:
        t_stop = time.monotonic()
        sup.stop()
        await asyncio.wait_for(task, 120)
        await prober.aclose()
    print(f"\nE2E figures: start→READY {ready_at - t0:.1f} s; engine checks {len(checks)} ok; "
          f"stop {time.monotonic() - t_stop:.1f} s; survivors {sup.finished.survivors}")
    assert sup.finished.survivors == []
