"""The ``--all-nodes`` / ``--node`` flags of ``launch``, ``status``, ``stop``, ``logs`` and ``attach``:
one head controlling every machine of a multi-node plan over ssh (:mod:`vllm_deploy_wizard.launcher.engines.ssh`,
docs/multi-node.md §6)."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common import tables


def add_launch_flags(p: argparse.ArgumentParser) -> None:
    """``launch --all-nodes`` and its ssh settings."""
    p.add_argument("--all-nodes", action="store_true",
                   help="start every machine of the plan from here: this one (--node, default the first) locally, "
                   "the others over ssh (--host LABEL=DEST each); status/stop --all-nodes control them all")
    p.add_argument("--host", action="append", default=[], metavar="LABEL=DEST",
                   help="with --all-nodes: the ssh destination ([user@]host) of a machine of the plan (repeatable)")
    p.add_argument("--ssh-config", type=Path, metavar="FILE", help="ssh config file for --all-nodes (ssh -F)")
    p.add_argument("--ssh-option", action="append", default=[], metavar="OPT",
                   help="extra ssh option for --all-nodes (ssh -o OPT, repeatable)")
    p.add_argument("--remote-wizard", default="vllm-wizard", metavar="CMD",
                   help="how to run vllm-wizard on the other machines (default: vllm-wizard on their PATH)")


def add_all_nodes_flag(p: argparse.ArgumentParser, what: str) -> None:
    """``--all-nodes`` for ``status`` / ``stop``."""
    p.add_argument("--all-nodes", action="store_true",
                   help=f"{what} every node of the newest cluster launch "
                        "(`launch --all-nodes`; RUN picks its head run)")


def add_node_flag(p: argparse.ArgumentParser) -> None:
    """``--node LABEL`` for ``logs`` / ``attach``: that node of the newest cluster launch."""
    p.add_argument("--node", metavar="LABEL",
                   help="that node of the newest cluster launch (`launch --all-nodes`), over ssh")


def _ssh_args(args: argparse.Namespace) -> list[str]:
    out = []
    if args.ssh_config is not None:
        out += ["-F", str(args.ssh_config)]
    for opt in args.ssh_option:
        out += ["-o", opt]
    return out


def launch(args: argparse.Namespace, data: Any) -> int:
    """``launch PLAN --all-nodes``: every machine started (or none); 0, or LaunchError."""
    from vllm_deploy_wizard.launcher.engines.ssh import launch_all_nodes, parse_hosts
    from vllm_deploy_wizard.launcher.plan_file import plan_node_labels, plan_placeholders
    from vllm_deploy_wizard.workflows.launching import detected_values, parse_values

    labels = plan_node_labels(data)
    local = args.node or (labels[0] if labels else "node-0")
    values = parse_values(args.values)
    if "HEAD_IP" in plan_placeholders(data) and "HEAD_IP" not in values:
        values.update(detected_values(["HEAD_IP"], values, 0))  # this machine is the head
        if "HEAD_IP" in values:
            print(f"using this machine's address as HEAD_IP={values['HEAD_IP']} (override with --set HEAD_IP=…)",
                  file=sys.stderr)
    hosts = parse_hosts(args.host)
    found = machine_addresses(data, local, hosts, values,
                              here=lambda: values.get("HEAD_IP") or detected_values(["HEAD_IP"], {}, 0).get("HEAD_IP"))
    if found:
        print("using the machines' addresses: " + " ".join(f"{k}={v}" for k, v in found.items())
              + " (override with --set NAME=VALUE)", file=sys.stderr)
        values.update(found)
    extra = ["--skip-flag-check"] if args.skip_flag_check else []
    c = launch_all_nodes(Path(args.plan).resolve(), data, local, hosts, values,
                         ssh=_ssh_args(args), wizard=shlex.split(args.remote_wizard), extra=extra)
    tables.print_table([[n.label, n.dest or "this machine", f"run {n.run_id}"] for n in c.nodes], indent=0)
    print(f"cluster of {len(c.nodes)} nodes started; head run {c.head.run_id}")
    print("  status: vllm-wizard status --all-nodes    stop: vllm-wizard stop --all-nodes")
    return 0


def machine_addresses(data: Any, local: str, hosts: dict[str, str], values: dict[str, str],
                      here: Any = lambda: None) -> dict[str, str]:
    """The placeholders naming a machine's address (``PREFILL_NODE_1`` for ``prefill-node-0`` …,
    :func:`~vllm_deploy_wizard.launcher.engines.slurm.address_placeholders`) that ``values`` lacks,
    each the address of that machine: ``here()`` (this machine's address) for ``local``, else its ``--host``
    destination resolved to IPv4; ``ROUTER_HOST`` the ``router`` machine's (the router binds it, the
    engines reach it there; the plan's default ``localhost`` serves one machine only). A destination
    that does not resolve is left out."""
    import socket

    from vllm_deploy_wizard.launcher.engines.slurm import ROUTER_LABEL, address_placeholders
    from vllm_deploy_wizard.launcher.plan_file import plan_node_labels, plan_placeholders

    def address_of(label: str) -> str | None:
        if label == local:
            return here()
        host = hosts.get(label, "").rpartition("@")[2].strip("[]")
        try:
            return str(socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0])
        except (OSError, IndexError):
            return None

    holes = set(plan_placeholders(data))
    out: dict[str, str] = {}
    for label in plan_node_labels(data):
        names = [*address_placeholders(label), *(["ROUTER_HOST"] if label == ROUTER_LABEL else [])]
        for name in names:
            if name in holes and name not in values and (address := address_of(label)):
                out[name] = address
    return out


def cluster_hint(run_id: str) -> str | None:
    """For a run that is the head of a cluster launch: a line pointing at ``status --all-nodes``."""
    from vllm_deploy_wizard.launcher.engines.ssh import head_cluster

    c = head_cluster(run_id)
    if c is None:
        return None
    others = ", ".join(f"{n.label} ({n.dest})" for n in c.nodes if n.dest)
    return f"head of a cluster launch; other nodes: {others} — `vllm-wizard status --all-nodes` shows them"


def status(args: argparse.Namespace) -> int:
    """``status --all-nodes``: every node's processes; 1 when a node cannot be asked."""
    import json

    from vllm_deploy_wizard.commands.process_table import process_lines
    from vllm_deploy_wizard.launcher.engines.ssh import cluster_status, load_cluster

    c = load_cluster(args.run)
    rows = cluster_status(c)
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
        return 0 if all(r["ok"] for r in rows) else 1
    rc = 0
    colour = tables.colour_for(sys.stdout)
    for r in rows:
        where = r["dest"] or "this machine"
        if not r["ok"]:
            rc = 1
            print(f"{r['label']}  ({where})  run {r['run_id']}: UNREACHABLE — {r['error']}")
            continue
        run = r["run"]
        print(f"{r['label']}  ({where})  run {r['run_id']}  {run['status']}"
              + (f" ({run['outcome']})" if run.get("outcome") else ""))
        logs = "vllm-wizard logs" + (f" --node {r['label']}" if r["dest"] else f" {r['run_id']}")
        for line in process_lines(run["processes"], logs=logs, colour=colour):
            print(line)
    return rc


def stop(args: argparse.Namespace) -> int:
    """``stop --all-nodes``: every node's run stopped; 1 when one did not stop cleanly."""
    from vllm_deploy_wizard.launcher.engines.ssh import load_cluster, stop_cluster

    c = load_cluster(args.run)
    done = stop_cluster(c, args.timeout)
    tables.print_table([[node.label, node.dest or "this machine", f"{'stopped' if code == 0 else 'FAILED'}: {line}"]
                        for node, code, line in done], indent=0)
    return 1 if any(code for _, code, _ in done) else 0


def remote(args: argparse.Namespace, command: list[str], tty: bool = False) -> int:
    """``logs``/``attach`` ``--node LABEL``: the same command on that node, output passed through."""
    from vllm_deploy_wizard.launcher.engines.ssh import load_cluster, node_command, node_of

    c = load_cluster(None)
    n = node_of(c, args.node)
    argv = node_command(c, n, [command[0], n.started_run(), *command[1:]])
    if tty and n.dest is not None:
        argv.insert(1, "-t")
    return subprocess.call(argv)
