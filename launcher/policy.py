"""Supervision policy: every decision about starting, restarting and stopping, in one place.

"Events in, decisions in one place" (docs/architecture.md §3 style 4, honcho): readers and timers turn OS facts
into the small input events below; :class:`Policy` consumes them one at a time with the current
clock value and answers with :class:`Action` objects for the runtime
(:class:`~vllm_deploy_wizard.launcher.supervisor.Supervisor`) to carry out. The policy never touches the OS
and never reads a clock itself, so tests replay scripted histories with a fake clock.

Rules (docs/supervision.md):

* Start in phase order; a process starts when every name in its ``depends_on`` is READY (or
  EXITED with status 0 — a finished one-shot job). READY = the probe passed (or, without a probe,
  the process is running). A process still STARTING after ``ready_timeout_s`` is stopped and
  counted as a failure. A READY process whose liveness probe failed its threshold in a row
  (:class:`Unhealthy`; docs/multi-node.md §2) is stopped the same way, a failure with the cause
  ``unhealthy``.
* An exit that is not asked for is a failure (``on-failure``: non-zero status only; ``always``:
  any exit) — except for a server (a process with a readiness probe: vLLM, router, LMCache
  server), whose every unrequested exit is a failure, status 0 included: vLLM's API server exits 0
  after its EngineCore died. One-shot processes (no probe) exiting 0 are done.
* A deterministic failure (the cause is not retryable, :data:`~vllm_deploy_wizard.launcher.causes.RETRYABLE`:
  argument or config validation, a missing file or model, unsupported, divisibility, memory sizing
  for the given flags) of a start that never became READY (by its probe; a process without one:
  that ran less than :data:`~vllm_deploy_wizard.launcher.timeouts.STABLE_RUN_S`) is FATAL at once, with its cause and
  fix: it would fail the same way on every restart. A transient one (a port race, a network timeout, an
  engine that died without a root cause) — and any failure after the process was READY (under
  load) — is counted: failures within ``window_s``; the restart waits :meth:`RestartPolicy.delay`
  (exponential backoff) in BACKOFF; ``max_failures`` within the window is a crash loop → FATAL
  with the cause and last log lines. ``never`` → EXITED (status 0) or FATAL (non-zero).
* Retry only what can change: a transient failure whose root line (the cause's ``line``, pids and
  timestamps aside: :func:`~vllm_deploy_wizard.launcher.causes.root_signature`) is the same as the
  previous start's, both before READY, is FATAL at once — the restart changed nothing. Not for symptoms
  (an engine that died, a signal), nor for kinds that wait on a peer coming up
  (:data:`~vllm_deploy_wizard.launcher.causes.WAITS_ON_PEER`: a port still held, a remote host, the
  group's head), which the crash-loop count bounds. Time-independent errors (ValueError, argparse and
  pydantic errors, …) come classified as not retryable, so they are FATAL after one start.
* A READY process whose health check fails ``Probe.unhealthy_after`` times in a row (default
  :data:`~vllm_deploy_wizard.launcher.timeouts.UNHEALTHY_AFTER`) is stopped (stop signal, SIGKILL of
  its tree after ``stop_timeout_s``) and its exit counts as a (transient) failure: ``unhealthy``.
  A passing poll resets the count. A probe with a ``liveness`` check counts its own failures
  (:class:`Unhealthy`, ``failure_threshold``) and stops it the same way.
* FATAL stops the whole run: what depends on a dead engine is useless, and a half-up deployment
  must not look healthy.
* Stop: phases are stopped in reverse launch order (router before engine before companions); each
  process gets its stop signal, then SIGKILL of its tree after ``stop_timeout_s`` when it is READY,
  after the short ``starting_stop_timeout_s`` (3 s) when it is still STARTING (a ready timeout
  too; :meth:`~vllm_deploy_wizard.launcher.spec.ProcessSpec.stop_grace_s`). A process in BACKOFF
  just goes STOPPED (its timer is cancelled).
* Restart on request: a live process is stopped and started again; a settled one starts afresh
  with its failure count cleared.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vllm_deploy_wizard.launcher.causes import SYMPTOM, WAITS_ON_PEER, cut_line, is_retryable, root_signature
from vllm_deploy_wizard.launcher.spec import PHASES, RunSpec
from vllm_deploy_wizard.launcher.states import LIVE, SETTLED, ProcessEvent, ProcessState, State, transition
from vllm_deploy_wizard.launcher.timeouts import STABLE_RUN_S

# ---------------------------------------------------------------- input events


@dataclass(frozen=True)
class Started:
    """The OS process of ``name`` exists with ``pid``."""

    name: str
    pid: int


@dataclass(frozen=True)
class Exited:
    """The main process of ``name`` ended with ``rc`` (negative = killed by that signal).

    ``cause`` is the classified failure (causes.Cause as dict) or None, ``tail`` the last log lines.
    """

    name: str
    rc: int
    cause: dict[str, Any] | None = None
    tail: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbePassed:
    """The readiness probe of ``name`` answered the expected status."""

    name: str


@dataclass(frozen=True)
class ProbeFailed:
    """A health poll of the READY process ``name`` failed (``detail``: what the probe saw)."""

    name: str
    detail: str = ""


@dataclass(frozen=True)
class Unhealthy:
    """The liveness probe of READY ``name`` failed its threshold in a row; ``detail`` says how."""

    name: str
    detail: str = ""


@dataclass(frozen=True)
class TimerFired:
    """A timer set by :class:`StartTimer` elapsed; ``kind`` is ``ready``, ``backoff`` or ``kill``."""

    name: str
    kind: str


@dataclass(frozen=True)
class StopRequested:
    """Stop the whole run (user request, SIGTERM to the supervisor, …)."""

    reason: str = "stop requested"


@dataclass(frozen=True)
class RestartRequested:
    """Restart the process ``name`` now (user request)."""

    name: str


Event = Started | Exited | ProbePassed | ProbeFailed | Unhealthy | TimerFired | StopRequested | RestartRequested

# ---------------------------------------------------------------- actions


@dataclass(frozen=True)
class Action:
    """Base of what the policy asks the runtime to do."""

    name: str


@dataclass(frozen=True)
class Spawn(Action):
    """Start the OS process of ``name`` (after its old ports are free)."""


@dataclass(frozen=True)
class ProbeHealth(Action):
    """Begin polling the readiness probe of ``name``."""


@dataclass(frozen=True)
class Signal(Action):
    """Send ``sig`` to the process group/tree of ``name`` (descendants collected first)."""

    sig: int = int(signal.SIGTERM)


@dataclass(frozen=True)
class KillTree(Action):
    """SIGKILL every process of the tree of ``name``."""


@dataclass(frozen=True)
class StartTimer(Action):
    """Fire ``TimerFired(name, kind)`` in ``delay`` seconds (replacing a timer of that kind)."""

    kind: str = ""
    delay: float = 0.0


@dataclass(frozen=True)
class CancelTimer(Action):
    """Cancel the timer ``kind`` of ``name`` if set."""

    kind: str = ""


@dataclass(frozen=True)
class Finished(Action):
    """Nothing is alive or pending any more. ``name`` is the outcome: stopped, exited or fatal."""


@dataclass
class _Extra:
    timed_out: bool = False
    restart_after_stop: bool = False
    killed: bool = False
    was_ready: bool = False
    running_since: float | None = None
    failed_polls: int = 0
    unhealthy: str = ""


@dataclass
class Policy:
    """Decision core for one run. Feed :meth:`start` once, then :meth:`handle` per event.

    ``emit`` receives every :class:`ProcessEvent` (state change). Times are seconds on the caller's
    clock (any monotonic origin). ``outcome`` is set once :class:`Finished` was returned.
    """

    spec: RunSpec
    emit: Callable[[ProcessEvent], None] = lambda ev: None
    states: dict[str, ProcessState] = field(init=False)
    stopping: bool = field(default=False, init=False)
    stop_reason: str = field(default="", init=False)
    outcome: str | None = field(default=None, init=False)
    _extra: dict[str, _Extra] = field(init=False)
    #: per process: the root-line signature of its last failed start before READY (None: none, or READY since)
    _last_root: dict[str, str | None] = field(init=False)

    def __post_init__(self) -> None:
        self.states = {p.name: ProcessState(p.name) for p in self.spec.processes}
        self._extra = {p.name: _Extra() for p in self.spec.processes}
        self._last_root = {p.name: None for p in self.spec.processes}

    # -------------------------------------------------------------- entry points

    def start(self, now: float) -> list[Action]:
        """Begin the run: start every process whose dependencies are already satisfied."""
        return self._start_eligible(now)

    def handle(self, ev: Event, now: float) -> list[Action]:
        """Apply one input event at clock time ``now``; return the actions to carry out, in order."""
        if self.outcome is not None:
            return []
        if isinstance(ev, StopRequested):
            if not self.stopping:
                self.stopping, self.stop_reason = True, ev.reason
            return self._continue_stop(now)
        if isinstance(ev, RestartRequested):
            return self._restart(ev.name, now)
        ps = self.states.get(ev.name)
        if ps is None:
            return []
        if isinstance(ev, Started):
            return self._started(ps, ev.pid, now)
        if isinstance(ev, ProbePassed):
            self._extra[ps.name].failed_polls = 0
            if ps.state is State.STARTING:
                self._extra[ps.name].was_ready = True
                self._go(ps, State.READY, now, "probe passed")
                return [CancelTimer(ps.name, "ready"), *self._start_eligible(now)]
            return []
        if isinstance(ev, ProbeFailed):
            return self._probe_failed(ps, ev, now)
        if isinstance(ev, Unhealthy):
            if ps.state is State.READY and not self.stopping:
                p = self.spec.get(ps.name)
                self._extra[ps.name].unhealthy = ev.detail or "liveness probe failing"
                return [Signal(ps.name, p.stop_signal), StartTimer(ps.name, "kill", p.stop_timeout_s)]
            return []
        if isinstance(ev, Exited):
            return self._exited(ps, ev, now)
        if isinstance(ev, TimerFired):
            return self._timer(ps, ev.kind, now)
        return []

    # -------------------------------------------------------------- helpers

    def _go(self, ps: ProcessState, new: State, now: float, detail: str = "", **kw: Any) -> None:
        self.emit(transition(ps, new, now, detail, **kw))

    def _deps_ok(self, name: str) -> bool:
        for dep in self.spec.get(name).depends_on:
            d = self.states[dep]
            if not (d.state is State.READY or (d.state is State.EXITED and d.last_rc == 0)):
                return False
        return True

    def _launch(self, ps: ProcessState, now: float, detail: str) -> list[Action]:
        p = self.spec.get(ps.name)
        self._extra[ps.name] = _Extra()
        self._go(ps, State.STARTING, now, detail)
        acts: list[Action] = [Spawn(ps.name)]
        if p.probe is not None:
            acts.append(StartTimer(ps.name, "ready", p.ready_timeout_s))
        return acts

    def _start_eligible(self, now: float) -> list[Action]:
        if self.stopping:
            return []
        acts: list[Action] = []
        for p in self.spec.processes:
            ps = self.states[p.name]
            if ps.state is State.STOPPED and ps.restarts == 0 and not ps.failures and self._deps_ok(p.name):
                acts += self._launch(ps, now, "dependencies ready" if p.depends_on else "starting")
        return acts + self._check_finished()

    def _started(self, ps: ProcessState, pid: int, now: float) -> list[Action]:
        if ps.state is not State.STARTING:
            return []
        ps.pid = pid
        if self.spec.get(ps.name).probe is None:
            self._extra[ps.name].running_since = now
            self._go(ps, State.READY, now, "running (no probe)", pid=pid)
            return self._start_eligible(now)
        return [ProbeHealth(ps.name)]

    def _exited(self, ps: ProcessState, ev: Exited, now: float) -> list[Action]:
        p = self.spec.get(ps.name)
        ex = self._extra[ps.name]
        ps.last_rc = ev.rc
        acts: list[Action] = [CancelTimer(ps.name, "ready"), CancelTimer(ps.name, "kill")]
        if ps.state is State.STOPPING:
            self._last_root[ps.name] = None
            if ex.restart_after_stop and not self.stopping:
                ps.failures.clear()
                ps.restarts += 1
                acts += self._launch(ps, now, "restart requested")
                return acts
            self._go(ps, State.STOPPED, now, f"stopped (status {ev.rc}){' after SIGKILL' if ex.killed else ''}")
            return acts + (self._continue_stop(now) if self.stopping else self._check_finished())
        if ps.state not in (State.STARTING, State.READY):
            return []  # a stale report (already settled)
        cause = ev.cause
        tail = [cut_line(x) for x in ev.tail]  # a 2 MB line is cut for display (the log file keeps it)
        # our own SIGKILL after the timeout is no out-of-memory kill
        if ex.timed_out and (cause is None or cause.get("kind") in ("unclassified", "killed")):
            cause = {
                "kind": "ready_timeout",
                "summary": f"not ready within {p.ready_timeout_s:g} s",
                "fix": f"raise ready_timeout_s for {ps.name!r} or check its log for a stall",
                "line": None,
            }
            if p.role == "head":  # a multi-node head serves only once every worker node joined
                cause["summary"] += ("; a multi-node head is ready only once every worker node has joined its "
                                     "group — a worker did not (wrong $HEAD_IP or interface, master port blocked, "
                                     "or its run is not started)")
                cause["fix"] = ("run `vllm-wizard status` on each worker node for its cause; check $HEAD_IP, "
                                "$IFACE_NAME and that the master port is free and reachable (docs/multi-node.md §2)")
        if ex.unhealthy and (cause is None or cause.get("kind") in ("unclassified", "killed")):
            cause = {
                "kind": "unhealthy",
                "summary": f"stopped while READY: {ex.unhealthy}",
                "fix": f"read {ps.name!r}'s log around the failures (`vllm-wizard logs`) and check what it depends on "
                       "(for a multi-node group: every node's run, docs/multi-node.md §2); it is restarted under its "
                       "restart policy",
                "line": None, "retryable": True,
            }
        server = p.probe is not None
        what = ("not ready in time" if ex.timed_out else "stopped: liveness failing" if ex.unhealthy
                else f"exited with status {ev.rc}")
        if server and ev.rc == 0 and not ex.timed_out:
            what += " (a server must keep running)"
        # a server (a process with a readiness probe: vLLM, router, LMCache server) that exits without
        # being asked to has failed whatever its status — vLLM's API server exits 0 after EngineDeadError
        failed = ev.rc != 0 or ex.timed_out or server or bool(ex.unhealthy)
        mode = p.restart.mode
        if mode == "never" or (mode == "on-failure" and not failed):
            if failed:
                self._go(ps, State.FATAL, now, f"{what}; restart policy 'never'", cause=cause, tail=tail)
                return acts + self._fatal(ps.name, now)
            self._go(ps, State.EXITED, now, what)
            return acts + self._start_eligible(now)
        # no cause at all (nothing classified it): unknown, so treated as transient
        retryable = True if cause is None else cause.get("retryable")
        if retryable is None and cause is not None:
            retryable = is_retryable(cause.get("kind"))
        # READY by its probe, or (no probe) running for STABLE_RUN_S: a failure under load, not at start
        stable = ex.was_ready or (ex.running_since is not None and now - ex.running_since >= STABLE_RUN_S)
        if not retryable and not stable and not ex.timed_out:
            ps.failures = [*ps.failures, now]
            self._go(ps, State.FATAL, now, f"{what}; deterministic failure ({(cause or {}).get('kind')}): "
                     "not restarting, it would fail the same way", cause=cause, tail=tail)
            return acts + self._fatal(ps.name, now)
        root = self._repeatable_root(cause) if not stable and not ex.timed_out else None
        repeated = root is not None and root == self._last_root[ps.name]
        self._last_root[ps.name] = root
        if repeated:
            ps.failures = [*ps.failures, now]
            self._go(ps, State.FATAL, now, f"{what}; the same root cause as the previous start, both before READY "
                     f"({(cause or {}).get('kind')}): a restart changes nothing", cause=cause, tail=tail)
            return acts + self._fatal(ps.name, now)
        window = p.restart.window_s
        ps.failures = [t for t in ps.failures if now - t < window] + [now]
        n = len(ps.failures)
        if n >= p.restart.max_failures:
            self._go(
                ps, State.FATAL, now, f"{what}; crash loop: {n} failures within {window:g} s", cause=cause, tail=tail
            )
            return acts + self._fatal(ps.name, now)
        delay = p.restart.delay(n)
        self._go(ps, State.BACKOFF, now, f"{what}; restarting in {delay:g} s (failure {n}/{p.restart.max_failures})",
                 cause=cause, tail=tail)
        return acts + [StartTimer(ps.name, "backoff", delay)]

    @staticmethod
    def _repeatable_root(cause: dict[str, Any] | None) -> str | None:
        """The root-line signature two failed starts are compared by, or None when the cause has no root
        line, is a symptom, our own kill, or waits on a peer (those repeat while the peer comes up)."""
        if not cause or cause.get("kind") in SYMPTOM or cause.get("kind") in WAITS_ON_PEER:
            return None
        if cause.get("kind") in ("killed", "ready_timeout", "unhealthy"):
            return None
        return root_signature(cause.get("line"))

    def _fatal(self, name: str, now: float) -> list[Action]:
        if not self.stopping:
            self.stopping, self.stop_reason = True, f"{name} is FATAL"
        return self._continue_stop(now)

    def _timer(self, ps: ProcessState, kind: str, now: float) -> list[Action]:
        p = self.spec.get(ps.name)
        ex = self._extra[ps.name]
        if kind == "backoff" and ps.state is State.BACKOFF and not self.stopping:
            ps.restarts += 1
            return self._launch(ps, now, f"restart {ps.restarts}")
        if kind == "ready" and ps.state is State.STARTING:
            ex.timed_out = True
            return [Signal(ps.name, p.stop_signal), StartTimer(ps.name, "kill", p.stop_grace_s(ready=False))]
        if kind == "kill" and (ps.state is State.STOPPING or (ps.state is State.STARTING and ex.timed_out)
                               or (ps.state is State.READY and ex.unhealthy)):
            ex.killed = True
            return [KillTree(ps.name)]
        return []

    def _probe_failed(self, ps: ProcessState, ev: ProbeFailed, now: float) -> list[Action]:
        p = self.spec.get(ps.name)
        ex = self._extra[ps.name]
        if ps.state is not State.READY or p.probe is None or ex.unhealthy or self.stopping:
            return []
        ex.failed_polls += 1
        if ex.failed_polls < p.probe.unhealthy_after:
            return []
        ex.unhealthy = f"{ex.failed_polls} health checks in a row failed ({ev.detail or 'no answer'})"
        return [Signal(ps.name, p.stop_signal), StartTimer(ps.name, "kill", p.stop_timeout_s)]

    def _stop_one(self, ps: ProcessState, now: float, detail: str) -> list[Action]:
        p = self.spec.get(ps.name)
        # a STARTING vLLM ignores SIGTERM until its engine is up: the short grace (docs/supervision.md §6)
        grace = p.stop_grace_s(ready=ps.state is State.READY)
        self._go(ps, State.STOPPING, now, detail)
        return [
            CancelTimer(ps.name, "ready"),
            Signal(ps.name, p.stop_signal),
            StartTimer(ps.name, "kill", grace),
        ]

    def _continue_stop(self, now: float) -> list[Action]:
        acts: list[Action] = []
        for p in self.spec.processes:
            ps = self.states[p.name]
            if ps.state is State.BACKOFF:
                acts.append(CancelTimer(p.name, "backoff"))
                self._go(ps, State.STOPPED, now, f"{self.stop_reason}; pending restart cancelled")
        live = [p for p in self.spec.processes if self.states[p.name].state in LIVE]
        if not live:
            return acts + self._check_finished()
        if any(self.states[p.name].state is State.STOPPING for p in live):
            return acts  # wait for the phase being stopped
        last = max(PHASES.index(p.phase) for p in live)
        for p in live:
            if PHASES.index(p.phase) == last:
                acts += self._stop_one(self.states[p.name], now, self.stop_reason)
        return acts

    def _restart(self, name: str, now: float) -> list[Action]:
        ps = self.states.get(name)
        if ps is None or self.stopping:
            return []
        if ps.state in (State.STARTING, State.READY):
            self._extra[name].restart_after_stop = True
            return self._stop_one(ps, now, "restart requested")
        if ps.state is State.BACKOFF:
            ps.failures.clear()
            self._last_root[name] = None
            ps.restarts += 1
            return [CancelTimer(name, "backoff"), *self._launch(ps, now, "restart requested")]
        if ps.state in SETTLED:
            ps.failures.clear()
            self._last_root[name] = None
            ps.restarts += 1
            return self._launch(ps, now, "restart requested")
        return []

    def _check_finished(self) -> list[Action]:
        if self.outcome is not None:
            return []
        states = [s.state for s in self.states.values()]
        if not all(s in SETTLED for s in states):
            return []
        if not self.stopping and any(
            s.state is State.STOPPED and self._deps_ok(s.name) for s in self.states.values()
        ):
            return []  # something can still start (should have been started already)
        if any(s is State.FATAL for s in states):
            self.outcome = "fatal"
        elif self.stopping:
            self.outcome = "stopped"
        else:
            self.outcome = "exited"
        return [Finished(self.outcome)]
