"""How the review screen lays out a plan (pure, no Textual): processes per node in launch order.

Input is the plan-json §3 dict (+ contracts §2 extras: ``phase``, ``setup``). Each process becomes a
:class:`ProcessBlock` whose ``command`` is the argv joined with POSIX shell quoting (``shlex.join``)
— the text a person can paste, and exactly the argv the launcher runs — with ``export`` lines for
its env before it. Processes keep the plan's order (the launch order, plan-json §3.6); blocks are
grouped under a "where it runs" heading: node rank, or the placeholder host of unbound processes.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

#: Where processes without a node rank run (plan-json §3.2 ``node_rank: null``).
UNBOUND_HOST = {"router": "$ROUTER_HOST", "mooncake_master": "$MOONCAKE_MASTER_IP", "mooncake_store": "store node"}


@dataclass(frozen=True)
class ProcessBlock:
    """One process as shown: ``where`` ("node 0", "instance 1 · node 0", "$ROUTER_HOST"), ``title``
    ("vllm · serve · engine"), ``exports`` (``export K=V`` lines), ``command`` (shell text)."""

    where: str
    title: str
    exports: tuple[str, ...]
    command: str
    name: str


def where_of(proc: dict) -> str:
    """The heading a process is grouped under."""
    rank = proc.get("node_rank")
    base = f"node {rank}" if rank is not None else UNBOUND_HOST.get(proc.get("role", ""), "any host")
    if proc.get("instance") is not None:
        return f"instance {proc['instance']} · {base}"
    return base


def command_text(proc: dict) -> str:
    """``shlex.join(argv)``, wrapped in the ``bash -c 'setup; exec "$@"'`` form when the process has
    a setup prelude (contracts §2)."""
    cmd = shlex.join(proc["argv"])
    if proc.get("setup"):
        prelude = shlex.quote(proc["setup"] + '; exec "$@"')
        return f"bash -c {prelude} -- {cmd}"
    return cmd


def process_blocks(plan_json: dict) -> list[ProcessBlock]:
    """Every process of ``plan_json`` in plan order."""
    blocks = []
    for proc in plan_json.get("processes", []):
        title = " · ".join(x for x in (proc["name"], proc.get("role", ""), proc.get("phase", "")) if x)
        exports = tuple(f"export {k}={shlex.quote(str(v))}" for k, v in (proc.get("env") or {}).items())
        blocks.append(ProcessBlock(where_of(proc), title, exports, command_text(proc), proc["name"]))
    return blocks


def fill_placeholders(text: str, values: dict[str, str]) -> str:
    """``text`` with each ``$NAME`` whose value is non-empty replaced (longest names first, so
    ``$PREFILL_NODE_10`` is not hit by ``$PREFILL_NODE_1``)."""
    for name in sorted(values, key=len, reverse=True):
        if values[name]:
            text = text.replace(f"${name}", values[name])
    return text
