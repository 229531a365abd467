"""A real Slurm cluster over network-namespace hosts (Debian slurm-wlm + munge), for the e2e tests.

munged runs in the root namespace (its unix socket is shared through the filesystem), slurmctld in
the root namespace listening on the bridge address, and one slurmd per host started with
``nsenter --net`` in its own UTS namespace (``hostname`` inside jobs prints the node name). Every
file lives under one temp dir; :func:`slurm_cluster` stops every daemon (SIGTERM, then SIGKILL)
on exit, also on failure. Commands (``sbatch``, ``squeue``, ``scancel``) need ``env`` (``SLURM_CONF``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from netns_hosts import Host
from polling import wait_until

TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")


def unavailable() -> str | None:
    """Why a Slurm cluster cannot be brought up here (None when it can)."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install slurm-wlm munge)"
    return None


@dataclass
class Cluster:
    """A running cluster: ``env`` for client commands, ``nodes`` names (n0, n1, …) in host order."""

    env: dict[str, str]
    nodes: list[str]
    root: Path

    def run(self, *cmd: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster."""
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=timeout)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


@contextmanager
def slurm_cluster(hosts: list[Host], bridge_ip: str, root: Path, cpus: int = 2) -> Iterator[Cluster]:
    """Bring up munge, slurmctld and a slurmd per host; yield the :class:`Cluster` once ``sinfo``
    shows every node idle (RuntimeError with the daemons' logs otherwise)."""
    root.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen] = []
    try:
        munge_dir = root / "munge"
        munge_dir.mkdir()
        munge_dir.chmod(0o755)
        key = munge_dir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        sock = munge_dir / "munge.socket"
        procs.append(subprocess.Popen(
            ["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={sock}",
             f"--pid-file={munge_dir / 'munged.pid'}", f"--log-file={munge_dir / 'munged.log'}",
             f"--seed-file={munge_dir / 'munged.seed'}"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))

        def munged_log() -> str:
            return f"munged.log: {(munge_dir / 'munged.log').read_text(errors='replace')[-800:]}"

        def munged_up() -> bool:
            if procs[0].poll() is not None:
                raise RuntimeError(f"munged exited: {munged_log()}")
            return sock.exists()

        wait_until(munged_up, 10, "munged's socket", interval=0.1, detail=munged_log)
        nodes = [f"n{k}" for k in range(len(hosts))]
        for n in nodes:
            (root / "spool" / n).mkdir(parents=True)
        (root / "state").mkdir()
        mem = 4000
        conf = root / "slurm.conf"
        lines = [
            "ClusterName=wiztest",
            f"SlurmctldHost={socket.gethostname().split('.')[0]}({bridge_ip})",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={sock}",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            f"StateSaveLocation={root / 'state'}", f"SlurmdSpoolDir={root / 'spool'}/%n",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}", f"SlurmdPidFile={root}/slurmd-%n.pid",
            f"SlurmctldLogFile={root / 'slurmctld.log'}", f"SlurmdLogFile={root}/slurmd-%n.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none", "MpiDefault=none", "ReturnToService=2", "MailProg=/bin/true",
            "KillWait=60", "SlurmdTimeout=300", "InactiveLimit=0",
            *(f"NodeName={n} NodeAddr={h.ip} CPUs={cpus} Sockets=1 CoresPerSocket={cpus} ThreadsPerCore=1 "
              f"RealMemory={mem}" for n, h in zip(nodes, hosts, strict=True)),
            f"PartitionName=wiz Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP",
        ]
        conf.write_text("\n".join(lines) + "\n")
        env = dict(os.environ, SLURM_CONF=str(conf))
        procs.append(subprocess.Popen(["slurmctld", "-D", "-f", str(conf)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        for n, h in zip(nodes, hosts, strict=True):
            procs.append(subprocess.Popen(
                h.argv("unshare", "--uts", "sh", "-c", f'hostname {n}; exec slurmd -D -N {n} -f "$0"', str(conf)),
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        cluster = Cluster(env=env, nodes=nodes, root=root)
        states: dict[str, str] = {}
        def logs() -> str:
            tails = {f.name: f.read_text(errors="replace")[-600:] for f in root.glob("*.log")}
            return f"states {states}; logs: {tails}"

        def nodes_idle() -> bool:
            out = cluster.run("sinfo", "-h", "-N", "-o", "%N %t").stdout.split()
            states.update(zip(out[::2], out[1::2], strict=False))
            if not all(states.get(n) == "idle" for n in nodes) and any(p.poll() is not None for p in procs):
                raise RuntimeError(f"a slurm daemon exited: {logs()}")
            return all(states.get(n) == "idle" for n in nodes)

        wait_until(nodes_idle, 60, "every slurm node idle", interval=0.5, detail=logs)
        yield cluster
    finally:
        _stop(list(reversed(procs)))
