"""An OpenSSH server inside each network-namespace host, for the ``--all-nodes`` e2e test.

Each sshd has its own config, host key and pid file under a temp dir, listens on its host's
address only, and accepts one client key made by the test (no passwords). :func:`sshd_hosts`
yields an ssh config file the client uses (``ssh -F``: the key, ``User root``, known hosts in the
temp dir — the person's ``~/.ssh`` is never touched) and stops every sshd afterwards.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from netns_hosts import Host
from polling import wait_until

SSHD = "/usr/sbin/sshd"


def unavailable() -> str | None:
    """Why sshd hosts cannot be made here (None when they can)."""
    if not Path(SSHD).exists() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "openssh-server / openssh-client not installed (apt-get install openssh-server openssh-client)"
    return None


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                   capture_output=True)


@contextmanager
def sshd_hosts(hosts: list[Host], root: Path) -> Iterator[Path]:
    """Start an sshd in every host; yield the client's ssh config file (``Host <ip>`` entries work
    for every host address)."""
    root.mkdir(parents=True, exist_ok=True)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
    client_key = root / "client_key"
    _keygen(client_key)
    known = root / "known_hosts"
    known.touch()
    procs: list[subprocess.Popen] = []
    try:
        for h in hosts:
            d = root / h.name
            d.mkdir()
            _keygen(d / "host_key")
            conf = d / "sshd_config"
            conf.write_text("\n".join([
                f"ListenAddress {h.ip}", "Port 22", f"HostKey {d / 'host_key'}", f"PidFile {d / 'sshd.pid'}",
                f"AuthorizedKeysFile {client_key}.pub", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password", "UsePAM no", "StrictModes no", "LogLevel ERROR",
                "AcceptEnv none", ""]))
            procs.append(subprocess.Popen(h.argv(SSHD, "-D", "-e", "-f", str(conf)),
                                          stdout=subprocess.DEVNULL, stderr=open(d / "sshd.log", "w")))
        config = root / "ssh_config"
        config.write_text("\n".join([
            "Host *", "  User root", f"  IdentityFile {client_key}", "  IdentitiesOnly yes",
            "  StrictHostKeyChecking accept-new", f"  UserKnownHostsFile {known}", "  ConnectTimeout 10",
            "  LogLevel ERROR", ""]))
        for h, p in zip(hosts, procs, strict=True):  # ready when a login works
            def sshd_log(h=h) -> str:
                return f"sshd.log: {(root / h.name / 'sshd.log').read_text(errors='replace')[-500:]}"

            def login_works(h=h, p=p) -> bool:
                if p.poll() is not None:
                    raise RuntimeError(f"sshd on {h.name} exited: {sshd_log(h)}")
                return subprocess.run(["ssh", "-F", str(config), "-o", "BatchMode=yes", h.ip, "true"],
                                      capture_output=True, timeout=30).returncode == 0

            wait_until(login_works, 20, f"a login on {h.name} over ssh", interval=0.2, detail=sshd_log)
        yield config
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
