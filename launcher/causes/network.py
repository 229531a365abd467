"""Network, port and multi-node failures: a port in use (``port_in_use``, the master port too), network
timeouts (``network_timeout``), NCCL/Gloo set-up (``collective_network``) and its shared memory
(``shm``), a missing network interface (``socket_iface``), an unreachable master address
(``master_unreachable``) and companion services (``companion_unreachable``).
"""

from __future__ import annotations

import math
import re
from typing import Any

from vllm_deploy_wizard.common.flags import last_flag_value

from .context import _Ctx, _model_from_argv, _Result

_ADDR = re.compile(r"\('([^']*)', (\d+)\)")
_ZMQ = re.compile(r"addr='[a-z]+://[^:']+:(\d+)'")
_PORT = re.compile(r"\bport:? (\d+)\b")


def _port_in_use(c: _Ctx) -> _Result:
    """A port in use: uvicorn's "[Errno 98] … address already in use" (vLLM 0.32.0
    ``vllm/entrypoints/openai/api_server.py``), ZMQ's "Address in use" and torch's TCPStore "server socket has
    failed to listen on any local network address"."""
    facts: dict[str, Any] = {}
    fix = "stop the process holding the port (vllm-wizard status shows wizard runs) or choose another --port"
    if m := _MASTER_PORT.search(c.line):  # torch's TCPStore of a multi-node head: the group's master port
        port = m.group(1)
        return (None, f"the group's master port {port} is already in use on this node",
                f"stop what holds port {port} (`ss -ltnp 'sport = :{port}'`), or give every node of the plan another "
                f"master port (`vllm-wizard plan … --arg=--master-port=NNNNN`)", None, None, None, {"port": int(port)})
    if m := _ADDR.search(c.line):
        facts.update(host=m.group(1), port=int(m.group(2)))
    elif m := _ZMQ.search(c.line):
        facts["port"] = int(m.group(1))
    elif m := _PORT.search(c.line):
        facts["port"] = int(m.group(1))
    elif re.search(r"TCPStore|rendezvous|server socket has failed to listen", "\n".join([c.line, *c.lines])):
        facts["what"] = "torch.distributed rendezvous (TCPStore)"
    else:
        port = last_flag_value(c.argv, "--port")
        if port and port.isdigit():
            facts["port"] = int(port)
        elif _model_from_argv(c.argv) is not None:
            facts["port"] = 8000
    context = "\n".join([*c.lines, " ".join(c.argv)]).lower()
    if facts.get("what"):
        fix = ("the torch.distributed rendezvous port is taken (another vLLM on this node, or one still shutting "
               "down): give each instance its own MASTER_PORT / VLLM_PORT, or wait for the old one to exit")
    elif "nixl" in context:
        fix = (f"port {facts.get('port')} is taken: give each vLLM on this node its own VLLM_NIXL_SIDE_CHANNEL_PORT "
               "(NIXL side channel; it also must not meet the KV-events port 5557)")
    elif "port" in facts:
        fix = (f"port {facts['port']} is taken: stop its holder (vllm-wizard status shows wizard runs) "
               "or choose another --port")
    summary = f"port {facts['port']} is already in use" if "port" in facts else "a port it needs is already in use"
    return None, summary, fix, None, None, None, facts


_CONNECT = re.compile(r"trying to connect to \(([^,]+), (\d+)\)")
_HTTP_HOST = re.compile(r"host='([^']+)'|Connection to (\S+?) timed out")


def _network_timeout(c: _Ctx) -> _Result:
    """A network timeout: torch.distributed's ``DistNetworkError`` (vLLM 0.32.0
    ``vllm/distributed/parallel_state.py`` rendezvous) and requests/urllib3 timeouts of the Hub client."""
    facts: dict[str, Any] = {}
    if m := _CONNECT.search(c.line):
        facts.update(host=m.group(1), port=int(m.group(2)))
        return (None, f"could not reach {m.group(1)}:{m.group(2)} (torch.distributed rendezvous) in time",
                f"start the head node first and check that {m.group(1)}:{m.group(2)} is reachable from this node "
                "(firewall, MASTER_ADDR/--data-parallel-address, the network interface: GLOO_SOCKET_IFNAME)",
                None, None, None, facts)
    if m := _HTTP_HOST.search(c.line):
        facts["host"] = m.group(1) or m.group(2)
    return (None, f"the network request to {facts.get('host', 'a remote host')} timed out",
            "check the network / proxy; pre-download the model (`hf download`) and set HF_HUB_OFFLINE=1 to run offline",
            None, None, None, facts)


def _collective(c: _Ctx) -> _Result:
    """NCCL or Gloo set-up between ranks failed (torch.distributed, reached by vLLM 0.32.0
    ``vllm/distributed/``): NCCL's own reason needs ``NCCL_DEBUG=INFO``."""
    if "Gloo" in c.line:
        return (None, "Gloo could not connect the ranks (connectFullMesh failed)",
                "set GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) to the interface the nodes reach each other on; "
                "check firewalls and that every node runs the same versions", None, None, None, {})
    no_root = "NCCL_DEBUG=INFO" in c.line or "unhandled" in c.line
    summary = "NCCL communication between ranks failed" + (
        "; the log holds no root cause (NCCL prints it only with NCCL_DEBUG=INFO)" if no_root else "")
    return (None, summary, "run again with NCCL_DEBUG=INFO to see NCCL's own reason; check NCCL_SOCKET_IFNAME, "
            "shared memory (docker --shm-size / --ipc=host) and that every node runs the same versions",
            None, None, {"NCCL_DEBUG": "INFO"} if no_root else None, {})


