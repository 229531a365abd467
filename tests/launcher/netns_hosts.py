"""Separate "hosts" on one machine for the multi-node end-to-end tests: network namespaces.

A bridge in the root namespace (``198.18.X.1/24``, X picked free) and one namespace per host, each
joined by a veth pair whose inside end is named ``eth1`` and holds ``198.18.X.(k+2)/24`` with a
default route via the bridge — so the wizard's own detection finds that address and interface on
each host (``primary_ip``/``default_iface``), as on a real machine. Addresses are in 198.18.0.0/15
(reserved for network benchmark tests); nothing is forwarded beyond the bridge (the root namespace
does not route).

Commands run inside a host with ``nsenter --net=/run/netns/NAME`` (``ip netns exec`` remounts
/sys, which hides the cgroup tree from daemons such as slurmd). Everything made is removed on exit
of :func:`netns_hosts`, also when the test fails; the names carry this process's pid so parallel
test processes never collide.

Needs root and iproute2; :func:`unavailable` says why not, for ``pytest.skip``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from polling import wait_until

IFACE = "eth1"


@dataclass(frozen=True)
class Host:
    """One test host: namespace ``netns``, address ``ip`` on interface :data:`IFACE`."""

    name: str
    netns: str
    ip: str

    def argv(self, *cmd: str) -> list[str]:
        """``cmd`` run inside this host's network namespace."""
        return ["nsenter", f"--net=/run/netns/{self.netns}", *cmd]


def unavailable() -> str | None:
    """Why network-namespace hosts cannot be made here (None when they can)."""
    if os.geteuid() != 0:
        return "network-namespace hosts need root"
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (apt-get install iproute2 util-linux)"
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _free_subnet() -> int:
    """A third octet X with 198.18.X.0/24 unused on this machine."""
    used = _ip("-4", "-o", "addr").stdout
    start = os.getpid() % 200 + 20
    for k in range(250):
        x = (start + k) % 250 + 1
        if f"198.18.{x}." not in used:
            return x
    raise RuntimeError("no free 198.18.X.0/24 subnet")


@contextmanager
def netns_hosts(count: int = 2) -> Iterator[list[Host]]:
    """Make ``count`` hosts; yield them (``hosts[0]`` is meant as the head); remove them afterwards."""
    tag = f"wz{os.getpid() % 100000}"
    bridge = f"{tag}br"
    x = _free_subnet()
    made_ns: list[str] = []
    made_links: list[str] = [bridge]
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"198.18.{x}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        hosts = []
        for k in range(count):
            ns, outer, inner = f"{tag}h{k}", f"{tag}v{k}", f"{tag}p{k}"
            _ip("netns", "add", ns)
            made_ns.append(ns)
            _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
            made_links.append(outer)
            _ip("link", "set", outer, "master", bridge)
            _ip("link", "set", outer, "up")
            _ip("link", "set", inner, "netns", ns)
            ip = f"198.18.{x}.{k + 2}"
            for cmd in (("link", "set", inner, "name", IFACE), ("addr", "add", f"{ip}/24", "dev", IFACE),
                        ("link", "set", IFACE, "up"), ("link", "set", "lo", "up"),
                        ("route", "add", "default", "via", f"198.18.{x}.1")):
                _ip("-n", ns, *cmd)
            hosts.append(Host(name=f"node-{k}", netns=ns, ip=ip))
        yield hosts
    finally:
        for ns in made_ns:
            _ip("netns", "del", ns, check=False)
        for link in made_links:
            _ip("link", "del", link, check=False)
        with suppress(AssertionError):  # best effort: a link the kernel keeps is not this test's failure
            wait_until(lambda: not any(_ip("link", "show", link, check=False).returncode == 0 for link in made_links),
                       10, "the test links gone", interval=0.2)
