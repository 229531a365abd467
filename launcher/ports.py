"""TCP ports: is one free, and who holds it.

A port is busy when binding it on all interfaces fails (a listener on 127.0.0.1 or 0.0.0.0 both
make that bind fail on Linux). ``SO_REUSEADDR`` is set so a port in TIME_WAIT after a stop counts
as free, as it is for the servers we start (uvicorn sets it too). The holder is named from
``psutil.net_connections`` when the OS lets us see it (root, or our own processes).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterable


def port_free(port: int, host: str = "0.0.0.0") -> bool:
    """True when a TCP listener could bind ``host:port`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def busy_ports(ports: Iterable[int]) -> list[int]:
    """The ports among ``ports`` that are not free, in the given order."""
    return [p for p in ports if not port_free(p)]


def port_holder(port: int) -> str | None:
    """``"name (pid N)"`` of the process listening on ``port``, or None when it cannot be seen."""
    import psutil

    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, PermissionError):
        return None
    for c in conns:
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN and c.pid:
            try:
                return f"{psutil.Process(c.pid).name()} (pid {c.pid})"
            except psutil.Error:
                return f"pid {c.pid}"
    return None


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A currently free loopback TCP port chosen by the OS (for tests and defaults).

    The OS may offer the same ephemeral port again once the probe socket is closed, so ports
    already returned by this process are never returned twice.
    """
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