_SHM = re.compile(r"shared memory segment (\S+)")
_SHM_SPACE = re.compile(r"Insufficient space in (/[^\s:]+)(?: for [^:]*)?: (\d+) MiB required, (\d+) MiB free")


def _shm(c: _Ctx) -> _Result:
    """Shared memory too small: NCCL's "Error while creating shared memory segment", a bus error, and
    vLLM 0.32.0's own check ``vllm/distributed/device_communicators/shm_broadcast.py``: "Insufficient
    space in /dev/shm for …: 160 MiB required, 64 MiB free" (the fix sizes ``--shm-size`` from it)."""
    if m := _SHM_SPACE.search(c.line):
        path, need, free = m.group(1), int(m.group(2)), int(m.group(3))
        size_gib = max(1, math.ceil(need * 2 / 1024))
        return (None, f"{path} is full: {need} MiB required, {free} MiB free",
                f"give the container more shared memory: docker --shm-size={size_gib}g (twice what vLLM asked, at "
                f"least 1 GiB) or --ipc=host; outside a container, free {path} (stale files of killed runs) or "
                f"remount it larger", None, None, None, {"path": path, "required_mib": need, "free_mib": free})
    m = _SHM.search(c.line)
    facts = {"path": m.group(1)} if m else {}
    return (None, "shared memory (/dev/shm) is too small for NCCL / the worker processes",
            "in a container run it with --ipc=host or --shm-size=16g (docker), or raise the /dev/shm size",
            None, None, None, facts)


_ROUTER_TIMEOUT = re.compile(r"Timeout (\d+)s waiting for workers? (.{0,2000}?) ?to become healthy")


def _engines_not_ready(c: _Ctx) -> _Result:
    """A router that gave up waiting for its engines: vllm-router 0.1.17 (``vllm_router_rs``, the
    Rust core forked from sglang-router) fails with "Timeout 300s waiting for worker http://…:8000 to
    become healthy. Please set --router-worker-startup-timeout-secs … to a larger value". The fix
    doubles the timeout the log names (``--worker-startup-timeout-secs``)."""
    facts: dict[str, Any] = {}
    fix_args = None
    if m := _ROUTER_TIMEOUT.search(c.line):
        facts["timeout_s"] = int(m.group(1))
        workers = re.findall(r"https?://[^\s,'\]\"]+", m.group(2))
        if workers:
            facts["workers"] = workers
        fix_args = ["--worker-startup-timeout-secs", str(2 * int(m.group(1)))]
    who = ", ".join(facts.get("workers", [])) or "its engines"
    summary = (f"the router gave up waiting for {who} to become healthy"
               + (f" after {facts['timeout_s']} s" if "timeout_s" in facts else ""))
    fix = ((f"set {' '.join(fix_args)} (twice the timeout that ran out); " if fix_args else "")
           + "check that every engine URL the router names answers /health from the router's node (the engine's "
           "port and host in the router's --worker-urls) and that the engines are up (vllm-wizard status)")
    return None, summary, fix, fix_args, None, None, facts


_IFACE_MISSING = re.compile(r"Unable to find address for: (\S+)")
_MASTER = re.compile(r"to host (\S+):(\d+)|network address of \(([^,]+), (\d+)\)")
_ERRNO = re.compile(r"errno: \d+ - ([^)]+)\)")
_MASTER_PORT = re.compile(r"server socket has failed to listen on any local network address\. port: (\d+)")


def _socket_iface(c: _Ctx) -> _Result:
    m = _IFACE_MISSING.search(c.line)
    facts = {"iface": m.group(1)} if m else {}
    return (None, f"the network interface {m.group(1)!r} named for the group's traffic (GLOO_SOCKET_IFNAME / "
            "NCCL_SOCKET_IFNAME) is not on this node" if m else "the network interface named for the group's "
            "traffic (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME) is not on this node",
            "set $IFACE_NAME to this node's interface (`ip -br addr`; launch --set IFACE_NAME=…), or leave it to "
            "detection (docs/multi-node.md §2)", None, None, None, facts)


def _master_unreachable(c: _Ctx) -> _Result:
    m = _MASTER.search(c.line)
    addr = (f"{m.group(1)}:{m.group(2)}" if m.group(1) else f"{m.group(3)}:{m.group(4)}") if m else "?"
    # the socket error of the newest attempt (a retry line may end with "Interrupted system call")
    why = next((e[-1] for x in reversed([*c.lines, c.line]) if (e := _ERRNO.findall(x))), "no answer")
    facts: dict[str, Any] = {"address": addr}
    return (None, f"cannot reach the group's master address {addr} ({why})",
            "check $HEAD_IP (launch --set HEAD_IP=<the head's address>) and that the head node's run is up "
            "(`vllm-wizard status` there); the master port must be reachable from this node (docs/multi-node.md §2)",
            None, None, None, facts)


def _companion(c: _Ctx) -> _Result:
    return None, "a companion service (LMCache server, Mooncake, router) could not be reached", \
        "start the companion first (the plan's depends_on) and check its address and port", None, None, None, {}
