"""Readiness by ``/v1/models``, the engine check of a READY server, stop during start-up, /dev/shm
cleanup and a router waiting for engines on other machines — with real children
(``engine_children.ENGINE_SERVER``), polled to deadlines (docs/supervision.md §2, §6, §10–§12)."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from pathlib import Path

import psutil
import pytest
from children import HEALTH_SERVER, PY, until
from engine_children import ENGINE_SERVER

from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.spec import Liveness, Probe, ProcessSpec, RestartPolicy, RunSpec
from vllm_deploy_wizard.launcher.states import ProcessEvent, State
from vllm_deploy_wizard.launcher.supervisor import RunFinished, Supervisor

#: An argv word that makes the supervisor treat the fake as a vLLM server (scrapes its /metrics).
AS_VLLM = "vllm.entrypoints.fake"


def _engine(port, mode="ok", models_after=0.0, shm="", *, liveness=None, model="tiny", extra=(), **kw) -> ProcessSpec:
    return ProcessSpec(
        name="vllm", argv=(PY, "-c", ENGINE_SERVER, str(port), mode, str(models_after), shm, AS_VLLM, *extra),
        probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.1, timeout_s=1.0, ready_interval_s=0.2,
                    model=model, liveness=liveness),
        ports=(port,), **kw)


class Recorder:
    def __init__(self):
        self.msgs = []
        self.t: dict[tuple[str, State], list[float]] = {}

    def __call__(self, m):
        self.msgs.append(m)
        if isinstance(m, ProcessEvent):
            self.t.setdefault((m.name, m.state), []).append(time.monotonic())

    def events(self, name, state=None):
        return [m for m in self.msgs if isinstance(m, ProcessEvent) and m.name == name
                and (state is None or m.state is state)]

    def finished(self) -> RunFinished:
        return [m for m in self.msgs if isinstance(m, RunFinished)][0]


async def _run(spec, rec, until_cond, timeout=30.0, **kw):
    sup = Supervisor(spec, listeners=[rec], metrics=True, **kw)
    task = asyncio.create_task(sup.run())
    try:
        await until(lambda: until_cond(sup), timeout, "the awaited state")
    finally:
        sup.stop()
        await asyncio.wait_for(task, 30)
    return sup


async def test_ready_only_once_v1_models_lists_the_model(tmp_path):
    rec = Recorder()
    sup = await _run(RunSpec((_engine(free_port(), models_after=1.5),)), rec,
                     lambda s: s.policy.states["vllm"].state is State.READY, log_dir=tmp_path)
    starting, ready = rec.t[("vllm", State.STARTING)][0], rec.t[("vllm", State.READY)][0]
    assert ready - starting >= 1.5  # /health answered at once; READY waited for the listing
    log = (tmp_path / "vllm.log").read_text()
    assert "/v1/models does not list 'tiny' yet (lists no model)" in log
    assert sup.finished.survivors == []


async def test_a_model_the_server_does_not_list_never_gets_ready(tmp_path):
    rec = Recorder()
    spec = RunSpec((_engine(free_port(), model="other", ready_timeout_s=1.5, restart=RestartPolicy(mode="never")),))
    sup = Supervisor(spec, listeners=[rec], log_dir=tmp_path)
    assert await asyncio.wait_for(sup.run(), 30) == "fatal"
    assert not rec.events("vllm", State.READY)
    assert "does not list 'other' yet (lists tiny)" in (tmp_path / "vllm.log").read_text()


async def test_health_alone_keeps_a_hung_engine_ready(tmp_path):
    # the failure the engine check exists for: /health and /v1/models answer, completions hang
    rec = Recorder()
    t_end = time.monotonic() + 30
    sup = await _run(RunSpec((_engine(free_port(), "hang"),)), rec,
                     lambda s: rec.events("vllm", State.READY)
                     and time.monotonic() > rec.t[("vllm", State.READY)][0] + 2.5)
    assert time.monotonic() < t_end
    assert [e.state for e in rec.events("vllm")][:2] == [State.STARTING, State.READY]
    assert not rec.events("vllm", State.BACKOFF) and sup.policy.states["vllm"].restarts == 0


async def test_a_hung_engine_is_unhealthy_and_restarted_within_two_check_periods(tmp_path):
    period = 1.0
    lv = Liveness(url="", body={"prompt": "ping", "max_tokens": 1}, interval_s=period, timeout_s=0.5,
                  failure_threshold=1)
    port = free_port()
    lv = Liveness(**{**lv.__dict__, "url": f"http://127.0.0.1:{port}/v1/completions"})
    rec = Recorder()
    spec = RunSpec((_engine(port, "hang", liveness=lv,
                            restart=RestartPolicy(backoff_initial_s=0.2, max_failures=5)),))
    sup = await _run(spec, rec, lambda s: len(rec.t.get(("vllm", State.READY), [])) >= 2, log_dir=tmp_path)
    ready, backoff = rec.t[("vllm", State.READY)][0], rec.t[("vllm", State.BACKOFF)][0]
    assert backoff - ready <= 2 * period + 0.5, backoff - ready  # decided within two periods (+ the SIGTERM exit)
    ev = rec.events("vllm", State.BACKOFF)[0]
    assert ev.cause["kind"] == "unhealthy" and "/v1/completions failed 1 checks in a row" in ev.cause["summary"]
    assert sup.policy.states["vllm"].restarts >= 1


async def test_frozen_token_counters_with_waiting_requests_are_unhealthy(tmp_path):
    port = free_port()
    # the completion check is far off (100 s): only /metrics can tell
    lv = Liveness(url=f"http://127.0.0.1:{port}/v1/completions", body={"max_tokens": 1}, interval_s=100,
                  stall_s=1.0, failure_threshold=1)
    rec = Recorder()
    spec = RunSpec((_engine(port, "hang", liveness=lv, restart=RestartPolicy(mode="never")),))
    sup = Supervisor(spec, listeners=[rec], log_dir=tmp_path)
    assert await asyncio.wait_for(sup.run(), 30) == "fatal"
    ready, fatal = rec.t[("vllm", State.READY)][0], rec.t[("vllm", State.FATAL)][0]
    assert fatal - ready < 3.0
    assert "2 requests running or waiting while the token counters stayed at 14" in \
        rec.events("vllm", State.FATAL)[0].cause["summary"]


async def test_moving_counters_keep_an_answering_engine_ready(tmp_path):
    port = free_port()
    lv = Liveness(url=f"http://127.0.0.1:{port}/v1/completions", body={"max_tokens": 1}, interval_s=0.3,
                  stall_s=0.5, timeout_s=0.5, failure_threshold=1)
    rec = Recorder()
    await _run(RunSpec((_engine(port, "ok", liveness=lv),)), rec,
               lambda s: rec.events("vllm", State.READY) and time.monotonic() > rec.t[("vllm", State.READY)][0] + 2.0,
               log_dir=tmp_path)
    assert not rec.events("vllm", State.BACKOFF)
    assert (tmp_path / "vllm.log").read_text().count("completion") >= 3  # the check really ran


async def test_a_server_with_an_api_key_is_asked_with_it(tmp_path):
    port = free_port()
    lv = Liveness(url=f"http://127.0.0.1:{port}/v1/completions", body={"max_tokens": 1}, interval_s=0.3,
                  timeout_s=1.0, failure_threshold=1)
    rec = Recorder()
    await _run(RunSpec((_engine(port, liveness=lv, extra=("--api-key", "sk-test-123456")),)), rec,
               lambda s: rec.events("vllm", State.READY) and time.monotonic() > rec.t[("vllm", State.READY)][0] + 1.5,
               log_dir=tmp_path)
    assert not rec.events("vllm", State.BACKOFF)  # /v1/models and the completions answered (not 401)
    assert [x for x in (tmp_path / "vllm.log").read_text().splitlines() if x == "completion"]


def _pids_alive(pids):
    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


async def test_stop_during_start_up_takes_under_5_s_with_no_survivors(tmp_path):
    port = free_port()
    rec = Recorder()
    # never READY (lists no model for 600 s); ignores SIGTERM, so does its grandchild; full grace 20 s
    spec = RunSpec((_engine(port, "ignore-term", models_after=600, stop_timeout_s=20.0),))
    sup = Supervisor(spec, listeners=[rec], log_dir=tmp_path)
    task = asyncio.create_task(sup.run())
    # (the "[wizard] starting:" note quotes the script, so match the printed line itself)
    await until(lambda: any(line.startswith("GRANDCHILD ") for line in sup.logs["vllm"].last(50)), 20, "the grandchild")
    tree = [p.pid for p in sup.handles["vllm"].collect()]
    assert len(tree) >= 2
    t0 = time.monotonic()
    sup.stop()
    assert await asyncio.wait_for(task, 30) == "stopped"
    took = time.monotonic() - t0
    print(f"\nstop during start-up (SIGTERM ignored by child and grandchild): {took:.2f} s")
    assert took <= 5.0, took
    assert _pids_alive(tree) == [] and sup.finished.survivors == []
    assert "after SIGKILL" in rec.events("vllm", State.STOPPED)[0].detail


def _shm(name: str) -> Path:
    return Path("/dev/shm") / name


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
async def test_a_restart_finds_no_leftover_shm_file_and_another_runs_file_stays(tmp_path):
    mine, theirs = f"vllm_offload_test{uuid.uuid4().hex}.mmap", f"vllm_offload_other{uuid.uuid4().hex}.mmap"
    other = subprocess.Popen([PY, "-c", "import os, sys, time; fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR); "
                              "print('ok', flush=True); time.sleep(600)", str(_shm(theirs))], stdout=subprocess.PIPE)
    try:
        assert other.stdout.readline().strip() == b"ok"  # another run's engine holds its region
        other_leaked = _shm(f"vllm_offload_gone{uuid.uuid4().hex}.mmap")
        other_leaked.write_bytes(b"x")  # and one leaked before this run started
        rec = Recorder()
        # creates the region O_EXCL, crashes after 1.5 s leaving it: a restart must not find it (exit 3)
        spec = RunSpec((_engine(free_port(), "crash", shm=mine, restart=RestartPolicy(backoff_initial_s=0.1)),))
        sup = await _run(spec, rec, lambda s: len(rec.t.get(("vllm", State.READY), [])) >= 2, log_dir=tmp_path)
        log = (tmp_path / "vllm.log").read_text()
        lines = log.splitlines()  # (the "[wizard] starting:" notes quote the script: match whole lines)
        assert not [x for x in lines if x.startswith("FileExistsError:")]
        assert lines.count(f"created /dev/shm/{mine}") >= 2
        assert f"removed /dev/shm files its processes left: /dev/shm/{mine}" in log
        assert not _shm(mine).exists()  # after the stop too
        assert _shm(theirs).exists() and other_leaked.exists()
        assert sup.finished.survivors == []
    finally:
        other.kill()
        other.wait()
        for n in (mine, theirs):
            _shm(n).unlink(missing_ok=True)
        other_leaked.unlink(missing_ok=True)


async def test_a_router_starts_only_once_the_engines_on_other_machines_answer(tmp_path):
    eport, rport = free_port(), free_port()
    router = ProcessSpec(name="router", argv=(PY, "-c", HEALTH_SERVER, str(rport), "0"), role="router",
                         phase="after", probe=Probe(f"http://127.0.0.1:{rport}/health", interval_s=0.1),
                         ports=(rport,), wait_for=(f"http://127.0.0.1:{eport}/health",))
    rec = Recorder()
    sup = Supervisor(RunSpec((router,)), listeners=[rec], log_dir=tmp_path)
    task = asyncio.create_task(sup.run())
    engine = None
    try:
        await until(lambda: (tmp_path / "router.log").exists()
                    and "(on other machines) to answer" in (tmp_path / "router.log").read_text(), 20, "the wait")
        await asyncio.sleep(0)  # the engine "on another machine" is not up: nothing started
        assert "router" not in sup.handles
        engine = subprocess.Popen([PY, "-c", HEALTH_SERVER, str(eport), "0.5"], stdout=subprocess.DEVNULL)
        t_engine = time.monotonic()
        await until(lambda: sup.policy.states["router"].state is State.READY, 20, "router READY")
        started = rec.t[("router", State.READY)][0]
        assert started - t_engine >= 0.5
    finally:
        sup.stop()
        await asyncio.wait_for(task, 30)
        if engine is not None:
            engine.kill()
            engine.wait()


async def test_a_router_whose_engines_never_answer_fails_at_its_ready_timeout(tmp_path):
    rport = free_port()
    router = ProcessSpec(name="router", argv=(PY, "-c", HEALTH_SERVER, str(rport), "0"), role="router",
                         phase="after", probe=Probe(f"http://127.0.0.1:{rport}/health", interval_s=0.1),
                         ports=(rport,), wait_for=(f"http://127.0.0.1:{free_port()}/health",), ready_timeout_s=1.0,
                         restart=RestartPolicy(mode="never"))
    rec = Recorder()
    sup = Supervisor(RunSpec((router,)), listeners=[rec], log_dir=tmp_path)
    assert await asyncio.wait_for(sup.run(), 30) == "fatal"
    assert "router" not in sup.handles  # never started
    cause = rec.events("router", State.FATAL)[0].cause
    assert cause["kind"] == "ready_timeout" and "did not answer within 1 s" in cause["summary"]
