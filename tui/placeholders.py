"""Detected defaults for a plan's placeholders (recipes-synthesis §2.13) shown on the review screen.

A plan is a template: ``$HEAD_IP``, ``$IFACE_NAME``, ``$ROUTER_HOST``, ``$PREFILL_NODE_1`` … stay
literal until launch (plan-json §3.2). On the node the wizard runs on, the sensible defaults are this
host's primary address and the interface carrying it; other node addresses cannot be guessed and are
left empty (the launcher refuses to start until they are filled — contracts §2).

The primary address is the one the kernel would route an outbound packet from: a UDP ``connect`` to a
non-routable address sends nothing and needs no network; the interface is found via psutil.
"""

from __future__ import annotations

import socket
from typing import Iterable

#: Placeholders that mean "an address of this node" (the head / router / Mooncake master run here).
SELF_ADDRESS = frozenset({"HEAD_IP", "HEAD_NODE_IP", "ROUTER_HOST", "MASTER_ADDR", "MOONCAKE_MASTER_IP", "PREFILL_NODE_1"})
#: Placeholders that mean "the network interface of that address".
SELF_IFACE = frozenset({"IFACE_NAME", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"})


def primary_address() -> str:
    """This host's outbound IPv4 address, ``127.0.0.1`` when there is no route."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))
        return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


def interface_of(address: str) -> str:
    """The network interface name carrying ``address`` (``lo`` for loopback, ``""`` if unknown)."""
    import psutil

    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == address for a in addrs):
            return name
    return ""


def detected_defaults(names: Iterable[str]) -> dict[str, str]:
    """``{name: default}`` for each placeholder name (no ``$``); ``""`` where nothing is detected."""
    names = list(names)
    address = primary_address() if any(n in SELF_ADDRESS or n in SELF_IFACE for n in names) else ""
    iface = interface_of(address) if address and any(n in SELF_IFACE for n in names) else ""
    out = {}
    for name in names:
        out[name] = address if name in SELF_ADDRESS else iface if name in SELF_IFACE else ""
    return out
