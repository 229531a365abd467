"""The supervisor runtime: turns OS facts into policy events and carries out the policy's actions.

All decisions live in :class:`~vllm_deploy_wizard.launcher.policy.Policy`; this module only *observes*
(process exits, probe results, timers) and *acts* (spawn, signal, kill), feeding one asyncio queue
that a single loop drains — events in, decisions in one place (docs/architecture.md §3 style 4).

Seams (docs/architecture.md §3 style 5), each with a real default: ``clock`` (monotonic seconds, for timers and
policy times), ``spawn`` (``async (ProcessSpec, env) -> ManagedProcess``), ``probe``
(``async (url, expect_status, timeout, body=False) -> HealthResult``).

Observers receive messages through ``listeners`` (plain callables that must not block):
:class:`~vllm_deploy_wizard.launcher.states.ProcessEvent`, :class:`~vllm_deploy_wizard.launcher.logs.LogLines`,
:class:`Metrics`, :class:`Progress`, and a final :class:`RunFinished`.

A probe answer counts while STARTING only when the socket listening on the probe's port belongs
to the process's tree (:func:`~vllm_deploy_wizard.launcher.process.foreign_listener`; undeterminable
holders are accepted): a server that could not bind must not look READY because another run's
server answers on the same port.

Health polls: every ``Probe.interval_s`` (1 s) while STARTING, then every ``Probe.ready_cadence_s``
(5 s unless the plan sets ``health.ready_interval_s``) while READY — a real vLLM writes an access
log line per poll, and its ``/metrics`` are scraped at the same cadence. Polls never overlap.
READY needs ``/v1/models`` to list ``Probe.model`` when set; while READY a ``Probe.liveness``
check takes the poll that falls due after its ``interval_s``, and its failures or frozen
``/metrics`` counters (:class:`~vllm_deploy_wizard.launcher.health.EngineWatch`) become
``Unhealthy`` (docs/supervision.md §2, §10). A process with ``wait_for`` URLs is spawned only once
they answer (§12).

Process-tree hygiene: when a main process dies on its own, what is left of its tree
(vLLM's EngineCore/Worker after a SIGKILLed API server) is reaped at once, and a restart waits for
that and for the process's ports to be free instead of racing them. After the run, every tree is
checked for survivors (killed if any, and reported) and, with NVML, for GPU memory still held.
The ``/dev/shm`` files a start's tree created are removed before its restart and after the stop
(:mod:`~vllm_deploy_wizard.launcher.shm`, docs/supervision.md §11).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from vllm_deploy_wizard.launcher import policy as P
from vllm_deploy_wizard.launcher.causes import CLASSIFY_LINES, Cause, explain
from vllm_deploy_wizard.launcher.health import EngineWatch, HttpProber, models_not_listed, wait_for_answers
from vllm_deploy_wizard.launcher.logs import LogLines, ProcessLog, Redactor, pump, secret_argv_values
from vllm_deploy_wizard.launcher.metrics import MetricsSnapshot, parse_metrics, rates
from vllm_deploy_wizard.launcher.ports import busy_ports, port_holder
from vllm_deploy_wizard.launcher.process import (
    ManagedProcess,
    child_env,
    foreign_listener,
    gpu_memory_held,
    spawn_process,
)
from vllm_deploy_wizard.launcher.shm import RunShm
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec
from vllm_deploy_wizard.launcher.states import ProcessEvent, State
from vllm_deploy_wizard.launcher.timeouts import EMERGENCY_STOP_TIMEOUT_S, KILL_WAIT_S, TREE_GONE_GRACE_S
from vllm_deploy_wizard.launcher.vllm import StartupProgress, auth_headers, is_vllm_serve


@dataclass
class Metrics:
    """A ``/metrics`` scrape of process ``name``: the snapshot and the rates since the previous one."""

    name: str
    snapshot: MetricsSnapshot
    rates: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with ``"type": "metrics"``."""
        return {"type": "metrics", "name": self.name, "snapshot": self.snapshot.to_dict(), "rates": self.rates}


@dataclass
class Progress:
    """Startup progress of a vLLM process ``name``: ``phase`` and weight-loading ``percent``."""

    name: str
    phase: str | None
    percent: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with ``"type": "progress"``."""
        return {"type": "progress", **asdict(self)}


@dataclass
class RunFinished:
    """The run ended: ``outcome`` (stopped | exited | fatal), pids that survived the stop
    (were then SIGKILLed), GPU memory (bytes per pid) still held or None without NVML."""

    outcome: str
    survivors: list[int]
    gpu_memory_held: dict[int, int] | None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with ``"type": "finished"``."""
        return {"type": "finished", **asdict(self)}


