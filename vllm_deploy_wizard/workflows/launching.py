"""Launching on this node: the rules that join detection and the launcher, for the CLI and the wizard.

The launcher reads plan files as data and never imports detect (docs/architecture.md §2); what a
launch needs from this host — the placeholder values detection gives (``$HEAD_IP``, ``$IFACE_NAME``
…), this node's facts for the preflight, IAXL host readiness — is joined here, once, and both
``vllm-wizard launch`` and the wizard's launch call it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO


def parse_values(items: list[str]) -> dict[str, str]:
    """``["A=1", "B=x=y"]`` → ``{"A": "1", "B": "x=y"}``; ``LaunchError`` naming a malformed item."""
    from vllm_deploy_wizard.common.errors import LaunchError

    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().lstrip("$")
        if not sep or not name:
            raise LaunchError(f"--set {item!r}: expected VAR=VALUE, e.g. --set HEAD_IP=10.0.0.1")
        out[name] = value
    return out


def host_facts() -> Any:
    from vllm_deploy_wizard.detect import detect

    return detect().host


def detected_values(names: list[str], given: dict[str, str], node_rank: int,
                      host_facts: Callable[[], Any] = host_facts) -> dict[str, str]:
    """The values detection gives the placeholders ``names`` not in ``given`` — the launcher's rule
    (``launcher.launch.placeholder_values``) without the plan's own defaults; ``host_facts`` is
    called only when one of them needs this host's facts. A fact detection could not find is left out."""
    from vllm_deploy_wizard.launcher.launch import node_facts, placeholder_values, self_facts_needed

    open_names = [n for n in names if n not in given]
    if not self_facts_needed(open_names, node_rank):
        return {}
    return {n: v for n, v in placeholder_values(open_names, node_facts(host_facts()), node_rank,
                                                head=given.get("HEAD_IP")).items() if v}


def resolve_values(data: Any, items: list[str], node_rank: int, err: TextIO = sys.stderr,
                   host_facts: Callable[[], Any] = host_facts, node: str | None = None) -> dict[str, str]:
    """The placeholder values for plan-file ``data``: ``--set`` ``items``, then detected defaults,
    then the plan's own ``placeholder_defaults`` (contracts §2: docs/synthesis.md §2.13's
    ``ROUTER_HOST``/``ROUTER_PORT``; 127.0.0.1 for the pools of a co-located PD plan).

    Warns on ``err`` about each ``--set NAME`` that is no placeholder of the plan (naming the ones
    it has) and prints every default it used (never applied silently, contracts §2). ``node``: the
    machine label launched (``--node``): another pool machine's address is not this host's. Raises
    ``LaunchError`` for a malformed item.
    """
    from vllm_deploy_wizard.launcher.plan_file import plan_placeholders

    values = parse_values(items)
    if not (isinstance(data, dict) and isinstance(data.get("plan"), dict)):
        return values  # not a plan: parse_plan says why, no warnings before that
    names = plan_placeholders(data)
    for unknown in sorted(set(values) - set(names)):
        have = ", ".join(f"${n}" for n in names) or "none"
        err.write(f"warning: --set {unknown}={values[unknown]}: the plan has no ${unknown} placeholder; "
                  f"its placeholders: {have}\n")
    from vllm_deploy_wizard.launcher.launch import node_facts, placeholder_values, self_facts_needed

    open_names = [n for n in names if n not in values]
    facts = node_facts(host_facts()) if self_facts_needed(open_names, node_rank) else None
    from vllm_deploy_wizard.launcher.config_files import config_file_defaults

    offered = {k: str(v) for k, v in (data["plan"].get("placeholder_defaults") or {}).items() if v not in (None, "")}
    offered = {**config_file_defaults(data["plan"]), **offered}  # where launch writes the plan's config files
    chosen = {n: v for n, v in placeholder_values(open_names, facts or node_facts(None), node_rank, offered,
                                                  head=values.get("HEAD_IP"), node=node).items() if v}
    planned = {n: v for n, v in chosen.items() if offered.get(n) == v}
    defaults = {n: v for n, v in chosen.items() if n not in planned}
    if defaults:
        err.write("using detected defaults: " + " ".join(f"{k}={v}" for k, v in defaults.items())
                  + " (override with --set NAME=VALUE)\n")
    if planned:
        err.write("using the plan's defaults: " + " ".join(f"{k}={v}" for k, v in sorted(planned.items()))
                  + " (override with --set NAME=VALUE)\n")
    return {**planned, **defaults, **values}


def launch_facts(spec: Any) -> Any:
    """This node's facts for the launch's node checks — only when the run starts a ``vllm serve``
    (detection takes a moment); None otherwise."""
    from vllm_deploy_wizard.launcher.vllm import is_vllm_serve

    if not any(is_vllm_serve(p.argv) for p in spec.processes):
        return None
    from vllm_deploy_wizard.detect import detect
    from vllm_deploy_wizard.launcher.launch import node_facts

    inventory = detect()
    return node_facts(inventory.host, inventory)


def label_rank(label: str) -> int:
    """The node rank a ``--node`` label stands for, for the node-0-only detected defaults
    (``$HEAD_IP``): the trailing number of ``…-node-<r>``, else 0 (``router``, ``services``)."""
    import re

    m = re.search(r"(?:^|-)node-(\d+)$", label)
    return int(m.group(1)) if m else 0


def host_readiness_problems(spec: Any) -> list[str]:
    """IAXL KVShrink plans: every gap of this host, each with the host step that closes it
    (docs/backends.md §11), as preflight problem lines; ``[]`` for other plans or a ready host.
    The wizard never runs those steps; ``vllm-wizard launch --skip-host-check`` skips the check."""
    from vllm_deploy_wizard.detect.iaxl import readiness, uses_iaxl

    tp_size = uses_iaxl([{"argv": p.argv, "env": p.env, "setup": p.setup} for p in spec.processes])
    if tp_size is None:
        return []
    gaps = readiness(tp_size)
    if not gaps:
        return []
    return [f"this host is not ready for IAXL KVShrink ({len(gaps)} gap(s)):"] + [f"  {g.text()}" for g in gaps]


def host_ready_or_raise(spec: Any) -> None:
    """Raise :class:`LaunchError` listing :func:`host_readiness_problems` when there are any."""
    from vllm_deploy_wizard.common.errors import LaunchError

    problems = host_readiness_problems(spec)
    if problems:
        raise LaunchError(problems[0][:-1] + "; fix them, or pass --skip-host-check:\n"
                          + "\n".join(f"  - {line.strip()}" for line in problems[1:]))
