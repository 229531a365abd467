"""One head for all nodes: ``launch plan.yaml --all-nodes`` over OpenSSH (docs/multi-node.md §6).

From the head machine, every machine of the plan gets its own supervisor, started exactly as a
person would on that machine: ``vllm-wizard launch PLAN --node LABEL --set HEAD_IP=…`` (detached).
The head's own node runs locally; every other node runs over ``ssh`` with the person's keys and
``~/.ssh/config`` (plus ``--ssh-config`` / ``--ssh-option``), after its copy of the plan file is
written there (``~/.cache/vllm-wizard/plans/<digest>.yaml``, mode 0600, through ssh's stdin).

Order and failure: every node is checked reachable first (``ssh … true``, in parallel) — an
unreachable node is named with ssh's own error and nothing starts; then the head's node starts,
then the others; when one fails to start, the nodes already started are stopped again (nothing
is left half-started) and the error names the node.

Control: the head records the cluster (``<state>/vllm-wizard/clusters/<head run id>.json``:
nodes, their ssh destination and run id); ``status --all-nodes``, ``stop --all-nodes``,
``logs --node LABEL`` and ``attach --node LABEL`` read it and run the same command on each node
(over ssh for the remote ones).

Remote commands are argv lists: ssh joins its command words into one remote shell line, so each
word is quoted with :func:`shlex.quote` — no plan or user text is ever interpolated unquoted. Node
labels and destinations are checked against safe patterns before use.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.launcher.plan_file import plan_node_labels

_SAFE_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SAFE_DEST = re.compile(r"^[A-Za-z0-9_.@:\[\]-]+$")
_RUN_LINE = re.compile(r"launched run (\S+)")
#: Where a remote node keeps the plan file (relative to the remote home).
REMOTE_PLAN_DIR = ".cache/vllm-wizard/plans"
#: Seconds a reachability check or a remote command may take.
SSH_TIMEOUT_S = 30
#: Seconds a remote ``launch`` may take (preflight runs there).
LAUNCH_TIMEOUT_S = 300


@dataclass
class NodeRun:
    """One machine of a cluster launch: ``label``, ssh ``dest`` (None = this machine), its ``run_id``."""

    label: str
    dest: str | None
    run_id: str | None = None

    def started_run(self) -> str:
        """``run_id`` of a node that was started (every node of a saved cluster); raises
        :class:`LaunchError` for one that never was."""
        if self.run_id is None:
            raise LaunchError(f"node {self.label}: no run id (it was never started)")
        return self.run_id


@dataclass
class Cluster:
    """A cluster launch as recorded on the head (see the module docstring)."""

    plan: str
    nodes: list[NodeRun]
    ssh: list[str] = field(default_factory=list)
    wizard: list[str] = field(default_factory=lambda: ["vllm-wizard"])
    local_wizard: list[str] = field(default_factory=lambda: [sys.executable, "-m", "vllm_deploy_wizard"])
    started: float = 0.0

    @property
    def head(self) -> NodeRun:
        """The node that runs on this machine."""
        return next(n for n in self.nodes if n.dest is None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cluster:
        return cls(plan=d["plan"], nodes=[NodeRun(**n) for n in d["nodes"]], ssh=list(d.get("ssh") or []),
                   wizard=list(d.get("wizard") or ["vllm-wizard"]),
                   local_wizard=list(d.get("local_wizard") or [sys.executable, "-m", "vllm_deploy_wizard"]),
                   started=float(d.get("started") or 0))


def clusters_root() -> Path:
    """``<state>/vllm-wizard/clusters`` (mode 0700), next to the runs."""
    from vllm_deploy_wizard.launcher.runs import runs_root

    root = runs_root().parent / "clusters"
    root.mkdir(mode=0o700, exist_ok=True)
    return root


def save_cluster(c: Cluster) -> Path:
    """Record ``c`` under its head run id; returns the file."""
    from vllm_deploy_wizard.launcher.runs import write_state_json

    path = clusters_root() / f"{c.head.run_id}.json"
    write_state_json(path, c.to_dict())
    return path


def load_cluster(run: str | None = None) -> Cluster:
    """The cluster whose head run id starts with ``run`` (None = the newest); LaunchError when none."""
    files = sorted(clusters_root().glob("*.json"), key=lambda p: p.stat().st_mtime)
    if run:
        files = [f for f in files if f.stem.startswith(run)]
    if not files:
        raise LaunchError("no cluster launch recorded on this machine"
                          + (f" for run {run!r}" if run else "") + "; start one with `launch PLAN --all-nodes`")
    return Cluster.from_dict(json.loads(files[-1].read_text()))


def parse_hosts(items: Sequence[str]) -> dict[str, str]:
    """``["node-1=user@host", …]`` → ``{label: destination}``; LaunchError naming a bad item."""
    out = {}
    for item in items:
        label, sep, dest = item.partition("=")
        if not sep or not _SAFE_LABEL.match(label) or not _SAFE_DEST.match(dest) or dest.startswith("-"):
            raise LaunchError(f"--host {item!r}: expected LABEL=[USER@]HOST, e.g. --host node-1=gpu-2 "
                              "(labels: letters, digits, . _ -)")
        out[label] = dest
    return out


def ssh_argv(ssh: Sequence[str], dest: str, remote: Sequence[str]) -> list[str]:
    """The ``ssh`` argv running argv ``remote`` on ``dest`` (each word quoted for the remote shell)."""
    return ["ssh", "-o", "BatchMode=yes", *ssh, dest, shlex.join(list(remote))]


def _run(argv: list[str], timeout: float, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 255, b"", f"no answer within {timeout:g} s".encode())
    except OSError as exc:
        return subprocess.CompletedProcess(argv, 127, b"", f"{argv[0]}: {exc.strerror or exc}".encode())


def _err(r: subprocess.CompletedProcess) -> str:
    text = (r.stderr or b"").decode(errors="replace").strip() or (r.stdout or b"").decode(errors="replace").strip()
    return text.splitlines()[-1] if text else f"exit status {r.returncode}"


def node_command(c: Cluster, node: NodeRun, args: Sequence[str]) -> list[str]:
    """argv running ``vllm-wizard ARGS`` on ``node`` (locally or over ssh)."""
    if node.dest is None:
        return [*c.local_wizard, *args]
    return ssh_argv(c.ssh, node.dest, [*c.wizard, *args])


def launch_all_nodes(plan_path: Path, data: Mapping[str, Any], local_label: str, hosts: Mapping[str, str],
                     values: Mapping[str, str], ssh: Sequence[str] = (), wizard: Sequence[str] = ("vllm-wizard",),
                     extra: Sequence[str] = (), out=sys.stdout, run=None) -> Cluster:
    """Start every machine of plan-file ``data`` (read from ``plan_path``): ``local_label`` here,
    the others on ``hosts[label]`` over ssh; ``values`` are passed as ``--set`` to every node
    (``HEAD_IP`` among them), ``extra`` are more ``launch`` flags; ``run(argv, timeout, stdin)``
    runs each command (default: a subprocess). Returns the recorded cluster, each node with its run
    id (the command layer prints them); ``out`` gets the line naming the nodes stopped again when one
    fails to start.

    Raises LaunchError: a machine with no ``--host``, unreachable nodes (each named with ssh's
    error; nothing started), a node that failed to start (the others stopped again).
    """
    labels = plan_node_labels(data)
    bad = [x for x in labels if not _SAFE_LABEL.match(x)]
    if bad:
        raise LaunchError(f"node labels {bad!r} cannot be used over ssh (letters, digits, . _ -)")
    if local_label not in labels:
        raise LaunchError(f"--node {local_label!r} is not a machine of the plan; its machines: {', '.join(labels)}")
    missing = [x for x in labels if x != local_label and x not in hosts]
    if missing:
        raise LaunchError("--all-nodes needs the ssh destination of every other machine: "
                          + " ".join(f"--host {x}=[USER@]HOST" for x in missing))
    unknown = sorted(set(hosts) - set(labels))
    if unknown:
        raise LaunchError(f"--host {unknown[0]}=…: not a machine of the plan; its machines: {', '.join(labels)}")
    c = Cluster(plan=str(plan_path), nodes=[NodeRun(x, None if x == local_label else hosts[x]) for x in labels],
                ssh=list(ssh), wizard=list(wizard), started=time.time())
    run = run or _run
    remote = [n for n in c.nodes if n.dest is not None]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(remote))) as pool:
        checks = list(pool.map(lambda n: run(ssh_argv(c.ssh, n.dest, ["true"]), SSH_TIMEOUT_S), remote))
    down = [f"{n.label} ({n.dest}): {_err(r)}" for n, r in zip(remote, checks, strict=True) if r.returncode != 0]
    if down:
        raise LaunchError("unreachable over ssh, nothing started:\n  " + "\n  ".join(down))
    blob = plan_path.read_bytes()
    digest = hashlib.sha256(blob).hexdigest()[:16]
    remote_plan = f"{REMOTE_PLAN_DIR}/{digest}.yaml"
    copy = f"umask 077 && mkdir -p {REMOTE_PLAN_DIR} && cat > {remote_plan}"  # constants only
    for n in remote:
        r = run(["ssh", "-o", "BatchMode=yes", *c.ssh, n.dest, copy], SSH_TIMEOUT_S, stdin=blob)
        if r.returncode != 0:
            raise LaunchError(f"{n.label} ({n.dest}): copying the plan failed, nothing started: {_err(r)}")
    sets = [a for k, v in values.items() for a in ("--set", f"{k}={v}")]
    started: list[NodeRun] = []
    try:
        for n in [c.head, *remote]:
            path = str(plan_path) if n.dest is None else remote_plan
            r = run(node_command(c, n, ["launch", path, "--node", n.label, *sets, *extra]), LAUNCH_TIMEOUT_S)
            m = _RUN_LINE.search((r.stdout or b"").decode(errors="replace"))
            if r.returncode != 0 or not m:
                where = "this machine" if n.dest is None else n.dest
                raise LaunchError(f"{n.label} ({where}): launch failed: {_err(r)}")
            n.run_id = m.group(1)
            started.append(n)
    except LaunchError:
        for n in reversed(started):
            run(node_command(c, n, ["stop", n.started_run()]), SSH_TIMEOUT_S + 60)
        if started:
            out.write("stopped the nodes already started: " + ", ".join(n.label for n in started) + "\n")
        raise
    save_cluster(c)
    return c


def head_cluster(run_id: str) -> Cluster | None:
    """The cluster launch whose head run is exactly ``run_id`` (its record on this machine), or None
    when ``run_id`` heads none or the record cannot be read — a run is told apart as a cluster head
    here only (``status``'s hint, the wizard's monitor)."""
    try:
        path = clusters_root() / f"{run_id}.json"
        return Cluster.from_dict(json.loads(path.read_text())) if path.is_file() else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def node_status(c: Cluster, n: NodeRun, run=None) -> dict[str, Any]:
    """Ask node ``n`` of ``c`` for its run: ``{label, dest, run_id, ok, error, run}`` with ``run`` the
    node's ``status RUN --json`` row (``run_id``, ``status``, ``outcome``, ``processes``: the plan-state
    dicts with ``name``, ``state``, ``pid``, ``ports``, ``restarts``, ``since``, ``create_time``, ``cause``,
    ``log``) when ``ok``; else ``error``, ssh's (or the command's) last line of output. Blocking: up to
    :data:`SSH_TIMEOUT_S` s; never raises for an unreachable node. ``run(argv, timeout)`` runs the
    command (default: a subprocess)."""
    r = (run or _run)(node_command(c, n, ["status", n.started_run(), "--json"]), SSH_TIMEOUT_S)
    row: dict[str, Any] = {"label": n.label, "dest": n.dest, "run_id": n.run_id, "ok": False, "error": None,
                           "run": None}
    try:
        rows = json.loads((r.stdout or b"").decode())
    except ValueError:
        row["error"] = _err(r)
        return row
    if not rows:
        row["error"] = f"no run {n.run_id} recorded there"
    row["run"], row["ok"] = (rows[0] if rows else None), bool(rows)
    return row


def cluster_status(c: Cluster, run=None) -> list[dict[str, Any]]:
    """Every node's :func:`node_status`, asked in parallel, in the cluster's node order."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(c.nodes)) as pool:
        return list(pool.map(lambda n: node_status(c, n, run), c.nodes))


