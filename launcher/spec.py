"""What to run: :class:`ProcessSpec` / :class:`RunSpec`, their :class:`Probe` and :class:`RestartPolicy`
(contracts §2, after the plan file is read — :mod:`~vllm_deploy_wizard.launcher.plan_file` builds them).

A :class:`RunSpec` refuses at construction, every problem at once: a process name used twice,
``depends_on`` naming an unknown process (with did-you-mean), a process depending on itself, and a
dependency cycle (these would otherwise wait forever).
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.timeouts import (
    READY_TIMEOUT_S,
    STARTING_STOP_TIMEOUT_S,
    STOP_TIMEOUT_S,
    UNHEALTHY_AFTER,
)

#: Launch phases in order (contracts §2).
PHASES: tuple[str, ...] = ("infra", "before", "engine", "after")

#: Restart modes: restart on any exit, only on a non-zero exit, or never.
RESTART_MODES = ("always", "on-failure", "never")


#: Default seconds between health polls (and vLLM ``/metrics`` scrapes) once a process is READY.
READY_INTERVAL_S = 5.0


@dataclass(frozen=True)
class Liveness:
    """What a READY process must keep answering (docs/supervision.md §10, docs/multi-node.md §2): ``url``
    (``GET``, or ``POST`` of the JSON ``body`` when one is given) with ``expect_status``;
    ``failure_threshold`` failed checks in a row (each with ``timeout_s`` seconds) stop the process as
    a failure, restarted under its restart policy with the cause ``unhealthy``.

    ``interval_s``: seconds between the starts of two checks (a low rate: a completion reaches the
    engine core and costs a scheduler step); None = every poll at the READY cadence of its probe,
    the check then replacing the readiness poll (as multi-node groups use it). With a number the
    readiness URL keeps being polled at the READY cadence and the check runs in place of the poll
    that falls due after ``interval_s``.

    ``stall_s``: also unhealthy when vLLM's ``/metrics`` show requests running or waiting while the
    prompt and generation token counters stayed the same for ``stall_s`` seconds (None = off). A
    check that timed out while those counters moved is a busy engine, not a hung one: it does not
    count as failed.
    """

    url: str
    expect_status: int = 200
    body: Mapping[str, Any] | None = None
    timeout_s: float = 10.0
    failure_threshold: int = 3
    interval_s: float | None = None
    stall_s: float | None = None


@dataclass(frozen=True)
class Probe:
    """Readiness/health probe: ``GET url`` must answer ``expect_status``.

    Cadence (seconds between the start of one poll and the next; a slow poll stretches the
    cycle, polls never overlap): ``interval_s`` (default 1 s) while the process is STARTING, so
    READY is seen within about a second; then, while READY, ``ready_interval_s`` — every poll
    is an access-log line in a real vLLM (and ``/metrics`` is scraped alongside), so the
    default is the slower of ``interval_s`` and :data:`READY_INTERVAL_S` (5 s). Set
    ``ready_interval_s`` (plan file: ``health.ready_interval_s``) to poll faster or slower while
    READY. ``timeout_s`` is the per-request timeout. ``unhealthy_after``: consecutive failed polls
    while READY after which the policy restarts the process (plan file: ``health.unhealthy_after``).

    ``liveness`` (plan file: ``health.liveness``) replaces the readiness poll while READY and acts
    on failures (:class:`Liveness`); without it ``unhealthy_after`` failed readiness polls in a row
    do.
    ``remote`` (plan file: ``health.remote``): the URL is answered by another machine's server by
    design (a multi-node worker probes its head), so the answer counts without the listening
    socket belonging to this process.
    ``model`` (plan file: ``health.model``): READY additionally needs ``GET /v1/models`` on the same
    server to list this model id (docs/supervision.md §2); None = the readiness URL alone.
    """

    url: str
    expect_status: int = 200
    interval_s: float = 1.0
    timeout_s: float = 2.0
    ready_interval_s: float | None = None
    unhealthy_after: int = UNHEALTHY_AFTER
    liveness: Liveness | None = None
    remote: bool = False
    model: str | None = None

    @property
    def ready_cadence_s(self) -> float:
        """Seconds between polls while READY: ``ready_interval_s`` if set, else ``max(interval_s, 5)``."""
        if self.ready_interval_s is not None:
            return self.ready_interval_s
        return max(self.interval_s, READY_INTERVAL_S)


@dataclass(frozen=True)
class RestartPolicy:
    """When and how fast to restart a process that exited on its own (docs/supervision.md).

    Backoff before restart *n* (1-based count of failures in the window) is
    ``min(backoff_max_s, backoff_initial_s * backoff_factor ** (n - 1))`` seconds. ``max_failures``
    failures within ``window_s`` seconds is a crash loop → FATAL.
    """

    mode: str = "on-failure"
    backoff_initial_s: float = 1.0
    backoff_factor: float = 2.0
    backoff_max_s: float = 30.0
    max_failures: int = 3
    window_s: float = 300.0

    def delay(self, failures: int) -> float:
        """Seconds to wait before the restart following ``failures`` (≥ 1) recent failures."""
        return min(self.backoff_max_s, self.backoff_initial_s * self.backoff_factor ** max(0, failures - 1))


@dataclass(frozen=True)
class ProcessSpec:
    """One supervised process (contracts §2 process entry, after placeholder filling).

    ``argv`` is executed directly (never through a shell) unless ``setup`` is set, in which case
    ``bash -c 'setup; exec "$@"' bash argv…`` runs (docs/architecture.md §4, launch). ``depends_on`` is resolved:
    the names that must be READY before this one starts. ``ports`` are every TCP port it listens
    on (preflight). ``probe`` None = READY as soon as it is running. Timeouts are seconds.

    Stop grace (docs/supervision.md §6): ``stop_timeout_s`` for a READY process, the shorter
    ``starting_stop_timeout_s`` for one still STARTING (vLLM ignores SIGTERM while it initializes).
    ``wait_for``: health URLs served on other machines (the engines a router routes to) that must
    answer before this process starts, waited for at most ``ready_timeout_s`` (docs/supervision.md §12).
    """

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    phase: str = "engine"
    role: str | None = None
    depends_on: tuple[str, ...] = ()
    probe: Probe | None = None
    restart: RestartPolicy = RestartPolicy()
    stop_signal: int = int(signal.SIGTERM)
    stop_timeout_s: float = STOP_TIMEOUT_S
    ready_timeout_s: float = READY_TIMEOUT_S
    ports: tuple[int, ...] = ()
    setup: str | None = None
    starting_stop_timeout_s: float = STARTING_STOP_TIMEOUT_S
    wait_for: tuple[str, ...] = ()

    def stop_grace_s(self, ready: bool) -> float:
        """Seconds between the stop signal and SIGKILL: ``stop_timeout_s`` once READY, else the
        shorter of it and ``starting_stop_timeout_s``."""
        return self.stop_timeout_s if ready else min(self.stop_timeout_s, self.starting_stop_timeout_s)

    def command(self) -> list[str]:
        """The argv actually executed: ``argv``, or the bash wrapper running ``setup`` first."""
        if self.setup:
            return ["bash", "-c", f'{self.setup}\nexec "$@"', "bash", *self.argv]
        return list(self.argv)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``from_dict`` inverse); env values included as given — redact before storing."""
        data = asdict(self)
        data["env"] = dict(self.env)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcessSpec:
        """Rebuild from :meth:`to_dict` output."""
        d = dict(data)
        d["argv"] = tuple(d["argv"])
        d["depends_on"] = tuple(d.get("depends_on", ()))
        d["ports"] = tuple(d.get("ports", ()))
        d["wait_for"] = tuple(d.get("wait_for", ()))
        if d.get("probe"):
            pr = dict(d["probe"])
            pr["liveness"] = Liveness(**pr["liveness"]) if pr.get("liveness") else None
            d["probe"] = Probe(**pr)
        else:
            d["probe"] = None
        d["restart"] = RestartPolicy(**d.get("restart", {}))
        return cls(**d)


