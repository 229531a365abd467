"""One launch path for the CLI and the wizard: plan file + node + values + node facts → a run.

:func:`launch` (and :func:`prepare`, the same without starting) is what ``vllm-wizard launch`` and
the wizard's review screen call. Decided here once:

* Placeholder defaults from node facts (:func:`placeholder_values`): the names in
  :data:`SELF_ADDRESS` (the head, the router host, the first prefill/decode node, the Mooncake
  master, the Dynamo control plane) default to this host's primary address when this launch is node
  0 — the node the wizard runs on — and :data:`SELF_IFACE` names to the interface carrying it on any
  node; the plan's ``placeholder_defaults`` fill the rest; ``--set`` values win over both. Launched
  as a machine label (``--node prefill-node-0``), only that machine's own pool address
  (``$PREFILL_NODE_1``) is this host's: another pool's machine (``$DECODE_NODE_1``) is not.
* Node checks beyond :func:`~vllm_deploy_wizard.launcher.preflight.check`, from :class:`NodeFacts`
  passed in (the launcher never imports detection): the plan's accelerators vs this node (a GPU plan
  on a CPU node is refused unless ``force``), memory fit (CPU: what the installed vLLM's CPU worker
  checks — the utilization share of one NUMA node only when no KV cache size is set, else the KV
  size; GPU: free device memory vs utilization), ``/dev/shm`` (the host's, or a container's
  ``--shm-size``) vs the message rings vLLM creates, and ``HF_HUB_OFFLINE=1`` with a model missing
  from the local Hugging Face cache. The vLLM rules are picked by the installed vLLM version
  (``launcher/vllm_checks.py``, docs/supervision.md §13).
* Container runs get ``~`` in their volume mounts expanded before docker sees them
  (:func:`with_home_expanded`).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.errors import LaunchError
from vllm_deploy_wizard.common.flags import last_flag_value
from vllm_deploy_wizard.common.numa import rank_numa_node
from vllm_deploy_wizard.common.parallelism import devices_on_node
from vllm_deploy_wizard.launcher.causes import UTIL_MARGIN
from vllm_deploy_wizard.launcher.containers import (
    DOCKER_DEFAULT_SHM_BYTES,
    container_shm_bytes,
    expand_home,
    inner_serve_argv,
    parse_run,
)
from vllm_deploy_wizard.launcher.process import child_env
from vllm_deploy_wizard.launcher.spec import ProcessSpec, RunSpec
from vllm_deploy_wizard.launcher.vllm import is_vllm_serve
from vllm_deploy_wizard.launcher.vllm_checks import (
    Refusal,
    cpu_memory_refusals,
    fitting_utilization,
    gpu_memory_utilization,
    shm_refusal,
    shm_segments,
)

#: Placeholders naming the head of the deployment (node 0's address): this host's address when
#: launching node 0, over any plan default.
HEAD_ADDRESS = frozenset({"HEAD_IP", "HEAD_NODE_IP", "MASTER_ADDR", "MOONCAKE_MASTER_IP", "DYN_CONTROL_IP"})
#: Placeholders naming the router host or the first node of a pool: the plan's default first (a
#: co-located PD plan says 127.0.0.1), else this host's address when launching node 0.
POOL_ADDRESS = frozenset({"ROUTER_HOST", "PREFILL_NODE_1", "DECODE_NODE_1", "VLLM_INSTANCE_1"})
#: Placeholders naming this node's own address on every node (a multi-node member's ``VLLM_HOST_IP``,
#: docs/multi-node.md §1).
NODE_ADDRESS = frozenset({"NODE_IP"})
#: Placeholders that may name an address of this host.
SELF_ADDRESS = HEAD_ADDRESS | POOL_ADDRESS | NODE_ADDRESS
#: Placeholders that name this node's network interface (this host's, on any node, over any plan default).
SELF_IFACE = frozenset({"IFACE_NAME", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"})

_GIB = 2**30


@dataclass(frozen=True)
class NodeFacts:
    """What the launch needs to know about this node, detected by the caller (plain values).

    ``primary_ip`` / ``default_iface``: this host's address and its interface (None: unknown, the
    kernel's route choice is used). ``accelerator``: ``cuda``, ``rocm``, ``xpu``, ``npu`` … or None on
    a CPU-only node; ``device_free_bytes`` / ``device_total_bytes``: per device, in index order (empty
    when unknown). ``numa_mem_total_bytes`` / ``numa_mem_free_bytes``: the smallest NUMA node with CPUs
    (vLLM's CPU backend binds to one node), None when unknown. ``hf_cache``: the Hugging Face hub cache
    folder (None: huggingface_hub's default for the process env). ``shm_total_bytes`` /
    ``shm_free_bytes``: the size and free space of ``/dev/shm`` (None when unknown).
    """

    primary_ip: str | None = None
    default_iface: str | None = None
    accelerator: str | None = None
    device_free_bytes: tuple[int, ...] = ()
    device_total_bytes: tuple[int, ...] = ()
    numa_mem_total_bytes: int | None = None
    numa_mem_free_bytes: int | None = None
    hf_cache: str | None = None
    shm_total_bytes: int | None = None
    shm_free_bytes: int | None = None

    @property
    def accelerators(self) -> int:
        """Number of devices known (0 on a CPU node)."""
        return len(self.device_total_bytes) if self.accelerator else 0


def node_facts(host: Any = None, inventory: Any = None) -> NodeFacts:
    """This node's :class:`NodeFacts` from detection's objects, read as plain attributes (the
    launcher does not import detect).

    ``host``: detection's ``HostFacts`` — ``primary_ip``, ``default_iface``, ``numa_nodes`` (each
    ``id``, ``cpus``, ``mem_bytes``, ``available_bytes``), ``cgroup_limit_bytes`` and
    ``cgroup_usage_bytes`` (bytes). ``inventory``: detection's ``Inventory``, whose ``primary``
    accelerator gives the kind and per-device memory. The NUMA memory is the node a CPU rank is
    sized against (:func:`~vllm_deploy_wizard.common.numa.rank_numa_node`: the smallest with CPUs),
    its ``available_bytes`` being the free memory vLLM's CPU worker checks at
    start; under a cgroup limit below the node's size the limit is the total and the free memory is
    at most the limit less the cgroup's usage. ``host``'s ``shm_total_bytes`` / ``shm_free_bytes``
    give ``/dev/shm``. ``host`` None gives unknown address, interface and memory (a launch then
    makes no memory check).
    """
    primary = inventory.primary if inventory is not None and getattr(inventory, "accelerators", None) else None
    totals = tuple(int(d.memory_bytes or 0) for d in primary.devices) if primary is not None else ()
    total, free = _numa_memory(host) if host is not None else (None, None)
    return NodeFacts(primary_ip=getattr(host, "primary_ip", None) or None,
                     default_iface=getattr(host, "default_iface", None) or None,
                     accelerator=(primary.kind or primary.brand) if primary is not None else None,
                     device_total_bytes=totals,
                     numa_mem_total_bytes=total, numa_mem_free_bytes=free,
                     shm_total_bytes=getattr(host, "shm_total_bytes", None),
                     shm_free_bytes=getattr(host, "shm_free_bytes", None))


def _numa_memory(host: Any) -> tuple[int | None, int | None]:
    node = rank_numa_node(getattr(host, "numa_nodes", None) or [])
    total = getattr(node, "mem_bytes", None)
    free = getattr(node, "available_bytes", None)
    if not total or free is None:
        return None, None
    limit = getattr(host, "cgroup_limit_bytes", None)
    if limit and limit < total:
        total, free = limit, min(free, limit - (getattr(host, "cgroup_usage_bytes", None) or 0))
    return total, free


def _primary_address() -> str:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # a UDP connect sends nothing: the kernel's route choice
        return probe.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


def _interface_of(address: str) -> str:
    import psutil

    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == address for a in addrs):
            return name
    return ""


def route_to(address: str) -> tuple[str, str] | None:
    """``(source address, interface)`` this host uses to reach IPv4 ``address`` — the kernel's route
    choice, as ``ip route get ADDRESS`` reports it (``… dev IFACE src SOURCE``), read through a UDP
    connect (it sends nothing); None when ``address`` is no IPv4 address or has no route."""
    import ipaddress

    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        return None
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((address, 9))
        source = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    if source.startswith("127."):
        return None
    return source, _interface_of(source)


def self_facts_needed(names: Iterable[str], node_rank: int = 0) -> bool:
    """Whether :func:`placeholder_values` would read this host's address or interface for ``names``."""
    return any(n in SELF_IFACE or n in NODE_ADDRESS or (n in SELF_ADDRESS and node_rank == 0) for n in names)


#: Placeholders naming one pool machine's address (``launcher/engines/slurm.py`` ``address_placeholders``).
_MACHINE_ADDRESS = re.compile(r"^((PREFILL|DECODE)_NODE|VLLM_INSTANCE)_\d+$")


def _pool_default(name: str, node_rank: int, node: str | None) -> bool:
    """Whether pool address ``name`` defaults to this host's address: launched as machine label
    ``node``, when ``name`` is that machine's own address (``prefill-node-0`` → ``PREFILL_NODE_1``,
    ``instance-1-node-0`` → ``VLLM_INSTANCE_2``; ``launcher/engines/slurm.py`` ``address_placeholders``,
    the one label → placeholder mapping); ``$ROUTER_HOST`` and a launch without a label: on node 0."""
    from vllm_deploy_wizard.launcher.engines.slurm import address_placeholders

    if node is None or name == "ROUTER_HOST" or not _MACHINE_ADDRESS.match(name):
        return name in POOL_ADDRESS and node_rank == 0
    return name in address_placeholders(node)


def placeholder_values(names: Iterable[str], facts: NodeFacts | None = None, node_rank: int = 0,
                         plan_defaults: Mapping[str, Any] | None = None, head: str | None = None,
                         node: str | None = None) -> dict[str, str]:
    """``{name: default}`` for each placeholder name (no ``$``), ``""`` where nothing is known.

    In order: :data:`HEAD_ADDRESS` names on node 0, :data:`NODE_ADDRESS` and :data:`SELF_IFACE` names from this host's
    facts; then the plan's own defaults; then :data:`POOL_ADDRESS` names on node 0 from this host's
    facts. ``facts`` None (nothing detected) uses the kernel's route choice for the address and the
    interface carrying it; a fact that ``facts`` lacks stays unknown (``""``). ``head``: the group's
    head address (``HEAD_IP`` as given): this node's address and interface are then those of the
    route to it (:func:`route_to`) — on a node with two networks the default route may be the other.
    ``node``: the machine label launched (``--node``): of the pool addresses only its own defaults to
    this host's (:func:`_pool_default`); a co-located PD plan's ``127.0.0.1`` comes from ``plan_defaults``."""
    names = list(names)
    plan_defaults = {k: str(v) for k, v in (plan_defaults or {}).items() if v not in (None, "")}
    address, iface = (facts.primary_ip or "", facts.default_iface or "") if facts is not None else ("", "")
    if facts is None and self_facts_needed(names, node_rank):
        address = _primary_address()
        iface = _interface_of(address) if any(n in SELF_IFACE for n in names) else ""
    route = route_to(head) if head and self_facts_needed(names, node_rank) else None
    if route is not None:
        address, iface = route[0], route[1] or iface
    out = {}
    for name in names:
        if ((name in HEAD_ADDRESS and node_rank == 0) or name in NODE_ADDRESS) and address:
            out[name] = address
        elif name in SELF_IFACE and iface:
            out[name] = iface
        elif name in plan_defaults:
            out[name] = plan_defaults[name]
        elif _pool_default(name, node_rank, node):
            out[name] = address
        else:
            out[name] = ""
    return out


# ---------------------------------------------------------------- node checks


def _fits(free: float, total: float) -> float:
    return fitting_utilization(int(free), int(total), UTIL_MARGIN)


def _devices_needed(p: ProcessSpec) -> int:
    """Devices ``p`` uses on this node (:func:`vllm_deploy_wizard.common.parallelism.devices_on_node`;
    1 when no size is given)."""
    return devices_on_node(p.argv) or 1


def _on_cpu(p: ProcessSpec) -> bool:
    return (p.env.get("VLLM_TARGET_DEVICE", "").lower() == "cpu" or "VLLM_CPU_KVCACHE_SPACE" in p.env
            or (last_flag_value(p.argv, "--device") or "").lower() == "cpu")


#: Variables that narrow the devices a process sees (docs/detection.md §1), first set wins.
VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
                   "ZE_AFFINITY_MASK", "TPU_VISIBLE_CHIPS")


