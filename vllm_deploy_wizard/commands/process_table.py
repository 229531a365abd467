"""The process table of one run as printed lines, shared by ``status`` and ``status --all-nodes``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vllm_deploy_wizard.common import tables


def process_lines(processes: list[dict[str, Any]], *, logs: str, colour: bool = False,
                  state: Callable[[dict[str, Any]], str] | None = None) -> list[str]:
    """The process table of one run, as printed lines: one aligned row per process of ``processes``
    (plan-state dicts: name, state, pid, ports, restarts) through :func:`tables.render`, each followed
    by its cause, fix and log file when it has a cause. ``logs`` is the command that shows the run's
    logs (the process name is appended to it); ``state(p)`` is the state to show instead of the
    recorded one; ``colour`` styles the states."""
    cells = []
    for p in processes:
        ports = ",".join(str(x) for x in p.get("ports") or [])
        cells.append([p["name"], state(p) if state else p["state"], f"pid={p.get('pid') or '-'}",
                      f"ports={ports or '-'}", f"restarts={p.get('restarts', 0)}"])
    out = []
    # strict=False: a name or state holding a newline renders as more lines than processes
    for p, line in zip(processes, tables.render(cells, colour=colour).splitlines(), strict=False):
        out.append(line)
        cause = p.get("cause") or {}
        if cause.get("summary"):
            fix = f" — fix: {cause['fix']}" if cause.get("fix") else ""
            out.append(f"      cause: {cause['summary']}{fix}")
            if p.get("log"):
                out.append(f"      log: {p['log']}  ({logs} {p['name']})")
    return out