@dataclass(frozen=True)
class ConfigFile:
    """A file the plan's processes read, written owner-only (0600) before any of them starts
    (:func:`~vllm_deploy_wizard.launcher.config_files.write_config_files`, docs/plan-file.md §6.3):
    ``name`` the plan's ``config_files`` key (``MOONCAKE_CONFIG_PATH``, the variable naming its path),
    ``path`` where it goes (absolute, or relative to the launch's working directory), ``text`` its
    content with every placeholder filled."""

    name: str
    path: str
    text: str


@dataclass(frozen=True)
class RunSpec:
    """Everything one launch supervises: processes in launch order, plus where it came from.

    ``min_vllm_version`` (from the plan, if any) is checked by preflight; ``source`` is the plan
    file path (or None); ``node_rank`` the node this run is for.
    """

    processes: tuple[ProcessSpec, ...]
    source: str | None = None
    node_rank: int = 0
    min_vllm_version: str | None = None
    node: str | None = None
    """The plan's ``node`` label this run is for, when selected by label."""
    config_files: tuple[ConfigFile, ...] = ()
    """The plan's config files this machine's processes read (written before they start)."""

    def __post_init__(self) -> None:
        names = [p.name for p in self.processes]
        dup = sorted({n for n in names if names.count(n) > 1})
        problems = [duplicate_names_problem(self.source or "plan", dup)] if dup else []
        problems += [f"{self.source or 'plan'}: {x}"
                     for x in dependency_problems({p.name: p.depends_on for p in self.processes})]
        if problems:
            raise LaunchError("\n".join(problems))

    def get(self, name: str) -> ProcessSpec:
        """The process called ``name``; ``KeyError`` when absent."""
        for p in self.processes:
            if p.name == name:
                return p
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (inverse: :meth:`from_dict`)."""
        return {
            "processes": [p.to_dict() for p in self.processes],
            "source": self.source,
            "node_rank": self.node_rank,
            "min_vllm_version": self.min_vllm_version,
            "node": self.node,
            "config_files": [asdict(f) for f in self.config_files],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSpec:
        """Rebuild from :meth:`to_dict` output."""
        return cls(
            processes=tuple(ProcessSpec.from_dict(p) for p in data["processes"]),
            source=data.get("source"),
            node_rank=int(data.get("node_rank", 0)),
            min_vllm_version=data.get("min_vllm_version"),
            node=data.get("node"),
            config_files=tuple(ConfigFile(**f) for f in data.get("config_files") or ()),
        )


def duplicate_names_problem(source: str, repeated: list[str]) -> str:
    """The problem line for process names used more than once (``repeated``, sorted)."""
    return f"{source}: process names must be unique; repeated: {', '.join(repeated)}"


def dependency_problems(deps: Mapping[str, Iterable[str]]) -> list[str]:
    """Problems of a ``{name: depends_on}`` graph, one sentence each (empty list = fine).

    A name that is not a process (with the closest process names as "did you mean"), a process
    that depends on itself, and every dependency cycle (``a → b → a``) — any of them would leave
    processes waiting forever for a dependency that can never be READY, so the plan is refused
    at load instead.
    """
    from vllm_deploy_wizard.common.suggest import did_you_mean

    names = list(deps)
    problems: list[str] = []
    for name, ds in deps.items():
        for d in ds:
            if d == name:
                problems.append(f"process {name!r} depends on itself (depends_on: [{d}]); "
                                "remove it from its depends_on")
            elif d not in deps:
                hint = did_you_mean(d, names, n=3)
                problems.append(f"process {name!r} depends_on unknown {d!r}{hint}; known: {', '.join(names)}")
    # cycles (self-loops are reported above): depth-first search, colouring nodes
    colour: dict[str, int] = {}
    path: list[str] = []
    seen_cycles: set[frozenset[str]] = set()

    def visit(n: str) -> None:
        colour[n] = 1
        path.append(n)
        for d in deps.get(n, ()):
            if d == n or d not in deps:
                continue
            if colour.get(d) == 1:
                cycle = path[path.index(d):] + [d]
                key = frozenset(cycle)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    problems.append(f"dependency cycle: {' → '.join(cycle)} (each waits for the next to be READY); "
                                    "remove one of these depends_on entries")
            elif colour.get(d) is None:
                visit(d)
        path.pop()
        colour[n] = 2

    for n in names:
        if n not in colour:
            visit(n)
    return problems