Message = ProcessEvent | LogLines | Metrics | Progress | RunFinished
ProbeFn = Callable[..., Awaitable[Any]]


#: A log line the supervisor writes for each state change (``[wizard] STARTING → READY: …``).
#: Observers that show the :class:`ProcessEvent` itself hide these lines so no change shows twice.
TRANSITION_NOTE_RE = re.compile(r"^\[wizard\] (?:-|[A-Z]+) → [A-Z]+: ")


def transition_note(ev: ProcessEvent) -> str:
    """The log-file note for state change ``ev`` (matched by :data:`TRANSITION_NOTE_RE` once prefixed)."""
    return f"{ev.prev.value if ev.prev else '-'} → {ev.state.value}: {ev.detail}"


def metrics_url(probe_url: str) -> str:
    """The ``/metrics`` URL on the same host/port as a health probe URL."""
    u = urlsplit(probe_url)
    return urlunsplit((u.scheme, u.netloc, "/metrics", "", ""))


def with_port_holder(cause: Cause) -> Cause:
    """``cause`` with ``facts["holder"]`` (``"name (pid N)"``) when it is a port clash whose port's
    listener the OS shows now; unchanged otherwise."""
    port = cause.facts.get("port") if cause.kind == "port_in_use" else None
    holder = port_holder(int(port)) if isinstance(port, int) else None
    if not holder:
        return cause
    from dataclasses import replace

    return replace(cause, facts={**cause.facts, "holder": holder},
                   summary=f"{cause.summary} (held by {holder})")


