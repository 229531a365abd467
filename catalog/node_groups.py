"""How the plan file supervises a multi-node vLLM group (docs/multi-node.md §1–§2).

A multi-node engine (``--nnodes`` TP/PP, ``--data-parallel-address`` DP) is one collective spread
over machines: a head (``…head``, serves the API) and headless workers (``…worker-<k>``), each run
by the supervisor of its own machine. Measured with the real vLLM (docs/multi-node.md §2): a
worker whose engine died leaves the head's ``/health`` at 200 for tens of seconds — only the next
request fails (HTTP 500) and ends the head — and a worker only knows the group serves when the
head answers. So the plan file adds, per group:

* ``VLLM_HOST_IP`` on every member: the head advertises its master address, a worker ``$NODE_IP``
  (its own address; ``launch`` fills it from detection) — without it vLLM falls back to 0.0.0.0
  on hosts whose default route it cannot find, and the head waits forever;
* the head's ``health.liveness``: a one-token completion on its own API while READY (a dead
  worker fails it, vLLM then exits, and the supervisor restarts the head);
* each worker's ``health``: the head's ``/health`` at the master address (``remote``: the answer
  comes from another machine), with a liveness of the same URL — a worker is READY once its group
  serves and is restarted when the group is gone, so it rejoins the restarted head (the same
  effect as LeaderWorkerSet's RecreateGroupOnPodRestart);
* ``restart``: enough failures in the window for a group recovery (each member may fail twice);
* ``group``: ``{id, leader, size, rank}`` on every member, so engines that run groups themselves
  (Kubernetes LeaderWorkerSet, Slurm) read the group from the plan file.

These are plan-file extras only: ``plan --json`` (docs/plan-file.md §3, the goldens) is unchanged.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from vllm_deploy_wizard.common.flags import flag_values

#: The flags whose value is a group's master address.
MASTER_FLAGS = ("--master-addr", "--data-parallel-address")
#: Placeholder for a machine's own address (``launch`` fills it from detection on every node).
NODE_IP = "NODE_IP"
#: Restart policy of a group member: a recovery costs each member up to two failures.
GROUP_RESTART = {"max_failures": 6, "window_s": 900}
#: The head's liveness request: one token, any served model (vLLM's ``model`` field is optional).
LIVENESS_BODY = {"prompt": "ping", "max_tokens": 1}


def master_address(argv: list[str]) -> str | None:
    """The value of the first master-address flag in ``argv`` (``--master-addr X`` or ``=X``), or None."""
    values = flag_values(argv, *MASTER_FLAGS)
    return values[0] if values else None


#: Role → the pool its group belongs to (a PD plan has one group per pool).
_FAMILY = {"head": "engine", "worker": "engine", "serve": "engine", "prefill": "prefill", "decode": "decode"}


def groups(processes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{group id: {"head": proc, "workers": [proc, …]}}`` for the multi-node groups of a plan's
    processes (plan-file dicts).

    A group is the processes of one pool (engine, prefill or decode) naming the same master
    address (``--master-addr`` / ``--data-parallel-address`` value); its head is the member with
    role ``head``, else the one of node rank 0. The id is the head's name without a trailing
    ``-head`` / ``-0`` (``vllm``, ``instance-1``, ``prefill``). Groups of one process are none.
    """
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for proc in processes:
        family = _FAMILY.get(str(proc.get("role")))
        addr = master_address(proc.get("argv") or [])
        if family and addr is not None:
            found.setdefault((family, addr), []).append(proc)
    out: dict[str, dict[str, Any]] = {}
    for members in found.values():
        if len(members) < 2:
            continue
        head = next((m for m in members if m.get("role") == "head"), None) or \
            next((m for m in members if m.get("node_rank") == 0), None)
        if head is None:
            continue
        gid = re.sub(r"(-head|-0)$", "", str(head["name"])) or str(head["name"])
        out[gid] = {"head": head, "workers": [m for m in members if m is not head]}
    return out


def _with_path(url: str, path: str, host: str | None = None) -> str:
    u = urlsplit(url)
    netloc = u.netloc if host is None else f"{host}:{u.port}" if u.port else host
    return urlunsplit((u.scheme, netloc, path, "", ""))


def add_group_supervision(plan: dict[str, Any]) -> dict[str, Any]:
    """Add the group extras of the module docstring to a plan-file ``plan`` mapping (in place).

    Processes of no group are untouched; ``$NODE_IP`` joins ``plan.placeholders`` when used.
    Returns ``plan``.
    """
    procs = plan.get("processes") or []
    used_node_ip = False
    for gid, g in groups(procs).items():
        head = g["head"]
        members = [head, *g["workers"]]
        for rank, m in enumerate(members):
            m["group"] = {"id": gid, "leader": head["name"], "size": len(members), "rank": rank}
        addr = master_address(head["argv"])
        head["env"] = {**(head.get("env") or {}), "VLLM_HOST_IP": addr}
        head["restart"] = dict(GROUP_RESTART)
        health = head.get("health")
        if health and health.get("url"):
            head["health"] = {**health, "liveness": {
                "url": _with_path(health["url"], "/v1/completions"), "body": dict(LIVENESS_BODY),
                # a busy head answers late, a dead group at once (HTTP 500 in ~20 ms): be patient
                "timeout_s": 120.0, "failure_threshold": 3}}
        for w in g["workers"]:
            w["env"] = {**(w.get("env") or {}), "VLLM_HOST_IP": f"${NODE_IP}"}
            used_node_ip = True
            w["restart"] = dict(GROUP_RESTART)
            if health and health.get("url") and not w.get("health"):  # headless: the group's health
                url = _with_path(health["url"], urlsplit(health["url"]).path, host=master_address(w["argv"]))
                w["health"] = {"url": url, "expect_status": health.get("expect_status", 200), "remote": True,
                               "liveness": {"url": url, "failure_threshold": 3, "timeout_s": 30.0}}
    if used_node_ip:
        names = list(plan.get("placeholders") or [])
        if NODE_IP not in names:
            plan["placeholders"] = [*names, NODE_IP]
    return plan