def _visible_devices(p: ProcessSpec) -> tuple[str, list[str]] | None:
    """``(variable, device ids)`` of the first device-visibility variable ``p``'s env sets to a list;
    None when it sets none (all of the node's devices)."""
    for name in VISIBILITY_VARS:
        value = p.env.get(name)
        if value is not None and value.strip() and "$" not in value:
            return name, [x for x in value.split(",") if x.strip()]
    return None


def _serve_of(p: ProcessSpec) -> tuple[ProcessSpec, int | None] | None:
    """``(the process as vLLM sees it, its /dev/shm bytes)`` for a ``vllm serve`` process (shm None:
    this host's) or a container running one (its argv inside, its env with the ``-e`` values, the
    container's ``/dev/shm``: None with ``--ipc=host``); None for anything else. A direct serve's env is
    the one its child gets (:func:`~vllm_deploy_wizard.launcher.process.child_env`: this launcher's
    environment — a ``VLLM_CPU_KVCACHE_SPACE`` or ``CUDA_VISIBLE_DEVICES`` exported by the shell, srun or
    ssh — under the plan's), since that is what vLLM reads."""
    if is_vllm_serve(p.argv):
        return replace(p, env=child_env(p)), None
    run = parse_run(p.argv)
    inner = inner_serve_argv(run) if run is not None else None
    if run is None or inner is None:
        return None
    env = dict(p.env)
    for i, tok in enumerate(run.flags):
        if tok in ("-e", "--env") and i + 1 < len(run.flags) and "=" in run.flags[i + 1]:
            k, _, v = run.flags[i + 1].partition("=")
            env[k] = v
    return replace(p, argv=tuple(inner), env=env), container_shm_bytes(run)


