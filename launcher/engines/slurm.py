"""An sbatch script that runs a plan file on a Slurm allocation (``plan … --slurm FILE``; docs/multi-node.md §4).

One task per node (``srun --ntasks-per-node=1``), task *k* running ``vllm-wizard launch PLAN
--node <label k> --foreground`` — for a plan whose machines are ``node-0 … node-<N-1>`` that is
``--node node-$SLURM_NODEID``; other plans (PD pools, Mooncake, a router machine) map
``$SLURM_NODEID`` to their labels in plan order. ``$HEAD_IP`` is the first node of the allocation:
its ``NodeAddr`` (``scontrol show node``), resolved to IPv4, unless ``HEAD_IP`` is already in the
environment. Every task detects its own ``$NODE_IP``/``$IFACE_NAME``.

Stopping: ``scancel`` (or the time limit, ``--signal=TERM@120`` warns two minutes ahead) sends
SIGTERM to the step's tasks; each ``launch --foreground`` then stops its processes cleanly (the
supervisor's stop: every tree, SIGKILL after the stop timeout) before Slurm's KillWait ends.
``srun --kill-on-bad-exit=1``: one node's run ending in failure ends the others (a group is
useless with a member gone).

Devices: a GPU plan (NVIDIA, AMD) asks for each node's GPUs (``#SBATCH --gpus-per-node=N``,
:func:`devices_per_node`): a cluster that confines a job to the GPUs it requested shows an engine
none otherwise. Other accelerators (Ascend NPUs, TPUs, Intel GPUs) are named per site (``--gres=npu:N``
on one, a partition on another): the script says N in a comment instead. The router's step asks
for no devices (``--gres=none``).

The script holds no shell text from the plan: labels are checked against a safe pattern, paths
are quoted with :func:`shlex.quote`, per-task values come through the environment.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common import backends_registry
from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.common.files import write_atomic
from vllm_deploy_wizard.common.parallelism import devices_on_node
from vllm_deploy_wizard.common.placeholders import names as placeholders_in
from vllm_deploy_wizard.launcher.plan_file import plan_node_labels

_SAFE_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def node_labels(data: Mapping[str, Any]) -> list[str]:
    """The plan's machines in plan order (``node-0``, ``node-1`` …); LaunchError when a label is unsafe."""
    labels = plan_node_labels(data)
    bad = [x for x in labels if not _SAFE_LABEL.match(x)]
    if bad:
        raise LaunchError(f"node labels {bad!r} are not safe for a Slurm script (letters, digits, . _ -)")
    if not labels:
        raise LaunchError("the plan has no processes")
    return labels


#: A PD pool machine's label → the placeholder of its address in the plan (the router's
#: ``--prefill http://$PREFILL_NODE_1:8001``, NIXL's side-channel host): labels count from 0,
#: the recipes' placeholders from 1 (docs/synthesis.md §2.13), so ``prefill-node-<k>`` is
#: ``$PREFILL_NODE_<k+1>``.
_POOL_LABEL = re.compile(r"^(prefill|decode)-node-(\d+)$")
#: The label of the PD router's machine (catalog ``node_label``): it runs on the first engine node.
ROUTER_LABEL = "router"


_INSTANCE_LABEL = re.compile(r"^instance-(\d+)-node-0$")


def address_placeholders(label: str) -> list[str]:
    """The placeholders holding the address of machine ``label`` ([] for labels without one):
    ``prefill-node-<k>`` → ``PREFILL_NODE_<k+1>``, ``instance-<i>-node-0`` → ``VLLM_INSTANCE_<i+1>``
    (the kv_store router's ``--backend-url``), ``services`` → ``MOONCAKE_MASTER_IP`` and
    ``DYN_CONTROL_IP`` (Mooncake's master, Dynamo's etcd)."""
    m = _POOL_LABEL.match(label)
    if m:
        return [f"{m.group(1).upper()}_NODE_{int(m.group(2)) + 1}"]
    m = _INSTANCE_LABEL.match(label)
    if m:
        return [f"VLLM_INSTANCE_{int(m.group(1)) + 1}"]
    return ["MOONCAKE_MASTER_IP", "DYN_CONTROL_IP"] if label == "services" else []


#: Roles of the processes that hold accelerators (as the Kubernetes export's engine roles).
_DEVICE_ROLES = ("serve", "head", "worker", "prefill", "decode")


