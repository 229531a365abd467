"""Defaults for a plan's placeholders (recipes-synthesis §2.13) offered on the review screen.

A plan is a template: ``$HEAD_IP``, ``$IFACE_NAME``, ``$ROUTER_HOST``, ``$PREFILL_NODE_1`` … stay
literal until launch (plan-json §3.2). The wizard runs on the node that launches node 0 — the head,
the router host, the first prefill/decode node of a co-located or single-node pool, the Dynamo control
plane — so those placeholders default to this host's primary address, and interface placeholders to
the interface carrying it. Both come from detection (``inventory.host.primary_ip`` /
``default_iface``, detection.md §5.3); without them, from the kernel's route choice (a UDP
``connect`` sends nothing). The plan's own ``placeholder_defaults`` (e.g. ``ROUTER_PORT: 30000``)
fill the rest. Anything else (other nodes' addresses) stays empty: the person must type it, and the
launcher refuses to start until it is filled (contracts §2). Defaults are offered, never applied
silently — they are editable inputs.
"""

from __future__ import annotations

import socket
from typing import Any, Iterable, Mapping

#: Placeholders that name an address of the node the wizard runs on.
SELF_ADDRESS = frozenset({
    "HEAD_IP", "HEAD_NODE_IP", "ROUTER_HOST", "MASTER_ADDR", "MOONCAKE_MASTER_IP", "DYN_CONTROL_IP",
    "PREFILL_NODE_1", "DECODE_NODE_1", "VLLM_INSTANCE_1",
    "NODE_IP",  # a multi-node member's own address (docs/multi-node.md §1)
})
#: Placeholders that name the network interface of that address.
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
    """The network interface carrying ``address`` (``""`` if unknown)."""
    import psutil

    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == address for a in addrs):
            return name
    return ""


def detected_defaults(names: Iterable[str], inventory: Any = None,
                      plan_defaults: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``{name: default}`` for each placeholder name (no ``$``); ``""`` where nothing is known."""
    names = list(names)
    host = getattr(inventory, "host", None)
    address = getattr(host, "primary_ip", None) or ""
    iface = getattr(host, "default_iface", None) or ""
    if not address and any(n in SELF_ADDRESS or n in SELF_IFACE for n in names):
        address = primary_address()
    if not iface and address and any(n in SELF_IFACE for n in names):
        iface = interface_of(address)
    plan_defaults = plan_defaults or {}
    out = {}
    for name in names:
        if name in SELF_ADDRESS:
            out[name] = address
        elif name in SELF_IFACE:
            out[name] = iface
        else:
            out[name] = str(plan_defaults.get(name, "") or "")
    return out
