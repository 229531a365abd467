"""Every TCP port a plan binds, as editable slots, and the edits applied to the plan (docs/benchmark.md §2).

A slot is one place a process takes a port from: ``--port``, ``--http-port``, ``--prometheus-port``,
``--data-parallel-rpc-port``, ``-rpc_port`` in its argv, a port variable of its env (the launcher
preflight's ``ENV_PORTS``: the NIXL side channel, Mooncake bootstrap, ``MASTER_PORT``, ``VLLM_PORT``),
and the ports a process binds without a flag (``vllm serve`` on 8000, vllm-router's Prometheus on
29000). Slots are keyed ``<process>|<flag or env name>``.

Applying an edit ``old → new`` sets the flag (added when the process used a default) or the env
value, and renames the port where the plan refers to it on the same node: the process's ``ports``
and health URL, and every ``host:old`` URL or JSON ``"…port": old`` value in the argv/env of the
node's processes (the router's ``--worker-urls``, vLLM's ``--kv-transfer-config`` pointing at the
LMCache server). Conflicts are two slots of one node with the same port, or a port another program
holds on this host.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_deploy_wizard.common.flags import last_flag_value, set_flag
from vllm_deploy_wizard.common.ports import check_port  # noqa: F401 — the screen's import; the rule is common's

#: Port flags, in the order shown.
PORT_FLAGS = ("--port", "--http-port", "--prometheus-port", "--data-parallel-rpc-port", "-rpc_port")
#: Port variables of a process's env (launcher/preflight.py ``ENV_PORTS``).
PORT_ENV = ("VLLM_NIXL_SIDE_CHANNEL_PORT", "VLLM_MOONCAKE_BOOTSTRAP_PORT", "MASTER_PORT", "VLLM_PORT")
#: Ports bound without a flag: (test on the argv, flag, default).
IMPLICIT = ((lambda argv: "serve" in argv[:3] and "--headless" not in argv, "--port", "8000"),
            (lambda argv: argv[:1] == ["vllm-router"], "--prometheus-port", "29000"))


@dataclass(frozen=True)
class PortSlot:
    """One editable port: ``key`` (``process|flag``), ``process`` name, ``what`` (the flag or env
    name), ``value`` (the text in the plan: digits, or a placeholder such as ``$ROUTER_PORT``),
    ``node`` (node rank, None = 0), ``default`` (True when the process binds it without the flag)."""

    key: str
    process: str
    what: str
    value: str
    node: int
    default: bool = False

    @property
    def label(self) -> str:
        """``vllm --port`` / ``router --prometheus-port (default)``: how the review names the slot."""
        return f"{self.process} {self.what}" + (" (default)" if self.default else "")


def port_slots(processes: Iterable[Any]) -> list[PortSlot]:
    """The slots of plan ``processes`` (catalog PlanProcess objects or docs/plan-file.md §3 dicts)."""
    out: list[PortSlot] = []
    for p in processes:
        name, argv = _get(p, "name"), list(_get(p, "argv") or [])
        env, node = dict(_get(p, "env") or {}), _get(p, "node_rank") or 0
        seen = set()
        for flag in PORT_FLAGS:
            value = last_flag_value(argv, flag)
            if value is not None:
                out.append(PortSlot(f"{name}|{flag}", name, flag, value, node))
                seen.add(flag)
        for test, flag, default in IMPLICIT:
            if flag not in seen and test(argv):
                out.append(PortSlot(f"{name}|{flag}", name, flag, default, node, default=True))
        for var in PORT_ENV:
            if env.get(var):
                out.append(PortSlot(f"{name}|{var}", name, var, env[var], node))
    return out


def _get(p: Any, key: str) -> Any:
    return p.get(key) if isinstance(p, Mapping) else getattr(p, key, None)


def conflicts(slots: list[PortSlot], edits: Mapping[str, int] | None = None,
              busy: Callable[[int], str | None] | None = None) -> dict[str, str]:
    """``{slot key: why}`` for every slot whose port (after ``edits``) another slot of the same node
    also uses, or that ``busy(port)`` says another program holds (``busy`` returns a holder text or
    None; only asked for node 0, this host)."""
    edits = edits or {}
    value = {s.key: str(edits.get(s.key, s.value)) for s in slots}
    out: dict[str, str] = {}
    for s in slots:
        v = value[s.key]
        if not v.isdigit():
            continue
        twins = [t.label for t in slots if t.key != s.key and t.node == s.node and value[t.key] == v]
        if twins:
            out[s.key] = f"{v} is also {', '.join(twins)}"
        elif busy is not None and s.node == 0:
            holder = busy(int(v))
            if holder:
                out[s.key] = f"{v} is in use on this host ({holder})"
    return out


def _rename(text: str, old: str, new: str) -> str:
    """``text`` with port ``old`` renamed in ``host:old`` and JSON ``"…port": old`` forms."""
    text = re.sub(rf"(?<=:){re.escape(old)}(?![\d])", new, text)
    return text


def apply_port_edits(plan: Any, edits: Mapping[str, int]) -> Any:
    """A copy of LaunchPlan ``plan`` with ``edits`` (``{slot key: port}``) applied (see the module
    docstring). Edits naming no slot of the plan are ignored (the plan changed under them)."""
    if not edits:
        return plan
    plan = plan.model_copy(deep=True)
    slots = {s.key: s for s in port_slots(plan.processes)}
    for key, port in edits.items():
        slot = slots.get(key)
        if slot is None or slot.value == str(port):
            continue
        new, old = str(port), slot.value
        if old.startswith("$"):  # a placeholder port ($ROUTER_PORT): filled everywhere, no longer asked at launch
            _fill_placeholder(plan, old, new)
            continue
        proc = next(p for p in plan.processes if p.name == slot.process)
        if slot.what in PORT_ENV:
            proc.env[slot.what] = new
        else:
            proc.argv = set_flag(proc.argv, slot.what, new, add=True)
        if int(old) in proc.ports:
            proc.ports = sorted({int(new) if q == int(old) else q for q in proc.ports})
        for p in plan.processes:
            if (p.node_rank or 0) != slot.node:
                continue
            if p is not proc:
                p.argv = [_rename(tok, old, new) for tok in p.argv]
                p.env = {k: _rename(v, old, new) for k, v in p.env.items()}
            if p.health is not None:
                p.health.url = _rename(p.health.url, old, new) if p is proc else p.health.url
    return plan


def _fill_placeholder(plan: Any, hole: str, value: str) -> None:
    """Replace placeholder ``hole`` (``$NAME``) by ``value`` in every process and drop it from the plan's
    placeholders (the way ``companion_args`` ``router_port`` fills ``$ROUTER_PORT``)."""
    pat = re.compile(re.escape(hole) + r"(?![A-Za-z0-9_])")
    for p in plan.processes:
        if any(last_flag_value(p.argv, flag) == hole for flag in PORT_FLAGS):
            p.ports = sorted({*p.ports, int(value)})  # it listens there now (a placeholder port was not listed)
        p.argv = [pat.sub(value, tok) for tok in p.argv]
        p.env = {k: pat.sub(value, v) for k, v in p.env.items()}
        if p.health is not None:
            p.health.url = pat.sub(value, p.health.url)
    name = hole[1:]
    plan.placeholders = [x for x in plan.placeholders if x != name]
    plan.placeholder_defaults = {k: v for k, v in plan.placeholder_defaults.items() if k != name}
