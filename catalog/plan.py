"""The launch plan: what synthesis produces and what ``plan --json`` / ``plan --out`` print.

:class:`LaunchPlan` carries the fields of ``docs/plan-file.md`` §3 plus the per-process
extras of ``docs/contracts.md`` §2 (``phase``, ``depends_on``, ``ports``, ``health``, ``setup``) and
the plan-level ``placeholders``. :func:`plan_to_json` is the one place that shapes the JSON, so the
golden contract and the plan file cannot drift apart.

Launch phases (contracts §2): ``infra`` (Dynamo etcd, Mooncake master/store) → ``before``
(companions such as the LMCache server) → ``engine`` (every ``vllm serve``) → ``after`` (routers,
seed companions with ``start: after``). ``depends_on`` defaults to every process of earlier phases
on the same plan; synthesis fills it explicitly so the launcher needs no rules of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from vllm_deploy_wizard.common import placeholders

from .record import Field, Record

Phase = Literal["infra", "before", "engine", "after"]
#: Launch order of the phases.
PHASES: tuple[Phase, ...] = ("infra", "before", "engine", "after")



class Health(Record):
    """Readiness probe of a process: GET ``url`` answers ``expect_status``."""

    model_config = {"extra": "forbid"}
    validate_init = True

    url: str
    expect_status: int = 200


class PlanProcess(Record):
    """One process of a plan (docs/plan-file.md §3.2 + contracts §2 extras)."""

    model_config = {"extra": "forbid"}
    validate_init = True

    name: str
    """Unique within the plan; companions use the reference id (feature key or ``kv_offload:<key>``)."""
    role: str
    """serve, head, worker, prefill, decode, router, companion, mooncake_master, mooncake_store, infra."""
    node_rank: int | None = 0
    """Node index within the process's group; None = not bound to a numbered node."""
    instance: int | None = None
    """Mooncake (kv_store_lb) serve processes only: 0-based instance index."""
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    phase: Phase = "engine"
    depends_on: list[str] = Field(default_factory=list)
    ports: list[int | str] = Field(default_factory=list)
    """Every port the process listens on (for preflight): a number, or a ``$PLACEHOLDER`` port
    (the router's ``$ROUTER_PORT``) that launch fills."""
    health: Health | None = None
    """None = ready when started."""
    setup: str | None = None
    """Optional bash prelude (IAXL); run as ``bash -c 'setup; exec "$@"'``."""
    label: str | None = None
    """Human label (companion label, "vLLM Serve", …)."""
    description: str | None = None


class LaunchPlan(Record):
    """A synthesized plan (docs/plan-file.md §3 + contracts §2)."""

    model_config = {"extra": "forbid"}
    validate_init = True

    deploy_type: str
    install_mode: Literal["pip", "docker"]
    pd_pool_nodes: dict[str, int] | None = None
    resolved: dict[str, Any]
    processes: list[PlanProcess]
    install: list[str] = Field(default_factory=list)
    """Extra install snippets besides vLLM itself (docs/plan-file.md §3.5)."""
    docker: dict[str, str] | None = None
    config_files: dict[str, Any] = Field(default_factory=dict)
    checks: dict[str, Any] = Field(default_factory=dict)
    placeholders: list[str] = Field(default_factory=list)
    """``$VARS`` (without ``$``) still present in any argv/env; launch refuses until filled."""
    placeholder_defaults: dict[str, str] = Field(default_factory=dict)
    """Reference defaults for some placeholders (docs/synthesis.md §2.13), e.g. ``ROUTER_PORT: 30000``
    for PD; a launcher may offer them, never apply them silently."""
    base_install: list[str] = Field(default_factory=list)
    """The vLLM install itself for the effective mode (pip wheel / docker pull), product business."""
    notes: list[str] = Field(default_factory=list)
    """Install notes, hardware notes and warnings worth showing next to the commands."""
    device_count: int = 1
    """Devices per node the plan was made for."""
    accelerator: str = "cuda"
    """The backend family the plan runs on (:data:`.backends.BACKENDS` key: ``cuda``, ``rocm``,
    ``ascend``, ``ppu``, ``tpu``, ``xpu``, ``cpu``); the launcher checks it against the node."""
    min_vllm_version: str | None = None
    unverified: list[str] = Field(default_factory=list)
    """One line per gate lifted by ``Selection.allow_unverified`` (what runs without a verified
    record); empty for a fully verified plan. Written to the plan file (docs/plan-file.md)."""
    fit: dict[str, Any] | None = None
    """What fits on a device for the serve process (docs/fit.md §6); None = not computed (plans
    made by ``synthesize`` alone, which the golden corpus compares)."""