#: What a refused hardware mismatch (an accelerator plan on a node without accelerators) tells the
#: person to do, by front end: the CLI can force the launch, the wizard cannot (it re-plans instead).
MISMATCH_FIXES = {
    "cli": "plan for this node (vllm-wizard plan --detect …) or launch with --force",
    "tui": "plan for this node: esc back to the hardware step and pick this node's profile (★ detected); "
           "to run this plan anyway, export it (ctrl+o) and run `vllm-wizard launch --force PLAN`",
}


def node_refusals(spec: RunSpec, facts: NodeFacts, plan_accelerator: str | None = None, force: bool = False,
                  vllm_versions: Mapping[str, str | None] | None = None, front: str = "cli") -> list[Refusal]:
    """What :func:`node_problems` finds, each with the fix it names when one change fixes it
    (:class:`~vllm_deploy_wizard.launcher.vllm_checks.Refusal`: ``fix_args`` / ``fix_env``). ``front``
    ("cli" or "tui") picks the hardware mismatch's remedy (:data:`MISMATCH_FIXES`)."""
    versions = dict(vllm_versions or {})
    out: list[Refusal] = []
    seen = [(p, _serve_of(p)) for p in spec.processes]
    # each vLLM server as vLLM sees it: a container run's argv and env inside the container
    serves = [inner for _, found in seen if found is not None for inner in (found[0],)]
    if plan_accelerator:  # the plan says what it runs on
        gpu_plan = plan_accelerator != "cpu"
    else:  # an older plan file: parallel sizes above 1 on a non-CPU process say accelerators
        gpu_plan = any(not _on_cpu(p) and _devices_needed(p) > 1 for p in serves)
    if serves and gpu_plan and not facts.accelerator and not force:
        what = f"a {plan_accelerator} plan" if plan_accelerator else "a plan for accelerators"
        out.append(Refusal(f"{what} on a node without accelerators: this node has none, so vLLM would fail at "
                           f"start; {MISMATCH_FIXES[front]}"))
    elif serves and facts.accelerator and not force:
        for p in serves:
            need = _devices_needed(p)
            if plan_accelerator == "cpu" or _on_cpu(p):
                continue
            if need > facts.accelerators > 0:
                out.append(Refusal(f"{p.name!r} needs {need} devices (tensor × pipeline × data parallel) but this "
                                   f"node has {facts.accelerators}; lower the parallel sizes or launch on a larger "
                                   "node"))
                continue
            shown = _visible_devices(p)  # rule "visible-devices" (docs/supervision.md §13)
            if shown is not None and need > len(shown[1]):
                out.append(Refusal(f"{p.name!r} needs {need} devices (tensor × pipeline × data parallel) but "
                                   f"{shown[0]}={','.join(shown[1])} shows it {len(shown[1])}; lower the parallel "
                                   f"sizes or give it more devices"))
    for p in serves:
        version = versions.get(p.name)
        # rule "cpu-memory" only for a process vLLM's CPU backend runs: an accelerator plan on a node
        # without accelerators fails at start (refused above), not at the CPU worker's memory check
        if _on_cpu(p) or plan_accelerator == "cpu" or (not gpu_plan and not facts.accelerator):
            total, free = facts.numa_mem_total_bytes, facts.numa_mem_free_bytes
            if total and free is not None:
                out += cpu_memory_refusals(p.name, p.argv, p.env, total, free, version, UTIL_MARGIN)
        elif facts.device_total_bytes and facts.device_free_bytes:
            util = gpu_memory_utilization(p.argv, version)
            for i, (free, total) in enumerate(zip(facts.device_free_bytes, facts.device_total_bytes, strict=False)):
                if i >= _devices_needed(p):
                    break
                if total and free < util * total:
                    fits = _fits(free, total)
                    out.append(Refusal(
                        f"{p.name!r}: device {i} has {free / _GIB:.1f} of {total / _GIB:.1f} GiB free, less than "
                        f"--gpu-memory-utilization {util:g} ({util * total / _GIB:.1f} GiB); "
                        + (f"set --gpu-memory-utilization {fits:g} or free the device" if fits >= 0.05 else
                           "free the device (another process holds its memory)"),
                        fix_args=("--gpu-memory-utilization", f"{fits:g}") if fits >= 0.05 else ()))
                    break
    for p, found in seen:
        if found is None:
            continue
        inner, container_shm = found
        on_cpu = _on_cpu(inner) or not facts.accelerator
        segments = shm_segments(inner.argv, inner.env, on_cpu, versions.get(p.name))
        free = container_shm if container_shm is not None else facts.shm_free_bytes
        where = "the container's /dev/shm (docker's 64 MiB default without --shm-size)" if (
            container_shm == DOCKER_DEFAULT_SHM_BYTES and (run := parse_run(p.argv)) is not None
            and run.flag("--shm-size") is None) else (
            "the container's /dev/shm (--shm-size)" if container_shm is not None else "/dev/shm")
        refusal = shm_refusal(p.name, segments, free, where) if free is not None else None
        if refusal is not None:
            out.append(refusal)
    for p in serves:
        problem = offline_problem(p, facts) if is_vllm_serve(spec.get(p.name).argv) else None
        if problem:  # (a container reads the cache it mounts: not checked here)
            out.append(Refusal(problem))
    return out


