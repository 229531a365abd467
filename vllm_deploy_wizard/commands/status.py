"""``vllm-wizard status [RUN]``: list runs and their processes.

Without RUN: every running, starting or stale run (``--all`` adds finished ones), one line per
process. A *starting* run has a live supervisor that has not recorded its processes yet. A
*stale* run is one whose supervisor died: the processes it recorded that are still alive are
counted (by pid + start time, and process group) and ``vllm-wizard stop RUN`` is suggested.
``--json`` prints a JSON list instead. Exit status 0; 1 when a stale run still has live processes.

Under a process that has a cause (its last failure, classified by launcher.causes) the cause, its
fix and the process's log file are printed. In a stale run the recorded state
is no longer true: a process with live leftovers shows ``ORPHANED`` (running, unsupervised), one
without shows its last recorded state marked ``(stale)``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from vllm_deploy_wizard.commands.process_table import process_lines
from vllm_deploy_wizard.common import tables


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``status`` sub-command."""
    p = subparsers.add_parser("status", help="list launched runs and their processes",
                              description="List runs (running and stale; --all adds finished) and their processes.")
    p.add_argument("run", nargs="?", metavar="RUN", help="run id or prefix (default: all runs)")
    p.add_argument("--all", action="store_true", help="include finished runs")
    p.add_argument("--json", action="store_true", help="print JSON")
    from vllm_deploy_wizard.commands.nodes import add_all_nodes_flag

    add_all_nodes_flag(p, "show")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Print the runs; see module docstring."""
    if getattr(args, "all_nodes", False):
        from vllm_deploy_wizard.commands import nodes

        return nodes.status(args)
    from vllm_deploy_wizard.launcher import find_run, list_runs, run_survivors
    from vllm_deploy_wizard.launcher.runs import process_survivors

    runs = [find_run(args.run)] if args.run else list_runs(include_finished=args.all)
    rows: list[dict[str, Any]] = []
    rc = 0
    for r in runs:
        left = [p.pid for p in run_survivors(r)] if r.status == "stale" else []
        if left:
            rc = 1
        rows.append({"run_id": r.run_id, "status": r.status, "outcome": r.outcome, "supervisor_pid": r.pid,
                     "run_dir": str(r.run_dir), "started": r.started, "stale_survivors": left,
                     "processes": r.processes})
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
        return rc
    if not rows:
        print("no runs" + ("" if args.all else " running (--all shows finished ones)"))
        return 0
    colour = tables.colour_for(sys.stdout)
    for row in rows:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["started"])) if row["started"] else "?"
        out = f" ({row['outcome']})" if row["outcome"] else ""
        print(f"{row['run_id']}  {row['status']}{out}  started {started}  supervisor pid {row['supervisor_pid']}")
        from vllm_deploy_wizard.commands.nodes import cluster_hint

        hint = cluster_hint(row["run_id"])
        if hint:
            print(f"  {hint}")
        def stale_state(p: dict[str, Any]) -> str:  # a stale run's recorded states are no longer true
            return "ORPHANED" if process_survivors(p) else f"{p['state']} (stale)"

        for line in process_lines(row["processes"], logs=f"vllm-wizard logs {row['run_id']}", colour=colour,
                                  state=stale_state if row["status"] == "stale" else None):
            print(line)
        if row["status"] == "stale":
            print(f"  ! {stale_note(row['run_id'], row['stale_survivors'])}")
    return rc


def stale_note(run_id: str, survivors: list[int]) -> str:
    """What a stale run (supervisor gone, no outcome recorded) means for the person: the pids of
    ``survivors`` (its processes still alive, unsupervised) and ``vllm-wizard stop RUN`` for them,
    or that nothing is left. Printed under the run by ``status`` and by ``attach`` when the
    supervisor goes away while attached."""
    if survivors:
        return (f"supervisor is gone but {len(survivors)} processes still run {survivors}: "
                f"`vllm-wizard stop {run_id}` stops them")
    return "supervisor is gone; nothing it started is still running"
