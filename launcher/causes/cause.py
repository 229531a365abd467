"""The classified failure, :class:`Cause`, and which kinds may pass on a later start (:data:`RETRYABLE`,
:func:`is_retryable`), which of those wait on something outside the process (:data:`WAITS_ON_PEER`);
:data:`CLASSIFY_LINES`, how many log lines a caller classifies.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: How many last log lines a caller should classify: a vLLM start that fails in a worker prints
#: ~120 lines of EngineCore/API-server tracebacks after the root cause (vLLM 0.32 CPU).
CLASSIFY_LINES = 400

#: Cause kinds that may pass on a later start (the policy backs off and retries them); every
#: other kind is deterministic for the given flags, model and node.
RETRYABLE: frozenset[str] = frozenset({
    "port_in_use", "network_timeout", "collective_network", "engine_dead", "killed",
    "companion_unreachable", "ready_timeout", "unhealthy", "master_unreachable", "unclassified",
    "engines_not_ready",
})

#: Retryable kinds whose root line names something outside the process that changes with time (a port
#: another process still holds, a remote host, the group's head, a companion started independently):
#: the same line on consecutive starts is expected while that peer comes up, so the policy counts them
#: as a crash loop instead of making a repeated root line FATAL at once (docs/supervision.md §3).
WAITS_ON_PEER: frozenset[str] = frozenset({"port_in_use", "network_timeout", "master_unreachable",
                                           "companion_unreachable"})


def is_retryable(kind: str | None) -> bool:
    """True when a failure of ``kind`` may pass on a later start (:data:`RETRYABLE`)."""
    return kind in RETRYABLE


@dataclass(frozen=True)
class Cause:
    """A classified failure.

    ``kind`` (stable id), one-line ``summary``, ``fix`` (advice for a person), ``line`` (the root
    error line, stripped; None when the log holds none), ``fix_args`` (flag/value strings to append
    to the command, last wins), ``drop_flags`` (flags to remove with their values), ``fix_env``
    (environment variables to set), ``facts`` (what the log says: numbers in GiB or counts, flag
    names, ports, paths, model ids) and ``retryable`` (see :data:`RETRYABLE`).
    """

    kind: str
    summary: str
    fix: str
    line: str | None = None
    fix_args: list[str] | None = None
    drop_flags: list[str] | None = None
    fix_env: dict[str, str] | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    retryable: bool | None = None

    def __post_init__(self) -> None:
        if self.retryable is None:
            object.__setattr__(self, "retryable", is_retryable(self.kind))

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return asdict(self)