def node_problems(spec: RunSpec, facts: NodeFacts, plan_accelerator: str | None = None,
                  force: bool = False, vllm_versions: Mapping[str, str | None] | None = None) -> list[str]:
    """Problems of running ``spec`` on the node ``facts`` describe (module docstring), one line each.

    ``plan_accelerator``: the backend the plan was made for (the plan file's ``plan.accelerator``:
    ``cuda``, ``rocm``, ``ascend``, ``tpu``, ``xpu``, ``cpu`` …, docs/plan-file.md §6), None when the
    plan does not say. ``force`` turns the hardware mismatch into no problem (memory is still checked).
    ``vllm_versions``: the vLLM version of each ``vllm serve`` process by name, which picks vLLM's
    rules (docs/supervision.md §13; missing or None: the newest rule read).
    """
    return [r.text for r in node_refusals(spec, facts, plan_accelerator, force, vllm_versions)]


def offline_problem(p: ProcessSpec, facts: NodeFacts) -> str | None:
    """With ``HF_HUB_OFFLINE=1`` (the process env or this environment) and a Hugging Face model id,
    the problem line when the model's ``config.json`` is not in the local cache; else None."""
    env = {**os.environ, **p.env}
    if str(env.get("HF_HUB_OFFLINE", "")).lower() not in ("1", "true", "yes", "on"):
        return None
    argv = list(p.argv)
    model = last_flag_value(argv, "--model") or (argv[2] if len(argv) > 2 and not argv[2].startswith("-") else None)
    if not model or model.startswith(("/", "./", "../", "~")) or Path(model).exists() or model.count("/") != 1:
        return None
    from huggingface_hub import try_to_load_from_cache

    cache = facts.hf_cache or env.get("HF_HUB_CACHE") or (
        str(Path(env["HF_HOME"]) / "hub") if env.get("HF_HOME") else None)
    found = try_to_load_from_cache(model, "config.json", cache_dir=cache,
                                   revision=last_flag_value(argv, "--revision"))
    if isinstance(found, str):
        return None
    return (f"{p.name!r}: HF_HUB_OFFLINE=1 but {model} is not in the local Hugging Face cache"
            f"{f' ({cache})' if cache else ''}; download it first (`hf download {model}`) or unset HF_HUB_OFFLINE")


