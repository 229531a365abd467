"""The supervisor with real child processes (``sys.executable -c`` scripts), polled to deadlines."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal

import psutil
from children import FAIL, HEALTH_SERVER, LONG_LINE, PY, until

from vllm_deploy_wizard.launcher.logs import TAIL_LINES
from vllm_deploy_wizard.launcher.ports import free_port
from vllm_deploy_wizard.launcher.spec import Probe, ProcessSpec, RestartPolicy, RunSpec
from vllm_deploy_wizard.launcher.states import ProcessEvent, State
from vllm_deploy_wizard.launcher.supervisor import RunFinished, Supervisor


def _server(name, port, *extra, phase="engine", deps=(), **kw) -> ProcessSpec:
    return ProcessSpec(
        name=name, argv=(PY, "-c", HEALTH_SERVER, str(port), *extra), phase=phase, depends_on=deps,
        probe=Probe(f"http://127.0.0.1:{port}/health", interval_s=0.1, timeout_s=1.0), ports=(port,), **kw,
    )


class Recorder:
    def __init__(self):
        self.msgs = []

    def __call__(self, m):
        self.msgs.append(m)

    def events(self, name=None):
        return [m for m in self.msgs if isinstance(m, ProcessEvent) and (name is None or m.name == name)]

    def states(self, name):
        return [e.state for e in self.events(name)]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_starts_in_order_gated_by_probes_then_stops_clean(tmp_path):
    a, b = free_port(), free_port()
    spec = RunSpec((
        _server("cache", a, "0.3", phase="before"),
        _server("engine", b, "0.3", "", "grandchild", deps=("cache",)),
    ))
    rec = Recorder()
    sup = Supervisor(spec, log_dir=tmp_path, listeners=[rec])
    task = asyncio.create_task(sup.run())
    await until(lambda: sup.policy.states["engine"].state is State.READY, 20, "engine READY")
    ready = {e.name: e.ts for e in rec.events() if e.state is State.READY}
    started = {e.name: e.ts for e in rec.events() if e.state is State.STARTING}
    assert started["engine"] >= ready["cache"]  # the engine waited for the companion's probe
    tree = {p.pid for p in sup.handles["engine"].collect()}
    assert len(tree) == 2  # server + grandchild
    sup.stop("test")
    assert await asyncio.wait_for(task, 30) == "stopped"
    assert not [p for p in tree if _alive(p)]
    # engine (later phase) stopped before the companion
    stops = [e.name for e in rec.events() if e.state is State.STOPPED]
    assert stops == ["engine", "cache"]
    assert isinstance(rec.msgs[-1], RunFinished) and rec.msgs[-1].survivors == []
    assert "READY" in (tmp_path / "engine.log").read_text()


async def test_stop_escalates_to_sigkill_and_leaves_no_survivor(tmp_path):
    port = free_port()
    spec = RunSpec((_server("stubborn", port, "0", "ignore-term", "grandchild", stop_timeout_s=0.5),))
    rec = Recorder()
    sup = Supervisor(spec, log_dir=tmp_path, listeners=[rec])
    task = asyncio.create_task(sup.run())
    await until(lambda: sup.policy.states["stubborn"].state is State.READY, 20, "READY")
    pids = {p.pid for p in sup.handles["stubborn"].collect()}
    assert len(pids) == 2
    sup.stop()
    assert await asyncio.wait_for(task, 30) == "stopped"
    assert not [p for p in pids if _alive(p)]
    assert "SIGKILL" in (tmp_path / "stubborn.log").read_text()
    stopped = rec.events("stubborn")[-1]
    assert stopped.state is State.STOPPED and "SIGKILL" in stopped.detail


async def test_sigkill_of_main_process_reaps_orphans_and_restarts(tmp_path):
    port = free_port()
    spec = RunSpec((_server("vllm", port, "0", "", "grandchild", stop_timeout_s=2,
                            restart=RestartPolicy(backoff_initial_s=0.2, max_failures=5)),))
    rec = Recorder()
    sup = Supervisor(spec, log_dir=tmp_path, listeners=[rec])
    task = asyncio.create_task(sup.run())
    await until(lambda: sup.policy.states["vllm"].state is State.READY, 20, "READY")
    first = sup.handles["vllm"]
    orphans = [p.pid for p in first.collect() if p.pid != first.pid]
    assert orphans
    os.kill(first.pid, signal.SIGKILL)
    await until(lambda: State.BACKOFF in rec.states("vllm"), 5, "BACKOFF")
    backoff = [e for e in rec.events("vllm") if e.state is State.BACKOFF][0]
    assert backoff.cause["kind"] == "killed"
    await until(lambda: not any(_alive(p) for p in orphans), 10, "orphaned grandchild reaped")
    await until(lambda: rec.states("vllm").count(State.READY) == 2, 20, "READY again after restart")
    assert sup.handles["vllm"].pid != first.pid
    sup.stop()
    await asyncio.wait_for(task, 30)


async def test_a_deterministic_failure_goes_fatal_after_one_start_with_its_cause_and_fix(tmp_path):
    spec = RunSpec((ProcessSpec(
        name="vllm",
        argv=(PY, "-c", FAIL, "1", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
        restart=RestartPolicy(backoff_initial_s=0.05, max_failures=3, window_s=60),
    ),))
    rec = Recorder()
    sup = Supervisor(spec, log_dir=tmp_path, listeners=[rec])
    assert await asyncio.wait_for(sup.run(), 30) == "fatal"
    states = rec.states("vllm")
    assert states.count(State.STARTING) == 1 and State.BACKOFF not in states and states[-1] is State.FATAL
    fatal = rec.events("vllm")[-1]
    assert fatal.cause["kind"] == "device_oom" and fatal.cause["fix_args"] == ["--gpu-memory-utilization", "0.85"]
    assert "deterministic" in fatal.detail and any("CUDA out of memory" in line for line in fatal.tail)


async def test_a_transient_failure_backs_off_until_the_crash_loop_limit(tmp_path):
    spec = RunSpec((ProcessSpec(
        name="vllm", argv=(PY, "-c", FAIL, "1", "OSError: [Errno 98] error while attempting to bind on address "
                                                 "('0.0.0.0', 8000): address already in use"),
        restart=RestartPolicy(backoff_initial_s=0.05, max_failures=3, window_s=60),
    ),))
    rec = Recorder()
    sup = Supervisor(spec, log_dir=tmp_path, listeners=[rec])
    assert await asyncio.wait_for(sup.run(), 30) == "fatal"
    states = rec.states("vllm")
    assert states.count(State.BACKOFF) == 2 and states[-1] is State.FATAL
    fatal = rec.events("vllm")[-1]
    assert fatal.cause["kind"] == "port_in_use" and fatal.cause["facts"]["port"] == 8000
    assert "crash loop" in fatal.detail


async def test_missing_executable_is_classified():
    spec = RunSpec((ProcessSpec(name="x", argv=("/nonexistent/vllm-router",), restart=RestartPolicy(mode="never")),))
    rec = Recorder()
    assert await asyncio.wait_for(Supervisor(spec, listeners=[rec]).run(), 10) == "fatal"
    assert rec.events("x")[-1].cause["kind"] == "missing_executable"


async def test_the_logged_start_line_is_a_command_a_shell_reads_back(tmp_path):
    code = "import sys; print('up', flush=True)"
    spec = RunSpec((ProcessSpec(name="job", argv=(PY, "-c", code, "two words", "--api-key", "sk-secret-value"),
                                restart=RestartPolicy(mode="never")),))
    assert await asyncio.wait_for(Supervisor(spec, log_dir=tmp_path).run(), 30) == "exited"
    line = next(x for x in (tmp_path / "job.log").read_text().splitlines() if x.startswith("[wizard] starting: "))
    words = shlex.split(line.removeprefix("[wizard] starting: "))
    assert words[-4:-1] == [code, "two words", "--api-key"] and words[-1] != "sk-secret-value"  # redacted


async def test_long_lines_and_secrets_in_logs(tmp_path):
    spec = RunSpec((ProcessSpec(name="long", argv=(PY, "-c", LONG_LINE, str(200_000))),
                    _server("tok", free_port(), "0")))
    token = "hf_abcdefghijklmnopqrstuvwxyz012345"
    sup = Supervisor(spec, log_dir=tmp_path, base_env={**os.environ, "HF_TOKEN": token})
    task = asyncio.create_task(sup.run())
    await until(lambda: "END" in sup.logs["long"].last(TAIL_LINES), 20, "line after the 200 KB line")
    assert 200_000 in [len(x) for x in sup.logs["long"].last(TAIL_LINES)]
    await until(lambda: any(x.startswith("listening") for x in sup.logs["tok"].last(TAIL_LINES)), 20, "server up")
    sup.stop()
    await asyncio.wait_for(task, 30)
    text = (tmp_path / "tok.log").read_text()
    assert "starting; token ***" in text and token not in text


async def test_restart_waits_for_the_old_ports():
    """A restart does not race the old process: the port is held by a stranger, the start waits."""
    import socket

    port = free_port()
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", port))
    holder.listen()
    spec = RunSpec((_server("srv", port, "0"),))
    sup = Supervisor(spec, port_wait_s=10)
    task = asyncio.create_task(sup.run())
    await until(lambda: any("waiting for ports" in x for x in sup.logs["srv"].last(TAIL_LINES)), 10, "wait note")
    assert "srv" not in sup.handles
    holder.close()
    await until(lambda: sup.policy.states["srv"].state is State.READY, 20, "READY once the port is free")
    sup.stop()
    await asyncio.wait_for(task, 30)


async def test_stop_while_waiting_for_ports_never_starts_it():
    import socket

    port = free_port()
    holder = socket.socket()
    holder.bind(("127.0.0.1", port))
    holder.listen()
    rec = Recorder()
    sup = Supervisor(RunSpec((_server("srv", port, "0"),)), port_wait_s=30, listeners=[rec])
    task = asyncio.create_task(sup.run())
    await until(lambda: any("waiting for ports" in x for x in sup.logs["srv"].last(TAIL_LINES)), 10, "wait note")
    sup.stop()
    assert await asyncio.wait_for(task, 10) == "stopped"
    assert rec.states("srv") == [State.STARTING, State.STOPPING, State.STOPPED] and "srv" not in sup.handles
    holder.close()


async def test_probes_never_overlap_and_a_slow_poll_stretches_the_cycle():
    """A poll slower than the interval delays the next one (no overlap, no extra wait after it).

    Fake clock: the supervisor's ``clock`` is the real one plus 0.3 s for each probe, so a probe
    "takes" 0.3 s without the test waiting for it. After such a poll the loop must not sleep (the
    0.1 s interval has passed): the next poll starts 0.3 s later, not 0.4 s."""
    import time

    from vllm_deploy_wizard.launcher.health import HealthResult

    skew, active, starts, peak = [0.0], [0], [], [0]

    def clock() -> float:
        return time.monotonic() + skew[0]

    async def slow_probe(url, expect_status=200, timeout=2.0, body=False):
        active[0] += 1
        peak[0] = max(peak[0], active[0])
        starts.append(clock())
        await asyncio.sleep(0.005)  # a concurrent second poll would start here
        skew[0] += 0.3  # slower than the 0.1 s interval
        active[0] -= 1
        return HealthResult(False, None, "connection refused", 0.3)  # stays STARTING: the 0.1 s cadence

    spec = RunSpec((ProcessSpec("p", (PY, "-c", "import time; time.sleep(60)"),
                                probe=Probe("http://127.0.0.1:9/health", interval_s=0.1)),))
    sup = Supervisor(spec, probe=slow_probe, metrics=False, clock=clock)
    task = asyncio.create_task(sup.run())
    await until(lambda: len(starts) >= 4, 20, "four polls")
    sup.stop()
    await asyncio.wait_for(task, 30)
    assert peak[0] == 1
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    # the next poll starts when the slow one ends; waiting another interval would make it >= 0.4
    assert all(0.3 <= g < 0.39 for g in gaps), gaps


async def test_health_polls_slow_down_once_ready():
    from vllm_deploy_wizard.launcher.health import HealthResult

    polls: list[tuple[float, str]] = []
    sup = None

    async def probe(url, expect_status=200, timeout=2.0, body=False):
        polls.append((asyncio.get_running_loop().time(), sup.policy.states["p"].state.value))
        ok = len(polls) > 3  # READY at the 4th poll
        return HealthResult(ok, 200 if ok else None, "HTTP 200" if ok else "refused", 0.0)

    spec = RunSpec((ProcessSpec("p", (PY, "-c", "import time; time.sleep(60)"),
                                probe=Probe("http://127.0.0.1:9/health", interval_s=0.05, ready_interval_s=0.4)),))
    sup = Supervisor(spec, probe=probe, metrics=False)
    task = asyncio.create_task(sup.run())
    await until(lambda: sum(1 for _, st in polls if st == "READY") >= 4, 30, "four polls while READY")
    sup.stop()
    await asyncio.wait_for(task, 30)
    assert [st for _, st in polls[:4]] == ["STARTING"] * 4
    ready = [t for t, st in polls if st == "READY"]
    gaps = [b - a for a, b in zip(ready[1:], ready[2:], strict=False)]  # after the first READY poll: the READY cadence
    assert gaps and min(gaps) >= 0.4 - 0.01, gaps


#: Prints vLLM's CPU memory-utilization refusal, then 150 traceback lines (as vLLM 0.32's EngineCore
#: and API server do before exiting), then exits 1.
MEM_UTIL_THEN_TRACEBACKS = r"""
import sys
print("(VllmWorker-0 pid=1) ERROR ValueError: Available memory on node 0 (11.0/12.59 GiB) on startup is less "
      "than desired CPU memory utilization (0.92, 11.58 GiB). To resolve: decrease `--gpu-memory-utilization` "
      "(e.g. `--gpu-memory-utilization 0.5`)", flush=True)