def devices_per_node(data: Mapping[str, Any]) -> int:
    """Accelerators the plan uses on its busiest machine (0 for a CPU plan or one without engines).

    Per machine label: the ids its engines pin (``*_VISIBLE_DEVICES``, e.g. a co-located PD plan's
    ``0,1,2,3`` and ``4,5,6,7`` on one machine → 8), else the most any of its engines uses by its
    parallel-size flags (:func:`~vllm_deploy_wizard.common.parallelism.devices_on_node`), else the
    plan's ``device_count``; never more than ``device_count`` (the node's devices)."""
    plan = data.get("plan") or {}
    if plan.get("accelerator") == "cpu":
        return 0
    count = int(plan.get("device_count") or 1)
    pinned: dict[str, set[str]] = {}
    flagged: dict[str, int] = {}
    for proc in plan.get("processes") or []:
        if proc.get("role") not in _DEVICE_ROLES:
            continue
        label = str(proc.get("node") or "")
        env = {str(k): str(v) for k, v in (proc.get("env") or {}).items()}
        ids = [x.strip() for k, v in env.items() if k.endswith("_VISIBLE_DEVICES") and not placeholders_in(v)
               for x in v.split(",") if x.strip()]
        if ids:
            pinned.setdefault(label, set()).update(ids)
        else:
            flagged[label] = max(flagged.get(label, 0), devices_on_node([str(a) for a in proc.get("argv") or []])
                                 or count)
    used = [len(v) for v in pinned.values()] + list(flagged.values())
    return min(count, max(used, default=0))


def device_request(data: Mapping[str, Any]) -> list[str]:
    """The ``#SBATCH`` lines asking for each node's devices: ``--gpus-per-node=N`` for a GPU plan
    (NVIDIA, AMD); for other accelerators a comment naming N (their Slurm name is the site's);
    [] for CPU plans."""
    n = devices_per_node(data)
    family = str((data.get("plan") or {}).get("accelerator") or "")
    if n <= 0 or family == "cpu":
        return []
    try:
        kind, unit = backends_registry.entry(family).kind, backends_registry.entry(family).unit
    except KeyError:
        kind, unit = "device", "device"
    if family in ("cuda", "rocm"):
        return [f"#SBATCH --gpus-per-node={n}"]
    return [f"# devices: {n} {unit}(s) of kind {kind} per node; their Slurm name is site-specific (e.g. "
            f"--gres={kind}:{n}): add the #SBATCH line your cluster uses"]