# ---------------------------------------------------------------- the launch function


@dataclass
class Prepared:
    """A launch checked but not started: the ``spec`` for this machine, the placeholder ``values`` used
    (and which came from node facts, ``detected``, or the plan, ``planned``), every ``problems`` line
    (empty = go), ``warnings``, and ``refusals``: the node checks' problems with their fixes."""

    spec: RunSpec | None
    values: dict[str, str]
    detected: dict[str, str] = field(default_factory=dict)
    planned: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    """The node checks' problems with the fix each names (a subset of ``problems``)."""


def prepare(plan: str | Path | Mapping[str, Any], node: str | None = None, node_rank: int = 0,
            values: Mapping[str, str] | None = None, facts: NodeFacts | None = None, *, force: bool = False,
            check_flags: bool = True, preflight_kw: Mapping[str, Any] | None = None, front: str = "cli") -> Prepared:
    """Read ``plan`` (a plan file path, or its parsed data), fill placeholders (``values`` first, then
    :func:`placeholder_values`; a config file's path variable, when not given, its
    :func:`~vllm_deploy_wizard.launcher.config_files.config_file_defaults` path), select this
    machine's processes (``node`` label, else ``node_rank``) with the config files they read
    (``spec.config_files``, written when the run starts) and run every check:
    :func:`~vllm_deploy_wizard.launcher.preflight.check` and :func:`node_problems`. Raises
    :class:`LaunchError` only when the plan cannot be read or selected (unreadable, malformed,
    unresolved placeholders); everything else is in ``problems``. ``front``: who asks ("cli", "tui"),
    for the remedy the hardware mismatch names (:data:`MISMATCH_FIXES`)."""
    from vllm_deploy_wizard.launcher.config_files import config_file_defaults, config_files_for
    from vllm_deploy_wizard.launcher.plan_file import parse_plan, plan_placeholders, read_plan_data
    from vllm_deploy_wizard.launcher.preflight import check

    source = None if isinstance(plan, Mapping) else str(plan)
    data = plan if isinstance(plan, Mapping) else read_plan_data(plan)
    given = dict(values or {})
    names = plan_placeholders(data)
    inner = data.get("plan") if isinstance(data, Mapping) else None
    plan_defaults = (inner or {}).get("placeholder_defaults") or {} if isinstance(inner, Mapping) else {}
    paths = config_file_defaults(inner)  # where the plan's config files go unless given (config_files.py)
    given.update({n: v for n, v in paths.items() if not given.get(n)})
    given.update({n: str(Path(given[n]).expanduser().absolute()) for n in paths})
    defaults = placeholder_values([n for n in names if n not in given], facts, node_rank, plan_defaults,
                                  head=given.get("HEAD_IP"), node=node)
    planned = {n: v for n, v in defaults.items() if v and str(plan_defaults.get(n, "")) == v}
    detected = {n: v for n, v in defaults.items() if v and n not in planned}
    used = {**detected, **planned, **given}
    spec = with_home_expanded(parse_plan(data, source=source, node_rank=node_rank, values=used, node=node))
    files, file_problems = config_files_for(inner, spec, used)
    spec = replace(spec, config_files=files)
    warnings: list[str] = []
    found_versions: dict[str, str | None] = {}
    problems = file_problems + check(spec, check_flags=check_flags, warnings=warnings,
                                     versions_out=found_versions, **dict(preflight_kw or {}))
    accel = (inner or {}).get("accelerator") if isinstance(inner, Mapping) else None
    accel = str(accel) if accel else None  # plan files from before the field: judged by the argv
    refusals = node_refusals(spec, facts, accel, force, found_versions, front) if facts is not None else []
    problems += [r.text for r in refusals]
    return Prepared(spec, used, detected, planned, problems, warnings, refusals)


