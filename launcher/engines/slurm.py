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

The script holds no shell text from the plan: labels are checked against a safe pattern, paths
are quoted with :func:`shlex.quote`, per-task values come through the environment.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, Mapping

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.common.files import write_atomic
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


def sbatch_script(data: Mapping[str, Any], plan_path: Path, job_name: str = "vllm-wizard",
                  time_limit: str | None = None, partition: str | None = None) -> str:
    """The sbatch script text for plan-file ``data`` stored at ``plan_path`` (a path every node can read).

    ``time_limit`` (``HH:MM:SS``) and ``partition`` become ``#SBATCH`` lines when given.
    """
    labels = node_labels(data)
    n = len(labels)
    sequential = labels == [f"node-{k}" for k in range(n)]
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={re.sub(r'[^A-Za-z0-9._-]', '-', job_name)}",
        f"#SBATCH --nodes={n}",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --exclusive",
        "#SBATCH --signal=TERM@120",
    ]
    if time_limit:
        lines.append(f"#SBATCH --time={time_limit}")
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines += [
        "# vllm-wizard: one task per node, each supervising that node's processes of the plan file.",
        "set -euo pipefail",
        f"export WIZARD_PLAN={shlex.quote(str(plan_path))}",
        'export WIZARD_BIN="${WIZARD_BIN:-vllm-wizard}"',
        f"export WIZARD_NODES={shlex.quote(' '.join(labels))}",
        'head_host=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        'if [ -z "${HEAD_IP:-}" ]; then',
        '  head_addr=$(scontrol show node "$head_host" | tr " " "\\n" | sed -n "s/^NodeAddr=//p" | head -n 1)',
        '  HEAD_IP=$(getent ahostsv4 "${head_addr:-$head_host}" | awk \'NR==1 {print $1}\')',
        "fi",
        'export HEAD_IP="${HEAD_IP:?could not find the address of the first node $head_host}"',
        'echo "vllm-wizard: $SLURM_JOB_NUM_NODES nodes, head $head_host ($HEAD_IP), plan $WIZARD_PLAN"',
    ]
    if sequential:
        task = 'exec "$WIZARD_BIN" launch "$WIZARD_PLAN" --node "node-$SLURM_NODEID" --foreground'
    else:
        task = ('set -- $WIZARD_NODES; shift "$SLURM_NODEID"; '
                'exec "$WIZARD_BIN" launch "$WIZARD_PLAN" --node "$1" --foreground')
    task += ' --set "HEAD_IP=$HEAD_IP"'  # every node, the head too: the address the others use
    lines += [
        f"srun --nodes={n} --ntasks={n} --ntasks-per-node=1 --kill-on-bad-exit=1 --label \\",
        f"  bash -c {shlex.quote(task)}",
        "",
    ]
    return "\n".join(lines)


def write_script(path: Path, data: Mapping[str, Any], plan_path: Path, text: str | None = None) -> Path:
    """Write the sbatch script for ``data`` (plan file at ``plan_path``) to ``path``, atomically with
    mode 0700 (never briefly wider: it may carry ``--api-key``). Raises OSError when it cannot."""
    return write_atomic(path, text if text is not None else sbatch_script(data, plan_path, job_name=path.stem),
                        mode=0o700)