for i in range(150):
    print(f'  File "/venv/vllm/v1/engine/core.py", line {i}, in __init__', flush=True)
print("RuntimeError: Engine core initialization failed. See root cause above.", flush=True)
sys.exit(1)
"""


async def test_fatal_cause_is_the_root_cause_printed_long_before_exit(tmp_path):
    spec = RunSpec((ProcessSpec(name="vllm", argv=(PY, "-c", MEM_UTIL_THEN_TRACEBACKS),
                                restart=RestartPolicy(backoff_initial_s=0.05, max_failures=2, window_s=60)),))
    rec = Recorder()
    sup = Supervisor(spec, log_dir=tmp_path, listeners=[rec])
    assert await asyncio.wait_for(sup.run(), 30) == "fatal"
    fatal = rec.events("vllm")[-1]
    assert fatal.state is State.FATAL and fatal.cause["kind"] == "mem_util"
    assert fatal.cause["fix_args"] == ["--gpu-memory-utilization", "0.85"]  # from the 11.0/12.59 GiB figures
    assert rec.states("vllm").count(State.STARTING) == 1  # deterministic: FATAL after the first start
    assert sup.policy.states["vllm"].cause["kind"] == "mem_util"  # what state.json / `status` show


async def test_a_requested_restart_clears_the_last_cause(tmp_path):
    port = free_port()
    spec = RunSpec((_server("vllm", port, "0.1"),))
    rec = Recorder()
    sup = Supervisor(spec, log_dir=tmp_path, listeners=[rec])
    task = asyncio.create_task(sup.run())
    await until(lambda: sup.policy.states["vllm"].state is State.READY, 20, "READY")
    sup.policy.states["vllm"].cause = {"kind": "killed", "summary": "killed by SIGKILL"}  # an earlier failure
    sup.restart("vllm")
    await until(lambda: rec.states("vllm").count(State.READY) >= 2, 20, "READY again")
    assert sup.policy.states["vllm"].cause is None
    sup.stop()
    await asyncio.wait_for(task, 30)


async def test_a_restart_waits_until_the_old_tree_released_its_gpu_memory(tmp_path, monkeypatch):
    """A restart must not race the old process for GPU memory. NVML is faked here (no GPU
    on the test machines): it reports the crashed pid holding 2 GiB for two polls, then nothing."""
    import vllm_deploy_wizard.launcher.supervisor as supervisor_mod

    polls: list[tuple[float, set[int]]] = []

    def fake_held(pids: set[int], baseline=None) -> dict[int, int]:
        # NVML shows the first start's pid holding 2 GiB for its first two polls, then nothing
        polls.append((asyncio.get_running_loop().time(), set(pids)))
        of_first = [p for p in polls if first_pid and first_pid[0] in p[1]]
        return {first_pid[0]: 2 << 30} if first_pid and first_pid[0] in pids and len(of_first) <= 2 else {}

    first_pid: list[int] = []
    monkeypatch.setattr(supervisor_mod, "gpu_memory_held", fake_held)
    spec = RunSpec((ProcessSpec(name="vllm", argv=(PY, "-c", FAIL, "1", "boom"),
                                restart=RestartPolicy(backoff_initial_s=0.01, max_failures=2, window_s=60)),))
    rec = Recorder()

    def spawned(name: str) -> None:  # called the moment the OS process exists: no race with its exit
        if not first_pid:
            first_pid.append(sup.handles[name].pid)

    sup = Supervisor(spec, log_dir=tmp_path, listeners=[rec], port_wait_s=30, on_spawned=spawned)
    task = asyncio.create_task(sup.run())
    assert await asyncio.wait_for(task, 60) == "fatal"  # two failures: FATAL after the second start
    starts = [e for e in rec.events("vllm") if e.state is State.STARTING]
    assert len(starts) == 2 and starts[1].pid != first_pid[0]
    assert len(polls) >= 3 and first_pid[0] in polls[0][1]
    text = (tmp_path / "vllm.log").read_text()
    assert text.count("waiting for GPU memory to be released") == 2 and f"{first_pid[0]}: {2 << 30}" in text
    # the second start came after NVML stopped reporting the old pid
    assert text.rindex("waiting for GPU memory") < text.rindex("starting:")


def test_gpu_memory_held_reads_nvml_per_pid_and_is_none_without_it(monkeypatch):
    import sys
    import types

    from vllm_deploy_wizard.launcher.process import gpu_memory_held

    class NVMLError(Exception):
        pass

    proc = types.SimpleNamespace
    devices = {0: [proc(pid=10, usedGpuMemory=1 << 30), proc(pid=99, usedGpuMemory=5)],
               1: [proc(pid=10, usedGpuMemory=1 << 20), proc(pid=11, usedGpuMemory=None)]}
    calls = []

    def graphics(handle):
        raise NVMLError("not supported")  # one failing query must not hide the others

    fake = types.SimpleNamespace(
        nvmlInit=lambda: calls.append("init"), nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetCount=lambda: 2, nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetComputeRunningProcesses=lambda h: devices[h],
        nvmlDeviceGetGraphicsRunningProcesses=graphics,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    # pid 11 is listed without a usable byte count (containers, MIG): it still holds a context
    assert gpu_memory_held({10, 11, 12}) == {10: (1 << 30) + (1 << 20), 11: 0}
    assert calls == ["init", "shutdown"]

    def no_driver():
        raise NVMLError("Driver Not Loaded")

    monkeypatch.setitem(sys.modules, "pynvml", types.SimpleNamespace(nvmlInit=no_driver))
    assert gpu_memory_held({10}) is None