def with_home_expanded(spec: RunSpec) -> RunSpec:
    """``spec`` with ``~`` in every container run's volume mounts expanded to the process's ``HOME``
    (:func:`~vllm_deploy_wizard.launcher.containers.expand_home`: no shell runs the argv)."""
    procs = tuple(replace(p, argv=expand_home(p.argv, {**os.environ, **p.env})) for p in spec.processes)
    if all(a.argv == b.argv for a, b in zip(procs, spec.processes, strict=True)):
        return spec
    return replace(spec, processes=procs)


class LaunchRefused(LaunchError):
    """The preflight refused a launch: the message lists every problem; ``refusals`` are the node
    checks' ones with the fix each names (``fix_args`` / ``fix_env``), for a caller that applies them."""

    def __init__(self, message: str, refusals: Iterable[Refusal] = ()):
        super().__init__(message)
        self.refusals = list(refusals)


def launch(plan: str | Path | Mapping[str, Any], node: str | None = None, node_rank: int = 0,
           values: Mapping[str, str] | None = None, facts: NodeFacts | None = None, *, detach: bool = True,
           force: bool = False, check_flags: bool = True):
    """Prepare (:func:`prepare`) and start this machine's part of ``plan``; returns the
    :class:`~vllm_deploy_wizard.launcher.runs.RunInfo`. ``detach`` True: the supervisor is a daemon
    that outlives the caller. Raises :class:`LaunchRefused` (a :class:`LaunchError`) listing every
    problem when any."""
    from vllm_deploy_wizard.launcher.daemon import start_run

    prepared = prepare(plan, node, node_rank, values, facts, force=force, check_flags=check_flags)
    if prepared.problems:
        raise LaunchRefused(f"preflight found {len(prepared.problems)} problem(s):\n"
                            + "\n".join(f"  - {x}" for x in prepared.problems), prepared.refusals)
    assert prepared.spec is not None
    return start_run(prepared.spec, detach=detach)
