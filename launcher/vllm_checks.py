"""What the installed vLLM checks at start and which ports it binds, mirrored per vLLM version.

docs/supervision.md §13 holds the table: every rule here names the vLLM versions it mirrors and the
vLLM source file it was read from. The preflight (``launcher/preflight.py``) and the node checks
(``launcher/launch.py``) pick a rule with :func:`rule_for` by the vLLM version they already read
(``vllm --version``, cached per install); an unknown version gets the newest rule read.

Rules, each read in the vLLM 0.32.0 CPU build's installed source:

* ``cpu-memory`` (``vllm/v1/worker/cpu_worker.py``, ``vllm/platforms/cpu.py``,
  ``vllm/utils/cpu_resource_utils.py``): ``VLLM_CPU_KVCACHE_SPACE`` (an integer of GiB; ``""`` is
  unset) or ``--kv-cache-memory-bytes`` sets ``cache_config.kv_cache_memory_bytes``. When it is
  None the worker refuses to start if ``ceil(total × --gpu-memory-utilization)`` exceeds the NUMA
  node's available memory; when it is set the worker makes no such check and refuses only when the
  KV size exceeds the available memory at KV allocation.
* ``gpu-memory`` (``vllm/v1/worker/utils.py`` ``request_memory``): an accelerator worker refuses to
  start when the device's free memory is below ``ceil(total × --gpu-memory-utilization)``, with or
  without an explicit KV size.
* ``gpu-memory-utilization-default`` (``vllm/config/cache.py``): 0.92 in 0.32; 0.9 before (the
  value the wizard measured on earlier builds; not read in their source).
* ``nixl-side-channel`` (``vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_scheduler.py``):
  one listener per engine (DP rank) at ``VLLM_NIXL_SIDE_CHANNEL_PORT + data_parallel_index``.
  vLLM 0.10's own NixlConnector guide documented ``base + dp_rank × tp_size + tp_rank`` (one per
  TP rank); that model is kept for versions below 0.11.
* ``mooncake-bootstrap`` (``…/kv_connector/v1/mooncake/mooncake_connector.py``): one bootstrap
  server at ``VLLM_MOONCAKE_BOOTSTRAP_PORT + data_parallel_index × tensor_parallel_size``, by the
  first local engine only.
* ``data-parallel-arguments`` (``vllm/engine/arg_utils.py``): ``--data-parallel-hybrid-lb`` without
  ``--data-parallel-size-local`` is refused at argument parsing.
* ``visible-devices`` (``vllm/v1/engine/utils.py``): each local DP rank takes TP × PP devices of
  those the process sees (``CUDA_VISIBLE_DEVICES`` …); more than it sees is refused.
* ``shm-segments`` (``vllm/v1/executor/multiproc_executor.py``,
  ``vllm/distributed/device_communicators/shm_broadcast.py``): the multiprocess executor (always on
  CPU, ``vllm/platforms/cpu.py``; on accelerators when the local world size is above 1) creates
  one broadcast ring of ``(VLLM_MQ_MAX_CHUNK_BYTES_MB MiB + 1 + local workers) × 10`` bytes and one
  response ring of ``(24 MiB + 2) × 10`` per local worker, and refuses each whose size exceeds
  ``/dev/shm``'s free space (``check_shm_free_space``).
* ``connector-modules`` (``vllm/distributed/kv_transfer/kv_connector/factory.py``, ``…/v1/lmcache_connector.py``,
  ``…/v1/lmcache_mp_connector.py``): the KV connector's own module (``lmcache``) is imported in the
  ``vllm serve`` process; checked by ``launcher/connector_check.py`` against the ``vllm``'s Python.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vllm_deploy_wizard.common import versions
from vllm_deploy_wizard.common.flags import last_flag_value

_GIB = 2**30
_MIB = 2**20


@dataclass(frozen=True)
class Rule:
    """One mirrored vLLM behaviour: ``key`` (the rule's name), the vLLM ``since`` version it holds
    from (inclusive; None: any older), ``read_in`` (the vLLM version whose source was read, or
    ``None`` when taken from vLLM's documentation), ``source`` (the vLLM file it mirrors) and
    ``model`` (which variant of the rule applies: the functions here switch on it)."""

    key: str
    since: str | None
    read_in: str | None
    source: str
    model: str


#: Every rule, newest first within a key (docs/supervision.md §13).
RULES: tuple[Rule, ...] = (
    Rule("cpu-memory", None, "0.32.0", "vllm/v1/worker/cpu_worker.py", "explicit-kv-skips-utilization"),
    Rule("gpu-memory", None, "0.32.0", "vllm/v1/worker/utils.py", "utilization-vs-free"),
    Rule("gpu-memory-utilization-default", "0.32", "0.32.0", "vllm/config/cache.py", "0.92"),
    Rule("gpu-memory-utilization-default", None, None, "vllm/config/cache.py", "0.9"),
    Rule("nixl-side-channel", "0.11", "0.32.0",
         "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_scheduler.py", "per-dp-rank"),
    Rule("nixl-side-channel", None, None, "docs/features/nixl_connector_usage.md (vLLM 0.10)", "per-tp-rank"),
    Rule("mooncake-bootstrap", None, "0.32.0",
         "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py", "first-local-engine"),
    Rule("data-parallel-arguments", None, "0.32.0", "vllm/engine/arg_utils.py", "hybrid-lb-needs-local-size"),
    Rule("visible-devices", None, "0.32.0", "vllm/v1/engine/utils.py", "world-within-visible"),
    Rule("shm-segments", None, "0.32.0", "vllm/distributed/device_communicators/shm_broadcast.py",
         "largest-ring-vs-free"),
    Rule("connector-modules", None, "0.32.0", "vllm/distributed/kv_transfer/kv_connector/factory.py",
         "imported-in-the-vllm-process"),  # checked in launcher/connector_check.py
)


def rule_for(key: str, version: str | None) -> Rule:
    """The rule ``key`` for vLLM ``version`` (``"0.32.0+cpu"``; None = unknown: the newest rule).

    Raises ``KeyError`` naming the known keys for an unknown ``key``."""
    rules = [r for r in RULES if r.key == key]
    if not rules:
        raise KeyError(f"no vLLM rule {key!r}; known: {', '.join(sorted({r.key for r in RULES}))}")
    if version:
        for rule in rules:
            if rule.since is None or versions.at_least(version, rule.since) is not False:
                return rule
    return rules[0]


def default_gpu_memory_utilization(version: str | None) -> float:
    """``--gpu-memory-utilization`` when the argv sets none, for vLLM ``version`` (fraction 0–1)."""
    return float(rule_for("gpu-memory-utilization-default", version).model)


def gpu_memory_utilization(argv: Sequence[str], version: str | None) -> float:
    """The ``--gpu-memory-utilization`` fraction ``argv`` asks for (vLLM's default when absent or not
    a number: a bad value is argparse's error, reported by vLLM itself)."""
    raw = last_flag_value(list(argv), "--gpu-memory-utilization")
    try:
        return float(raw) if raw is not None else default_gpu_memory_utilization(version)
    except ValueError:
        return default_gpu_memory_utilization(version)


_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_MULT = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_bytes(text: str) -> int | None:
    """``--kv-cache-memory-bytes`` as vLLM reads it (``human_readable_int``,
    vllm/utils/argparse_utils.py, 0.32): ``1k`` = 1000, ``1K`` = 1024, a plain integer; None
    when it is neither."""
    text = text.strip()
    m = _HUMAN.fullmatch(text)
    if m:
        return int(float(m.group(1)) * _MULT[m.group(2)])
    return int(text) if text.isdigit() else None


def explicit_kv_cache_bytes(argv: Sequence[str], env: Mapping[str, str]) -> tuple[int | None, str | None]:
    """``(bytes, what)`` of the KV cache size the process sets explicitly — vLLM's
    ``cache_config.kv_cache_memory_bytes`` — or ``(None, None)`` when it sets none.

    ``VLLM_CPU_KVCACHE_SPACE`` (GiB, an integer; ``""`` counts as unset; vllm/platforms/cpu.py
    overrides the flag with it) wins over ``--kv-cache-memory-bytes``. Raises ``ValueError`` naming
    the variable/flag and what is valid when the value is one vLLM would fail to parse."""
    space = env.get("VLLM_CPU_KVCACHE_SPACE")
    if space is not None and space != "":
        if not space.strip().isdigit():
            raise ValueError(f"VLLM_CPU_KVCACHE_SPACE={space!r} is not a whole number of GiB (vLLM reads it "
                             "with int(); e.g. VLLM_CPU_KVCACHE_SPACE=4)")
        return int(space) * _GIB, f"VLLM_CPU_KVCACHE_SPACE={space}"
    flag = last_flag_value(list(argv), "--kv-cache-memory-bytes")
    if flag is None:
        return None, None
    size = human_bytes(flag)
    if size is None:
        raise ValueError(f"--kv-cache-memory-bytes {flag!r} is not a size vLLM reads (an integer, or a number "
                         "with k/m/g/t (powers of 1000) or K/M/G/T (powers of 1024), e.g. 4G)")
    return size, f"--kv-cache-memory-bytes {flag}"


@dataclass(frozen=True)
class Refusal:
    """A start vLLM would refuse: ``text`` (the problem line) and, when one change fixes it,
    ``fix_args`` (flags to set, last wins) or ``fix_env`` (variables to set)."""

    text: str
    fix_args: tuple[str, ...] = ()
    fix_env: tuple[tuple[str, str], ...] = ()


def fitting_utilization(free: int, total: int, margin: float) -> float:
    """The largest ``--gpu-memory-utilization`` (to 0.01) whose share of ``total`` fits in ``free``
    bytes, less ``margin`` (a fraction) for memory others take meanwhile."""
    return (math.floor(free / total * 100 + 1e-9) - margin * 100) / 100


def cpu_memory_refusals(name: str, argv: Sequence[str], env: Mapping[str, str], total: int, free: int,
                        version: str | None, margin: float = 0.02) -> list[Refusal]:
    """What vLLM's CPU worker refuses at start for process ``name`` on a NUMA node of ``total``
    bytes with ``free`` available (rule ``cpu-memory``, module docstring).

    No explicit KV size: ``ceil(total × utilization) > free`` is refused, the fix lowering
    ``--gpu-memory-utilization`` to what fits (less ``margin``). Explicit KV size: refused only when
    it exceeds ``free``. A KV size vLLM cannot parse is a refusal naming the valid form."""
    try:
        kv_bytes, what = explicit_kv_cache_bytes(argv, env)
    except ValueError as exc:
        return [Refusal(f"{name!r}: {exc}")]
    if kv_bytes is not None:
        if kv_bytes > free:
            fit = max(0, int(free * (1 - margin)) // _GIB)
            fix_env = (("VLLM_CPU_KVCACHE_SPACE", str(fit)),) if fit >= 1 else ()
            return [Refusal(f"{name!r}: {what} asks vLLM for a {kv_bytes / _GIB:.1f} GiB KV cache but the NUMA node "
                            f"has {free / _GIB:.1f} of {total / _GIB:.1f} GiB free (vLLM refuses at KV allocation); "
                            + (f"set VLLM_CPU_KVCACHE_SPACE={fit}" if fix_env else "free memory first"),
                            fix_env=fix_env)]
        return []
    util = gpu_memory_utilization(argv, version)
    requested = math.ceil(total * util)
    if requested <= free:
        return []
    fits = fitting_utilization(free, total, margin)
    fix = ("--gpu-memory-utilization", f"{fits:g}") if fits >= 0.05 else ()
    return [Refusal(f"{name!r}: vLLM's CPU backend reserves --gpu-memory-utilization {util:g} of one NUMA node "
                    f"({requested / _GIB:.1f} of {total / _GIB:.1f} GiB) but {free / _GIB:.1f} GiB is free; "
                    + (f"set --gpu-memory-utilization {fits:g}, or set the KV cache size "
                       "(VLLM_CPU_KVCACHE_SPACE=GiB), which vLLM then uses instead"
                       if fix else "free memory first"),
                    fix_args=fix)]


def _int_flag(argv: list[str], *names: str) -> int | None:
    for name in names:
        value = last_flag_value(argv, name)
        if value is not None and value.isdigit():
            return int(value)
    return None


def local_dp_ranks(argv: Sequence[str]) -> range:
    """The data-parallel indexes of the engines ``argv``'s process runs on its node (vLLM 0.32
    ``vllm/engine/arg_utils.py``): from ``--data-parallel-start-rank`` (else ``--data-parallel-rank``,
    else, with ``--nnodes`` above 1, the rank ``--node-rank`` implies, else 0),
    ``--data-parallel-size-local`` of them (1 with ``--data-parallel-rank`` alone; with ``--nnodes``
    the node's share of the world; else ``--data-parallel-size``)."""
    a = list(argv)
    size = _int_flag(a, "--data-parallel-size", "-dp") or 1
    rank = _int_flag(a, "--data-parallel-rank", "-dpn")
    start = _int_flag(a, "--data-parallel-start-rank", "-dpr")
    local = _int_flag(a, "--data-parallel-size-local", "-dpl")
    nnodes = _int_flag(a, "--nnodes") or 1
    inferred_rank, inferred_local = 0, size
    if nnodes > 1:
        within_dp = tensor_parallel_size(a) * (_int_flag(a, "--pipeline-parallel-size", "-pp") or 1)
        node_world = size * within_dp // nnodes
        inferred_rank = (_int_flag(a, "--node-rank") or 0) * node_world // within_dp
        inferred_local = max(node_world // within_dp, 1)
    first = start if start is not None else (rank if rank is not None else inferred_rank)
    count = local if local is not None else (1 if rank is not None else inferred_local)
    return range(first, first + max(count, 1))


def tensor_parallel_size(argv: Sequence[str]) -> int:
    """``--tensor-parallel-size`` / ``-tp`` (1 when absent)."""
    return _int_flag(list(argv), "--tensor-parallel-size", "-tp") or 1


def local_world_size(argv: Sequence[str]) -> int:
    """Worker processes of one engine on this node: tensor × pipeline parallel sizes (an engine
    spread over nodes with ``--nnodes`` is split evenly)."""
    a = list(argv)
    world = tensor_parallel_size(a) * (_int_flag(a, "--pipeline-parallel-size", "-pp") or 1)
    nnodes = _int_flag(a, "--nnodes") or 1
    return max(1, world // nnodes)


def nixl_side_channel_ports(argv: Sequence[str], base: int, version: str | None) -> list[int]:
    """Ports the NIXL handshake listeners of ``argv``'s process bind, from ``base``
    (``VLLM_NIXL_SIDE_CHANNEL_PORT``), by the ``nixl-side-channel`` rule of ``version``."""
    ranks = local_dp_ranks(argv)
    if rule_for("nixl-side-channel", version).model == "per-dp-rank":
        return [base + dp for dp in ranks]
    tp = tensor_parallel_size(argv)
    return [base + dp * tp + r for dp in ranks for r in range(tp)]


def mooncake_bootstrap_ports(argv: Sequence[str], base: int, version: str | None) -> list[int]:
    """The Mooncake bootstrap server port of ``argv``'s process (``VLLM_MOONCAKE_BOOTSTRAP_PORT`` =
    ``base``): one, at ``base + first local DP index × TP size`` (rule ``mooncake-bootstrap``)."""
    rule_for("mooncake-bootstrap", version)
    return [base + local_dp_ranks(argv)[0] * tensor_parallel_size(argv)]


#: vLLM 0.32 ``MessageQueue`` defaults (vllm/distributed/device_communicators/shm_broadcast.py).
RESPONSE_CHUNK_BYTES = 24 * _MIB
RING_CHUNKS = 10


def shm_segments(argv: Sequence[str], env: Mapping[str, str], on_cpu: bool, version: str | None) -> list[int]:
    """Sizes in bytes of the ``/dev/shm`` rings one ``vllm serve`` process creates on its node (rule
    ``shm-segments``): per local engine, one broadcast ring and one response ring per local worker;
    [] when vLLM runs the engine in one process (an accelerator engine of one worker)."""
    rule_for("shm-segments", version)
    workers = local_world_size(argv)
    if workers == 1 and not on_cpu:
        return []
    try:
        chunk = int(env.get("VLLM_MQ_MAX_CHUNK_BYTES_MB", "16")) * _MIB
    except ValueError:
        chunk = 16 * _MIB
    broadcast = (chunk + 1 + workers) * RING_CHUNKS  # ShmRingBuffer: (chunk + 1 + readers) × chunks
    response = (RESPONSE_CHUNK_BYTES + 2) * RING_CHUNKS
    engines = len(local_dp_ranks(argv))
    return [broadcast, *([response] * workers)] * engines


def shm_refusal(name: str, segments: Sequence[int], free: int, where: str = "/dev/shm") -> Refusal | None:
    """vLLM's ``check_shm_free_space``: a refusal when the largest of ``segments`` (bytes) exceeds
    ``free`` bytes of ``where``; None otherwise. All of them together above ``free`` is not
    refused by vLLM (segments are sparse until written) and is left to the caller to warn about."""
    if not segments or max(segments) <= free:
        return None
    return Refusal(f"{name!r}: vLLM needs {max(segments) / _MIB:.0f} MiB of shared memory for one message ring "
                   f"({sum(segments) / _MIB:.0f} MiB for all {len(segments)}) but {where} has {free / _MIB:.0f} MiB "
                   "free; free /dev/shm, or run the container with --ipc=host or --shm-size=1g")


def argument_refusals(name: str, argv: Sequence[str], version: str | None) -> list[Refusal]:
    """Combinations of ``vllm serve`` arguments that vLLM ``version`` refuses while parsing them
    (rule ``data-parallel-arguments``): ``--data-parallel-hybrid-lb`` needs
    ``--data-parallel-size-local`` (or ``--nnodes`` above 1, from which vLLM infers it)."""
    rule_for("data-parallel-arguments", version)
    a = list(argv)
    if ("--data-parallel-hybrid-lb" in a and _int_flag(a, "--data-parallel-size-local", "-dpl") is None
            and (_int_flag(a, "--nnodes") or 1) <= 1):  # with --nnodes vLLM infers the local size
        return [Refusal(f"{name!r}: --data-parallel-hybrid-lb needs --data-parallel-size-local "
                        "(the data-parallel ranks on this node; vLLM refuses the arguments otherwise); "
                        "add --data-parallel-size-local N")]
    return []