def sbatch_script(data: Mapping[str, Any], plan_path: Path, job_name: str = "vllm-wizard",
                  time_limit: str | None = None, partition: str | None = None) -> str:
    """The sbatch script text for plan-file ``data`` stored at ``plan_path`` (a path every node can read).

    ``time_limit`` (``HH:MM:SS``) and ``partition`` become ``#SBATCH`` lines when given. A plan with a
    ``router`` machine (PD) asks for one node fewer: the router runs as its own job step
    (``srun --overlap``, no devices) on the node of the first prefill machine, bound to that node's
    address (``ROUTER_HOST``, where the engines reach it, unless exported). Every task gets ``--set``
    the address of each machine the plan names (``HEAD_IP`` = the first node, ``PREFILL_NODE_<k+1>`` /
    ``DECODE_NODE_<k+1>`` = the node running ``prefill-node-<k>`` / ``decode-node-<k>``), unless
    that variable is already in the environment.
    """
    from vllm_deploy_wizard.launcher.plan_file import plan_placeholders

    labels = node_labels(data)
    router = ROUTER_LABEL in labels and len(labels) > 1
    engines = [x for x in labels if not (router and x == ROUTER_LABEL)]
    n = len(engines)
    sequential = engines == [f"node-{k}" for k in range(n)]
    holes = set(plan_placeholders(data))
    configs = (data.get("plan") or {}).get("config_files") or {}
    holes.update(n for text in map(str, configs.values()) for n in placeholders_in(text))  # Mooncake's master
    addresses = {ph: k for k, label in enumerate(engines) for ph in address_placeholders(label) if ph in holes}
    sets = (["HEAD_IP"] + [ph for ph in sorted(addresses, key=lambda ph: addresses[ph])]
            + (["ROUTER_HOST"] if router and "ROUTER_HOST" in holes else []))
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={re.sub(r'[^A-Za-z0-9._-]', '-', job_name)}",
        f"#SBATCH --nodes={n}",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --exclusive",
        "#SBATCH --signal=TERM@120",
    ]
    devices = device_request(data)
    lines += devices
    if time_limit:
        lines.append(f"#SBATCH --time={time_limit}")
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines += [
        "# vllm-wizard: one task per node, each supervising that node's processes of the plan file.",
        "set -euo pipefail",
        f"export WIZARD_PLAN={shlex.quote(str(plan_path))}",
        'export WIZARD_BIN="${WIZARD_BIN:-vllm-wizard}"',
        f"export WIZARD_NODES={shlex.quote(' '.join(engines))}",
        f"export WIZARD_SETS={shlex.quote(' '.join(sets))}",
        'mapfile -t job_hosts < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        "node_ip() {  # HOST → its NodeAddr as IPv4",
        '  local addr',
        '  addr=$(scontrol show node "$1" | tr " " "\\n" | sed -n "s/^NodeAddr=//p" | head -n 1)',
        '  getent ahostsv4 "${addr:-$1}" | awk \'NR==1 {print $1}\'',
        "}",
        'head_host=${job_hosts[0]}',
        'if [ -z "${HEAD_IP:-}" ]; then HEAD_IP=$(node_ip "$head_host"); fi',
        'export HEAD_IP="${HEAD_IP:?could not find the address of the first node $head_host}"',
    ]
    for ph, k in sorted(addresses.items(), key=lambda kv: kv[1]):
        lines.append(f'if [ -z "${{{ph}:-}}" ]; then {ph}=$(node_ip "${{job_hosts[{k}]}}"); fi  # {engines[k]}')
        lines.append(f'export {ph}="${{{ph}:?could not find the address of node ${{job_hosts[{k}]}}}}"')
    first = next((k for k, x in enumerate(engines) if x.startswith("prefill")), 0)  # the router's node
    if router and "ROUTER_HOST" in holes:
        # the router binds its node's address; the engines reach it there (MoRIIO's proxy_ip)
        lines.append(f'if [ -z "${{ROUTER_HOST:-}}" ]; then ROUTER_HOST=$(node_ip "${{job_hosts[{first}]}}"); fi')
        lines.append('export ROUTER_HOST="${ROUTER_HOST:?could not find the address of node '
                     f'${{job_hosts[{first}]}}}}"')
    lines.append('echo "vllm-wizard: $SLURM_JOB_NUM_NODES nodes, head $head_host ($HEAD_IP), plan $WIZARD_PLAN"')
    if len(sets) > 1:
        lines.append("echo \"vllm-wizard: machine addresses:" + "".join(f" {v}=${v}" for v in sets[1:]) + '"')
    sets_bash = 'sets=(); for v in $WIZARD_SETS; do sets+=(--set "$v=${!v}"); done; '
    if sequential:
        task = (sets_bash
                + 'exec "$WIZARD_BIN" launch "$WIZARD_PLAN" --node "node-$SLURM_NODEID" --foreground "${sets[@]}"')
    else:
        task = (sets_bash + 'set -- $WIZARD_NODES; shift "$SLURM_NODEID"; '
                'exec "$WIZARD_BIN" launch "$WIZARD_PLAN" --node "$1" --foreground "${sets[@]}"')
    step = [f"srun --nodes={n} --ntasks={n} --ntasks-per-node=1 --kill-on-bad-exit=1 --label \\",
            f"  bash -c {shlex.quote(task)}"]
    if not router:
        return "\n".join([*lines, *step, ""])
    router_task = (sets_bash
                   + f'exec "$WIZARD_BIN" launch "$WIZARD_PLAN" --node {ROUTER_LABEL} --foreground "${{sets[@]}}"')
    # a step gets the job's GRES unless told otherwise (and reads SLURM_GPUS_PER_NODE): none for the router
    no_devices = ("env -u SLURM_GPUS_PER_NODE srun --overlap --gres=none"
                  if any(x.startswith("#SBATCH --gpus") for x in devices) else "srun --overlap")
    lines += [
        f"# the router: its own step (no devices) on the node of {engines[first]}",
        f'{no_devices} --nodes=1 --ntasks=1 --nodelist="${{job_hosts[{first}]}}" --kill-on-bad-exit=1 --label \\',
        f"  bash -c {shlex.quote(router_task)} &",
        "router_step=$!",
        step[0],
        step[1] + " &",
        "engine_step=$!",
        "# scancel / the time limit: both steps get SIGTERM (srun passes it to its tasks)",
        "trap 'kill -TERM \"$router_step\" \"$engine_step\" 2>/dev/null || true' TERM INT",
        "set +e",
        'wait -n "$router_step" "$engine_step"; rc=$?',
        'kill -TERM "$router_step" "$engine_step" 2>/dev/null  # one step ended: end the other',
        "wait",
        'exit "$rc"',
        "",
    ]
    return "\n".join(lines)


def write_script(path: Path, data: Mapping[str, Any], plan_path: Path, text: str | None = None) -> Path:
    """Write the sbatch script for ``data`` (plan file at ``plan_path``) to ``path``, atomically with
    mode 0700 (never briefly wider: it may carry ``--api-key``). Raises OSError when it cannot."""
    return write_atomic(path, text if text is not None else sbatch_script(data, plan_path, job_name=path.stem),
                        mode=0o700)