def node_label(plan: LaunchPlan, proc: PlanProcess) -> str:
    """Which machine runs ``proc``: ``node-<r>``, ``prefill-node-<k>`` / ``decode-node-<k>`` (a
    co-located PD pool is ``node-0``), ``instance-<i>-node-<r>`` (Mooncake), ``router`` (the router
    host) or ``services`` (Mooncake master/store, Dynamo etcd)."""
    if proc.node_rank is None:
        return "router" if proc.role == "router" else "services"
    if proc.role in ("prefill", "decode"):
        pools = plan.pd_pool_nodes or {}
        if pools.get(proc.role) == 0:
            return "node-0"
        return f"{proc.role}-node-{proc.node_rank}"
    if proc.instance is not None:
        return f"instance-{proc.instance}-node-{proc.node_rank}"
    return f"node-{proc.node_rank}"


def pd_engine_machines(pool_nodes: Mapping[str, int]) -> int:
    """How many engine machines a PD plan's pools (``pd_pool_nodes``) take, the router not counted:
    each pool's own nodes, plus node-0 once when a pool is co-located (0 nodes: half of node-0's
    devices, :func:`node_label`). Legacy layouts: ``nodes`` 1 → both co-located → 1; ``nodes`` > 1 →
    one node per pool → 2."""
    own = sum(n for n in pool_nodes.values() if n > 0)
    return own + (1 if any(n == 0 for n in pool_nodes.values()) else 0)


def find_placeholders(processes: list[PlanProcess]) -> list[str]:
    """Sorted unique placeholder names (no ``$``) in every argv element and env value."""
    # setup text references the shell's own variables ($HOME, …), not plan placeholders
    return placeholders.names_in(t for proc in processes for t in [*proc.argv, *proc.env.values()] if "$" in t)


def plan_to_json(plan: LaunchPlan, extras: bool = True) -> dict[str, Any]:
    """The plan as a JSON-ready dict, exactly docs/plan-file.md §3 (+ contracts §2 extras when ``extras``).

    Process objects always carry ``name, role, node_rank, argv, env``; ``instance`` only when set
    (docs/plan-file.md §3.2: absent = null). With ``extras`` they also carry ``node`` (the machine, see
    :func:`node_label` — ``node_rank`` alone is per group, so PD prefill-0 and decode-0 share rank 0),
    ``phase, depends_on, ports, health, setup``, and the plan carries ``placeholders``,
    ``placeholder_defaults``, ``base_install``, ``notes``,
    ``device_count``, ``min_vllm_version``, ``unverified`` and, when the planner computed it, ``fit``
    (docs/fit.md §6) — all ignored by the golden tool, §4.
    """
    procs = []
    for p in plan.processes:
        obj: dict[str, Any] = {"name": p.name, "role": p.role, "node_rank": p.node_rank}
        if p.instance is not None:
            obj["instance"] = p.instance
        obj["argv"] = list(p.argv)
        obj["env"] = dict(p.env)
        if extras:
            obj["node"] = node_label(plan, p)
            obj["phase"] = p.phase
            obj["depends_on"] = list(p.depends_on)
            obj["ports"] = list(p.ports)
            obj["health"] = p.health.model_dump() if p.health else None
            obj["setup"] = p.setup
        procs.append(obj)
    out: dict[str, Any] = {
        "deploy_type": plan.deploy_type,
        "install_mode": plan.install_mode,
        "pd_pool_nodes": dict(plan.pd_pool_nodes) if plan.pd_pool_nodes is not None else None,
        "resolved": dict(plan.resolved),
        "processes": procs,
        "install": list(plan.install),
        "docker": dict(plan.docker) if plan.docker is not None else None,
        "config_files": plan.config_files,
        "checks": dict(plan.checks),
    }
    if extras:
        out["placeholders"] = list(plan.placeholders)
        out["placeholder_defaults"] = dict(plan.placeholder_defaults)
        out["base_install"] = list(plan.base_install)
        out["notes"] = list(plan.notes)
        out["device_count"] = plan.device_count
        out["accelerator"] = plan.accelerator
        out["min_vllm_version"] = plan.min_vllm_version
        out["unverified"] = list(plan.unverified)
        if plan.fit is not None:
            out["fit"] = plan.fit
    return out
