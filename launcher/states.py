"""The per-process state machine (docs/architecture.md §3 style 3, contracts §3).

STOPPED → STARTING → READY → STOPPING → STOPPED, plus BACKOFF (waiting to restart), EXITED (ended
on its own and will not be restarted) and FATAL (crash loop, or a failure the policy gives up on).
Contracts §3 and docs/supervision.md §1 call the up state READY, and so does the code: a process
is up when its probe passes, not when a timer says so.

Every change of state goes through :func:`transition`, which refuses a move the table does not
allow (a policy bug, not a user error) and returns the :class:`ProcessEvent` describing it; the
supervisor publishes that event, so the event log is the complete history.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


class State(str, enum.Enum):
    """A supervised process's state; the value is the upper-case name (JSON-friendly)."""

    STOPPED = "STOPPED"
    STARTING = "STARTING"
    READY = "READY"
    STOPPING = "STOPPING"
    BACKOFF = "BACKOFF"
    EXITED = "EXITED"
    FATAL = "FATAL"


S = State
#: Allowed moves. STARTING→STARTING is absent: a restart always passes through another state.
ALLOWED: dict[State, frozenset[State]] = {
    S.STOPPED: frozenset({S.STARTING}),
    S.STARTING: frozenset({S.READY, S.STOPPING, S.BACKOFF, S.EXITED, S.FATAL}),
    S.READY: frozenset({S.STOPPING, S.BACKOFF, S.EXITED, S.FATAL}),
    S.STOPPING: frozenset({S.STOPPED, S.STARTING}),  # STARTING: a requested restart after the stop
    S.BACKOFF: frozenset({S.STARTING, S.STOPPED, S.FATAL}),
    S.EXITED: frozenset({S.STARTING, S.STOPPED}),
    S.FATAL: frozenset({S.STARTING, S.STOPPED}),
}

#: States in which no OS process is alive and none will start without a request.
SETTLED: frozenset[State] = frozenset({S.STOPPED, S.EXITED, S.FATAL})
#: States in which an OS process (may) exist.
LIVE: frozenset[State] = frozenset({S.STARTING, S.READY, S.STOPPING})


class InvalidTransition(RuntimeError):
    """A move the state table forbids (a supervisor bug; never caused by user input)."""


@dataclass
class ProcessEvent:
    """One state change (contracts §3): ``name`` moved from ``prev`` to ``state`` at ``ts``.

    ``ts`` is seconds on the supervisor's clock (monotonic in the supervisor; wall-clock epoch
    seconds once serialized by the run's event log). ``pid`` is the OS pid when one exists,
    ``detail`` a one-line human explanation, ``cause`` a classified failure
    (:class:`~vllm_deploy_wizard.launcher.causes.Cause` as dict) on FATAL/BACKOFF/EXITED, ``tail`` the
    last log lines on FATAL.
    """

    name: str
    state: State
    prev: State | None
    ts: float
    pid: int | None = None
    detail: str = ""
    cause: dict[str, Any] | None = None
    tail: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with ``"type": "event"``."""
        d = asdict(self)
        d["state"] = self.state.value
        d["prev"] = self.prev.value if self.prev else None
        d["type"] = "event"
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProcessEvent:
        """Inverse of :meth:`to_dict` (ignores unknown keys)."""
        return cls(
            name=d["name"],
            state=State(d["state"]),
            prev=State(d["prev"]) if d.get("prev") else None,
            ts=float(d["ts"]),
            pid=d.get("pid"),
            detail=d.get("detail", ""),
            cause=d.get("cause"),
            tail=list(d.get("tail") or []),
        )


@dataclass
class ProcessState:
    """Mutable bookkeeping of one process inside the supervisor policy.

    ``failures`` holds the clock times of recent failures (pruned to the restart window),
    ``restarts`` counts restarts performed, ``last_rc`` is the last exit status (negative = signal).
    """

    name: str
    state: State = State.STOPPED
    since: float = 0.0
    pid: int | None = None
    failures: list[float] = field(default_factory=list)
    restarts: int = 0
    last_rc: int | None = None
    cause: dict[str, Any] | None = None


def transition(
    ps: ProcessState,
    new: State,
    ts: float,
    detail: str = "",
    *,
    pid: int | None = None,
    cause: dict[str, Any] | None = None,
    tail: list[str] | None = None,
) -> ProcessEvent:
    """Move ``ps`` to ``new`` at time ``ts`` and return the event describing it.

    Raises :class:`InvalidTransition` when :data:`ALLOWED` forbids the move.
    """
    if new not in ALLOWED[ps.state]:
        raise InvalidTransition(f"{ps.name}: {ps.state.value} → {new.value} is not allowed")
    prev = ps.state
    ps.state = new
    ps.since = ts
    if pid is not None:
        ps.pid = pid
    elif new is State.STARTING:
        ps.pid = None  # entered before the spawn: a restart's old process is gone, the new one has no pid yet
    if new in SETTLED or new is State.BACKOFF:
        pid_out = ps.pid
        ps.pid = None
    else:
        pid_out = ps.pid
    # the cause of the LAST failure; a start, a requested stop/restart or a clean exit clears it
    ps.cause = cause
    return ProcessEvent(
        name=ps.name, state=new, prev=prev, ts=ts, pid=pid_out, detail=detail, cause=cause, tail=list(tail or [])
    )
