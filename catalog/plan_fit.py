"""The fit of a planned serve process (docs/fit.md §6): the plan's own flags → :mod:`.fit`.

:func:`plan_fit` reads the first engine process of a plan (``vllm serve`` argv and env), the
hardware profile (memory per device) and, when the plan is for this node, the detected host (a
NUMA node's memory on CPU), loads the model's facts (:func:`.model_facts.load_model_facts`, local
files only) and returns the ``fit`` block (``plan --json``, the plan file) and plan notes:

* one ``fit: …`` note with weights, KV memory, tokens, concurrency and the longest length;
* a ``warning: does not fit: …`` note with the computed fixes when it does not fit;
* when the config is not available here, a note saying so and naming ``hf download MODEL config.json``.

Flags read (the last occurrence wins, as vLLM's parser does): ``--tensor-parallel-size``/``-tp``,
``--pipeline-parallel-size``/``-pp``, ``--data-parallel-size``/``-dp``, ``--enable-expert-parallel``,
``--max-model-len``, ``--max-num-batched-tokens``, ``--gpu-memory-utilization``,
``--kv-cache-dtype``, ``--block-size``, ``--enforce-eager``; env ``VLLM_CPU_KVCACHE_SPACE``.
"""

from __future__ import annotations

from typing import Any

from vllm_deploy_wizard.common.errors import SelectionError
from vllm_deploy_wizard.common.flags import last_flag_value

from .fit import DEFAULT_GPU_UTILIZATION, GIB, ServeShape, fit
from .model_facts import ConfigUnavailable, fetch_command, load_model_facts

_SERVE_ROLES = ("serve", "head", "prefill", "decode")
#: Profile "GB" per device read as GiB less 1 % (an "80 GB" H100 reports 79.2 GiB total).
PROFILE_GIB_SHARE = 0.99


def _int(argv: list[str], *flags: str) -> int | None:
    v = last_flag_value(argv, *flags)
    return int(v) if v is not None and v.isdigit() else None


def _float(argv: list[str], *flags: str) -> float | None:
    v = last_flag_value(argv, *flags)
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


def serve_shape(argv: list[str], env: dict[str, str], *, backend: str, device_bytes: int | None,
                cpu_amx: bool = False) -> ServeShape:
    """The :class:`.fit.ServeShape` a serve argv + env asks for (module docstring lists the flags)."""
    space = env.get("VLLM_CPU_KVCACHE_SPACE", "")
    return ServeShape(
        tp=_int(argv, "--tensor-parallel-size", "-tp") or 1,
        pp=_int(argv, "--pipeline-parallel-size", "-pp") or 1,
        dp=_int(argv, "--data-parallel-size", "-dp") or 1,
        expert_parallel="--enable-expert-parallel" in argv or "-ep" in argv,
        max_model_len=_int(argv, "--max-model-len"),
        max_num_batched_tokens=_int(argv, "--max-num-batched-tokens"),
        gpu_memory_utilization=_float(argv, "--gpu-memory-utilization") or DEFAULT_GPU_UTILIZATION,
        kv_cache_dtype=last_flag_value(argv, "--kv-cache-dtype") or "auto",
        block_size=_int(argv, "--block-size"),
        enforce_eager="--enforce-eager" in argv,
        backend="cpu" if backend == "cpu" else ("rocm" if backend == "rocm" else "cuda"),
        device_bytes=device_bytes,
        cpu_kv_space_gib=int(space) if space.isdigit() else None,
        cpu_amx=bool(cpu_amx),
    )


def plan_fit(plan: Any, profile: Any, host: Any = None, *, cache_dir: str | None = None,
             device_bytes: int | None = None) -> tuple[dict | None, list[str]]:
    """``(fit block or None, notes)`` for ``plan`` (module docstring). Never raises: a plan is made
    whether or not its fit can be computed; what could not be read is said in the notes.
    ``device_bytes``: the detected total memory of the smallest device the plan uses (docs/fit.md
    §10; mixed GPUs), used instead of the profile's per-device GB."""
    proc = next((p for p in plan.processes if p.role in _SERVE_ROLES and "serve" in p.argv), None)
    if proc is None:
        return None, []
    # the model the serve process loads, as vLLM gets it (a variant's own checkpoint; the model's
    # own id, whose case may differ from the recipe id: Google/gemma-… serves google/gemma-…)
    at = proc.argv.index("serve") + 1
    loaded = proc.argv[at] if at < len(proc.argv) and not proc.argv[at].startswith("-") else None
    model = loaded or str(plan.resolved.get("model") or "")
    try:
        facts = load_model_facts(model, cache_dir=cache_dir)
    except ConfigUnavailable:
        return ({"available": False, "fetch": fetch_command(model)},
                [f"fit: not computed, config.json of {model} is not on this machine; "
                 f"`{fetch_command(model)}` fetches it (config only)"])
    except SelectionError as exc:
        return {"available": False, "error": str(exc)}, [f"fit: not computed ({exc})"]
    backend = getattr(plan, "accelerator", "cuda")
    device = None
    if backend == "cpu" and host is not None and getattr(host, "numa_node_bytes", None):
        device = int(host.numa_node_bytes)
    elif backend != "cpu" and device_bytes:
        device = int(device_bytes)
    elif profile is not None and getattr(profile, "vram_per_device_gb", None):
        device = int(profile.vram_per_device_gb * GIB * PROFILE_GIB_SHARE)
    try:
        report = fit(facts, serve_shape(proc.argv, proc.env, backend=backend, device_bytes=device,
                                        cpu_amx=bool(getattr(host, "amx", False))))
    except ValueError as exc:
        return {"available": False, "error": str(exc)}, [f"fit: not computed ({exc})"]
    block = {"available": True, "process": proc.name, **report.to_json()}
    if host is not None:
        block["host"] = offload_sizes(host, cpu_node=backend == "cpu")
    return block, report.lines()


def offload_sizes(host: Any, *, cpu_node: bool) -> dict[str, int | None]:
    """What a CPU KV tier may take on this node (docs/detection.md §5.1 share of the usable RAM,
    :func:`.hostfit.suggested_gib`): ``usable_bytes``, the LMCache ``l1_size_gb`` and the
    OffloadingConnector ``cpu_bytes_to_use`` to plan with (None when the RAM is unknown)."""
    from .hostfit import ACCELERATOR_NODE_SHARE, CPU_NODE_SHARE, suggested_gib

    n = suggested_gib(host, CPU_NODE_SHARE if cpu_node else ACCELERATOR_NODE_SHARE)
    return {"usable_bytes": host.usable_bytes, "lmcache_l1_size_gb": n,
            "offloading_cpu_bytes_to_use": n * GIB if n is not None else None}