class Supervisor:
    """Runs one :class:`RunSpec` until it is stopped or settles. Use :meth:`run` inside asyncio.

    ``log_dir``: where ``<name>.log`` files go (None = memory only). ``base_env``: environment the
    children inherit (default ``os.environ``). ``port_wait_s``: how long a (re)start waits for the
    process's ports to be free. ``metrics``: scrape vLLM ``/metrics`` while READY. ``on_spawned``:
    called with the process name right after each (re)start's OS process exists, before anything
    else happens — the run server records the pid/pgid/create_time in state.json there, so a
    supervisor SIGKILLed while a process is still STARTING leaves children that `stop` can find.
    It must not block; an exception in it is ignored. ``shm``: the /dev/shm bookkeeping (default: in
    memory; the run server's records to the run directory).
    """

    def __init__(
        self,
        spec: RunSpec,
        *,
        log_dir: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        spawn: Callable[[ProcessSpec, Mapping[str, str]], Awaitable[ManagedProcess]] = spawn_process,
        probe: ProbeFn | None = None,
        base_env: Mapping[str, str] | None = None,
        listeners: list[Callable[[Message], None]] | None = None,
        port_wait_s: float = 30.0,
        metrics: bool = True,
        on_spawned: Callable[[str], None] | None = None,
        shm: RunShm | None = None,
    ):
        self.spec = spec
        self.clock, self.wall = clock, wall
        self._spawn_fn = spawn
        self._probe_fn = probe
        self._own_prober: HttpProber | None = None
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.listeners = list(listeners or [])
        self.port_wait_s = port_wait_s
        #: per-device accelerator memory at launch, in a container only (pids there do not match)
        self.gpu_baseline: dict[str, int] | None = None
        self.metrics_enabled = metrics
        self.on_spawned = on_spawned
        self._foreign_fn = foreign_listener  # (probe url, ManagedProcess, argv) -> note or None
        env_all = dict(self.base_env)
        for p in spec.processes:
            env_all.update(p.env)
        self.redactor = Redactor(env_all, [v for p in spec.processes for v in secret_argv_values(p.argv)])
        self.policy = P.Policy(spec, emit=self._on_transition)
        self.handles: dict[str, ManagedProcess] = {}
        self.logs: dict[str, ProcessLog] = {}
        self.progress: dict[str, StartupProgress] = {}
        self.last_event: dict[str, ProcessEvent] = {}
        self.last_metrics: dict[str, Metrics] = {}
        self.finished: RunFinished | None = None
        self._queue: asyncio.Queue = asyncio.Queue()
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task] = set()
        self._pumps: dict[str, asyncio.Task] = {}
        self._cleanup: dict[str, asyncio.Task] = {}
        self._spawning: set[str] = set()
        self._pending_signal: dict[str, int] = {}
        self._since_wall: dict[str, float] = {}
        self.shm = shm or RunShm()  #: /dev/shm files of each process's current start (docs/supervision.md §11)
        for p in spec.processes:
            self.logs[p.name] = ProcessLog(
                p.name, (log_dir / f"{p.name.replace('/', '_')}.log") if log_dir else None,
                redactor=self.redactor, on_lines=self._lines_cb(p),
            )

    # ------------------------------------------------------------ public API

    def stop(self, reason: str = "stop requested") -> None:
        """Ask the run to stop (thread-unsafe; call from the loop). Idempotent."""
        self._queue.put_nowait(P.StopRequested(reason))

    def restart(self, name: str) -> None:
        """Ask for a restart of process ``name``; ``KeyError`` if there is no such process."""
        self.spec.get(name)
        self._queue.put_nowait(P.RestartRequested(name))

    def snapshot(self) -> dict[str, Any]:
        """Current state of every process (JSON-ready, secrets redacted): pids with create_time,
        ports, state, since (epoch s), restarts, last cause, startup progress; and the outcome."""
        procs = []
        for p in self.spec.processes:
            ps = self.policy.states[p.name]
            mp = self.handles.get(p.name)
            live = mp if mp is not None and mp.proc.returncode is None else None
            prog = self.progress.get(p.name)
            procs.append({
                "name": p.name,
                "role": p.role,
                "phase": p.phase,
                "state": ps.state.value,
                "since": self._since_wall.get(p.name),
                "pid": live.pid if live else None,
                "pgid": mp.pgid if mp else None,
                "create_time": live.create_time if live else None,
                "leader_create_time": mp.create_time if mp else None,
                "tree": {str(k): v for k, v in live.known.items()} if live else {},
                "ports": list(p.ports),
                "restarts": ps.restarts,
                "last_rc": ps.last_rc,
                "cause": ps.cause,
                "progress": asdict(prog) if prog else None,
                "argv": [self.redactor.text(a) for a in p.argv],
                "log": str(self.logs[p.name].path) if self.logs[p.name].path else None,
                "metrics": self.last_metrics[p.name].to_dict() if p.name in self.last_metrics else None,
            })
        return {"processes": procs, "outcome": self.policy.outcome, "stop_reason": self.policy.stop_reason}

    async def run(self) -> str:
        """Start everything, supervise until the policy finishes; return the outcome
        (``stopped`` | ``exited`` | ``fatal``). Cancelling this task stops the run first."""
        if self._probe_fn is None:
            self._own_prober = HttpProber()
            self._probe_fn = self._own_prober
        from vllm_deploy_wizard.launcher import devmem

        if devmem.in_container():
            self.gpu_baseline = await asyncio.to_thread(devmem.baseline)
        try:
            self._execute(self.policy.start(self.clock()))
            while self.policy.outcome is None:
                ev = await self._queue.get()
                self._execute(self.policy.handle(ev, self.clock()))
        except asyncio.CancelledError:
            await self._emergency_stop()
            raise
        finally:
            await self._finish()
        return self.policy.outcome or "stopped"

    # ------------------------------------------------------------ plumbing

    def _publish(self, msg: Message) -> None:
        for cb in list(self.listeners):
            try:
                cb(msg)
            except Exception:  # noqa: BLE001 - a broken observer must never stop supervision
                pass

    def _on_transition(self, ev: ProcessEvent) -> None:
        ev.ts = self.wall()
        ev.detail = self.redactor.text(ev.detail)
        ev.tail = [self.redactor.text(t) for t in ev.tail]
        self._since_wall[ev.name] = ev.ts
        self.last_event[ev.name] = ev
        self.logs[ev.name].note(transition_note(ev))
        self._publish(ev)

    def _lines_cb(self, p: ProcessSpec) -> Callable[[LogLines], None]:
        vllm = is_vllm_serve(p.argv)

        def cb(batch: LogLines) -> None:
            if vllm:
                prog = self.progress.setdefault(p.name, StartupProgress())
                if prog.phase != "ready":
                    changed = False
                    for line in batch.lines:
                        changed |= prog.feed(line)
                    if changed:
                        self._publish(Progress(p.name, prog.phase, prog.percent))
            self._publish(batch)

        return cb

    def _task(self, coro) -> asyncio.Task:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return t

    def _execute(self, actions: list[P.Action]) -> None:
        loop = asyncio.get_running_loop()
        for a in actions:
            if isinstance(a, P.Spawn):
                self._spawning.add(a.name)
                self._task(self._spawn(a.name))
            elif isinstance(a, P.ProbeHealth):
                mp = self.handles.get(a.name)
                if mp is not None:
                    self._task(self._probe_loop(a.name, mp))
            elif isinstance(a, P.Signal):
                mp = self.handles.get(a.name)
                if a.name in self._spawning:  # not started yet: deliver as soon as it is
                    self._pending_signal[a.name] = a.sig
                elif mp is not None and mp.returncode is None:
                    self.shm.observe(a.name, mp)
                    pids = mp.signal_tree(a.sig)
                    self.logs[a.name].note(f"sent signal {a.sig} to process group {mp.pgid} ({len(pids)} processes)")
                # else: it already ended; its Exited event is on the way
            elif isinstance(a, P.KillTree):
                mp = self.handles.get(a.name)
                if mp is not None:
                    self.shm.observe(a.name, mp)
                    pids = mp.kill_tree()
                    self.logs[a.name].note(f"stop timeout: SIGKILL to {len(pids)} processes {pids}")
            elif isinstance(a, P.StartTimer):
                old = self._timers.pop((a.name, a.kind), None)
                if old:
                    old.cancel()
                self._timers[(a.name, a.kind)] = loop.call_later(
                    max(0.0, a.delay), self._queue.put_nowait, P.TimerFired(a.name, a.kind)
                )
            elif isinstance(a, P.CancelTimer):
                old = self._timers.pop((a.name, a.kind), None)
                if old:
                    old.cancel()

    async def _spawn(self, name: str) -> None:
        p = self.spec.get(name)
        log = self.logs[name]
        try:
            old = self._cleanup.pop(name, None)
            if old is not None:
                await old
            if p.wait_for and not await self._wait_for_remote(name, p):
                return
            if p.ports:
                deadline = self.clock() + self.port_wait_s
                busy = busy_ports(p.ports)
                if busy:
                    log.note(f"waiting for ports {busy} to be free")
                while busy and self.clock() < deadline and self.policy.states[name].state is State.STARTING:
                    await asyncio.sleep(0.2)
                    busy = busy_ports(p.ports)
            if self.policy.states[name].state is not State.STARTING:
                self._pending_signal.pop(name, None)
                self._queue.put_nowait(P.Exited(name, 0))  # stopped before it was started
                return
            log.note(f"starting: {shlex.join(self.redactor.text(a) for a in p.command())}")
            self.progress.pop(name, None)  # a restart goes through the startup phases again
            ledger = self.shm.begin()
            try:
                mp = await self._spawn_fn(p, child_env(p, self.base_env))
            except OSError as exc:
                msg = f"cannot start {p.command()[0]!r}: {exc.strerror or exc}"
                log.note(msg)
                cause = Cause("missing_executable", msg,
                              f"install {p.argv[0]!r} in the chosen environment or fix PATH", msg)
                self._queue.put_nowait(P.Exited(name, 127, cause.to_dict(), tuple(log.last(20))))
                return
            self.handles[name] = mp
            self.shm.started(name, ledger)
            if self.on_spawned is not None:
                try:
                    self.on_spawned(name)
                except Exception:  # noqa: BLE001 - bookkeeping must never stop supervision
                    pass
            if mp.stdout is not None:
                self._pumps[name] = self._task(pump(mp.stdout, log))
            self._queue.put_nowait(P.Started(name, mp.pid))
            self._task(self._watch(name, mp))

            def alive() -> bool:
                return mp.proc.returncode is None and self.handles.get(name) is mp

            self._task(self.shm.track(name, mp, alive))
        finally:
            self._spawning.discard(name)
        sig = self._pending_signal.pop(name, None)
        if sig is not None:
            mp.signal_tree(sig)

    async def _watch(self, name: str, mp: ManagedProcess) -> None:
        rc = await mp.wait()
        p = self.spec.get(name)
        log = self.logs[name]
        pump_task = self._pumps.get(name)
        if pump_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(pump_task), 0.02)  # last lines (pump batches every 5 ms)
        if self.policy.states[name].state is State.STOPPING:
            # an asked-for stop: the process is stopped when its whole tree is gone
            deadline = self.clock() + p.stop_timeout_s + TREE_GONE_GRACE_S
            while mp.survivors() and self.clock() < deadline:
                await asyncio.sleep(0.05)
            if mp.survivors():
                self.shm.observe(name, mp)
                mp.kill_tree()
                await mp.reap(KILL_WAIT_S)
            self.shm.remove(name, self.logs[name].note)  # before a requested restart starts it again
            self._queue.put_nowait(P.Exited(name, rc))
            return
        tail = log.last(40)
        # vLLM prints its root cause ~120 lines before it exits (EngineCore + API-server tracebacks):
        # classify this start's output only (after the last "[wizard] starting:" note), up to CLASSIFY_LINES
        recent = log.last(CLASSIFY_LINES)
        marks = [i for i, line in enumerate(recent) if line.startswith("[wizard] starting: ")]
        # always a cause (unclassified = exit status + last error line); the policy uses it only
        # when the exit is a failure
        found = explain(recent[marks[-1] + 1:] if marks else recent, rc, p.argv, p.env)
        cause = with_port_holder(found).to_dict()
        self._queue.put_nowait(P.Exited(name, rc, cause, tuple(tail)))
        self._cleanup[name] = self._task(self._reap(name, mp))

    async def _reap(self, name: str, mp: ManagedProcess) -> None:
        p = self.spec.get(name)
        self.shm.observe(name, mp)  # the orphans (EngineCore, Workers) still hold their segments
        left = await mp.reap(p.stop_timeout_s, p.stop_signal)
        if left:
            self.logs[name].note(f"main process gone; reaped {len(left)} leftover processes {left}")
        self.shm.remove(name, self.logs[name].note)  # the restart waits for this task
        # a restart must not race the old tree for GPU memory either: wait while NVML
        # still shows any of its pids holding memory (no NVML → None → no wait)
        pids = set(mp.known) | {mp.pid}
        deadline = self.clock() + self.port_wait_s
        # (pid match only: the run's other engines still hold memory above the launch baseline)
        while (held := gpu_memory_held(pids)) and self.clock() < deadline:
            self.logs[name].note(f"waiting for GPU memory to be released: {held}")
            await asyncio.sleep(1.0)

    async def _probe_loop(self, name: str, mp: ManagedProcess) -> None:
        p = self.spec.get(name)
        pr = p.probe
        assert pr is not None and self._probe_fn is not None
        # a remote probe is another machine's server (a multi-node worker's head): its metrics are not ours
        murl = metrics_url(pr.url) if (self.metrics_enabled and is_vllm_serve(p.argv) and not pr.remote) else None
        last_ok: bool | None = None
        watch: EngineWatch | None = None
        warned: str | None = None
        prev: MetricsSnapshot | None = None
        # /v1 routes of a vLLM started with an API key need it (the liveness URL, /v1/models)
        auth = {"headers": h} if (h := auth_headers(p.argv, child_env(p, self.base_env))) else {}
        while self.handles.get(name) is mp and mp.proc.returncode is None:
            state = self.policy.states[name].state
            if state not in (State.STARTING, State.READY):
                break
            t0 = self.clock()
            lv = pr.liveness if state is State.READY else None
            if lv is not None and watch is None:
                watch = EngineWatch(lv, t0)
            check = watch is not None and watch.due(t0)
            if not check:
                res = await self._probe_fn(pr.url, pr.expect_status, pr.timeout_s)
            else:
                assert lv is not None  # a check is due only while READY, on the liveness the watch was made for
                if lv.body is not None:
                    res = await self._probe_fn(lv.url, lv.expect_status, lv.timeout_s, post=dict(lv.body), **auth)
                else:
                    res = await self._probe_fn(lv.url, lv.expect_status, lv.timeout_s, **auth)
            if res.ok and state is State.STARTING:
                ours = True
                if not pr.remote:
                    # the answer counts only if the listening socket is this process's: another run's
                    # server on the same port would make a run that could not bind look READY
                    try:
                        foreign = await asyncio.to_thread(self._foreign_fn, pr.url, mp, p.argv)
                    except Exception:  # noqa: BLE001 - an undeterminable holder counts as ours (as before)
                        foreign = None
                    if foreign is not None:
                        ours = False
                        if warned != foreign:  # said once per start
                            self.logs[name].note(foreign)
                            warned = foreign
                if ours and pr.model:  # READY = the model is listed (docs/supervision.md §2)
                    note = await models_not_listed(self._probe_fn, pr.url, pr.model, pr.timeout_s, **auth)
                    if note is not None:
                        ours = False
                        if warned != note:
                            self.logs[name].note(note)
                            warned = note
                if ours:
                    self._queue.put_nowait(P.ProbePassed(name))
            elif state is State.READY:
                if res.ok != last_ok and last_ok is not None:
                    self.logs[name].note(f"health {'ok again' if res.ok else 'failing'}: {res.detail}")
                last_ok = res.ok
                if not check:  # the readiness URL: the policy counts failures in a row (Probe.unhealthy_after)
                    self._queue.put_nowait(P.ProbePassed(name) if res.ok else P.ProbeFailed(name, str(res.detail)))
                stalled = None
                if murl:
                    m = await self._probe_fn(murl, 200, pr.timeout_s, body=True)
                    snap = None
                    if m.ok and m.body:
                        with contextlib.suppress(ValueError):
                            snap = parse_metrics(m.body, self.wall())
                    if snap is not None:
                        msg = Metrics(name, snap, rates(prev, snap) if prev else {})
                        self.last_metrics[name] = msg
                        prev = snap
                        self._publish(msg)
                        stalled = watch.metrics(snap, self.clock()) if watch is not None else None
                # the liveness check counts its own failures (after the scrape: moving counters = busy)
                detail = stalled or (watch.checked(res) if check and watch is not None else None)
                if detail:
                    self._queue.put_nowait(P.Unhealthy(name, detail))
                    break
            # 1 Hz (interval_s) until READY, then the slower READY cadence: every poll is an access
            # line in vLLM's log (Probe.ready_cadence_s)
            ready = self.policy.states[name].state is State.READY
            await asyncio.sleep(max(0.0, (pr.ready_cadence_s if ready else pr.interval_s) - (self.clock() - t0)))

    async def _wait_for_remote(self, name: str, p: ProcessSpec) -> bool:
        """Wait until every ``p.wait_for`` URL answers (docs/supervision.md §12), at most
        ``ready_timeout_s``; False when the time ran out (its Exited is posted)."""
        self.logs[name].note(f"waiting for {', '.join(p.wait_for)} (on other machines) to answer")
        pending = await wait_for_answers(
            self._probe_fn, p.wait_for, self.clock, self.clock() + p.ready_timeout_s,
            stopped=lambda: self.policy.states[name].state is not State.STARTING or name in self._pending_signal)
        if not pending or self.policy.states[name].state is not State.STARTING:
            if not pending:
                self.logs[name].note(f"{', '.join(p.wait_for)} answered")
            return True  # answered, or stopped meanwhile (the caller reports that)
        msg = f"{', '.join(pending)} did not answer within {p.ready_timeout_s:g} s"
        self.logs[name].note(f"not started: {msg}")
        cause = {"kind": "ready_timeout", "summary": f"not started: {msg}", "line": None, "retryable": True,
                 "fix": "launch the runs of the engines it routes to on their machines first "
                        "(vllm-wizard launch PLAN --node LABEL) or check those URLs"}
        self._pending_signal.pop(name, None)
        self._queue.put_nowait(P.Exited(name, 1, cause, tuple(self.logs[name].last(20))))
        return False

    async def _emergency_stop(self) -> None:
        """Cancelled from outside: stop every live tree right away (signal, short wait, SIGKILL)."""
        await asyncio.gather(
            *(mp.reap(min(EMERGENCY_STOP_TIMEOUT_S, self.spec.get(n).stop_timeout_s), self.spec.get(n).stop_signal)
              for n, mp in self.handles.items()),
            return_exceptions=True,
        )

    async def _finish(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        survivors: list[int] = []
        for name, mp in self.handles.items():
            left = [x.pid for x in mp.survivors()]
            if left:
                survivors += left
                self.logs[name].note(f"survivors after stop: {left}; killing them")
                self.shm.observe(name, mp)
                await mp.reap(2.0, 9)
            self.shm.remove(name, self.logs[name].note)
        for t in list(self._pumps.values()):
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(t), 1.0)
        for t in list(self._tasks):
            if not t.done():
                t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        pids = {pid for mp in self.handles.values() for pid in mp.known} | {mp.pid for mp in self.handles.values()}
        held = gpu_memory_held(pids, self.gpu_baseline)
        if held:
            for log in self.logs.values():
                log.note(f"GPU memory still held by stopped pids: {held}")
        self.finished = RunFinished(self.policy.outcome or "stopped", survivors, held, self.policy.stop_reason)
        for log in self.logs.values():
            log.close()
        if self._own_prober is not None:
            await self._own_prober.aclose()
        self._publish(self.finished)