def node_log_tail(c: Cluster, n: NodeRun, process: str, lines: int = 200, run=None) -> list[str]:
    """The last ``lines`` lines of ``process``'s log on node ``n`` (``vllm-wizard logs RUN PROCESS -n
    N`` there, over ssh for a remote node; its header lines included). Blocking, up to
    :data:`SSH_TIMEOUT_S` s. Raises LaunchError with ssh's or the command's error."""
    r = (run or _run)(node_command(c, n, ["logs", n.started_run(), process, "-n", str(lines)]), SSH_TIMEOUT_S)
    if r.returncode != 0:
        raise LaunchError(f"{n.label}: {_err(r)}")
    return (r.stdout or b"").decode(errors="replace").splitlines()


def stop_cluster(c: Cluster, timeout: float = 15.0) -> list[tuple[NodeRun, int, str]]:
    """``stop`` every node's run (remote ones first, in parallel, then this machine's); returns
    ``(node, exit status, last line)`` per node."""
    def one(n: NodeRun) -> tuple[NodeRun, int, str]:
        r = _run(node_command(c, n, ["stop", n.started_run(), "--timeout", f"{timeout:g}"]),
                 SSH_TIMEOUT_S + timeout * 3)
        text = (r.stdout or b"").decode(errors="replace").strip()
        return n, r.returncode, (text.splitlines()[-1] if text else _err(r))

    remote = [n for n in c.nodes if n.dest is not None]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(remote))) as pool:
        results = list(pool.map(one, remote))
    return [*results, one(c.head)]


def node_of(c: Cluster, label: str) -> NodeRun:
    """The node called ``label``; LaunchError listing the cluster's nodes."""
    for n in c.nodes:
        if n.label == label:
            return n
    raise LaunchError(f"--node {label!r}: not a node of this cluster; its nodes: {', '.join(n.label for n in c.nodes)}")
