"""Which devices of the node a plan runs on (docs/fit.md §10): ``--devices``, mixed GPUs, Ascend slots.

A node may hold unlike devices (an RTX 3060 beside a 4090) or miss one (an Ascend box with a dead
slot). The person picks devices by the index ``vllm-wizard detect`` shows (``plan --devices 0,2``,
the wizard's device field); :func:`pin_devices` then pins every serve process to them:

* the backend's visibility variables (:func:`.backends.pin_env`: CUDA ``CUDA_VISIBLE_DEVICES``,
  ROCm ``CUDA_VISIBLE_DEVICES`` — vLLM 0.32's ROCm platform syncs ``HIP_VISIBLE_DEVICES`` into it
  and refuses the two when they differ, ``vllm/platforms/rocm.py`` ``_sync_hip_cuda_env_vars`` —,
  Ascend ``ASCEND_RT_VISIBLE_DEVICES`` with npu-smi's logic ids, XPU ``ZE_AFFINITY_MASK``, TPU
  ``TPU_VISIBLE_CHIPS``), a process the shape already pins to its own share (``0,1`` of a
  DP-per-device plan) being mapped onto the picked devices in order;
* NVIDIA also gets ``CUDA_DEVICE_ORDER=PCI_BUS_ID``: CUDA numbers devices fastest first by default,
  so without it index 0 may not be the GPU ``nvidia-smi`` lists as 0 (vLLM 0.32 warns on mixed
  devices without it, ``vllm/platforms/cuda.py`` ``CudaPlatform.log_warnings``); the variable is
  CUDA's own, so other backends do not get it;
* a docker process gets the same ``-e`` flags, and on Ascend one ``--device /dev/davinciN`` per
  picked die, N its physical id (:func:`ascend_device_nodes`).

The device memory the fit uses (:func:`device_bytes`) is the smallest of the devices the plan
uses (the picked ones, else the first ``gpus`` of the node): a TP group runs at the pace and size of
its smallest member.
"""

from __future__ import annotations

from typing import Any

from vllm_deploy_wizard.common.errors import SelectionError

from .backends import backend_for, pin_env

_SERVE_ROLES = ("serve", "head", "worker", "prefill", "decode")
#: Backends whose runtime orders devices by ``CUDA_DEVICE_ORDER`` (a CUDA runtime variable; HIP has no such switch).
_CUDA_ORDER = ("cuda",)


def parse_devices(text: str | list[int] | None, flag: str = "--devices") -> list[int] | None:
    """``"0,2"`` → ``[0, 2]`` (a list passes through); None/empty → None.

    Raises:
        SelectionError: a piece that is not a device index, or an index given twice (names ``flag``)."""
    if text is None or text == "" or text == []:
        return None
    pieces = [str(p).strip() for p in (text if isinstance(text, list) else str(text).split(","))]
    if not all(p.isdigit() for p in pieces):
        raise SelectionError(f"{flag} {text!r}: expected device indexes as `vllm-wizard detect` lists them, "
                             "comma-separated (e.g. 0,2)")
    ids = [int(p) for p in pieces]
    if len(set(ids)) != len(ids):
        raise SelectionError(f"{flag} {text!r}: a device is listed twice")
    return ids


def check_devices(devices: list[int], host: Any) -> None:
    """Refuse indexes this node does not have (when its devices are known).

    Raises:
        SelectionError: ``--devices 0,5: this node has devices 0, 1, 2 (…)``."""
    known = [d["index"] for d in (getattr(host, "devices", None) or [])]
    if known and any(i not in known for i in devices):
        listed = ", ".join(f"{d['index']} {d.get('name') or ''}".strip() for d in host.devices)
        raise SelectionError(f"--devices {','.join(map(str, devices))}: this node has devices {listed}")


def check_profile_devices(devices: list[int], profile: Any, host: Any = None) -> None:
    """Refuse indexes at or above the profile's devices per node when the node's own devices are not
    known (off the node, or detect found none): only for profiles whose device count is fixed
    (:data:`.device_fit.FIXED_DEVICE_BRANDS`, not a CPU backend) — elsewhere vLLM may see more
    devices than ``gpu_count`` (AMD compute partitions, NUMA nodes).

    Raises:
        SelectionError: ``--devices 9: NVIDIA H200 has 8 devices per node (…). Valid: indexes 0 to 7``."""
    from .device_fit import FIXED_DEVICE_BRANDS

    count = getattr(profile, "gpu_count", None)
    if getattr(host, "devices", None) or not count or profile.brand not in FIXED_DEVICE_BRANDS \
            or backend_for(profile).key == "cpu":
        return
    beyond = [i for i in devices if i >= count]
    if beyond:
        name = profile.display_name or "this profile"
        raise SelectionError(f"--devices {','.join(map(str, devices))}: index {', '.join(map(str, beyond))} is "
                             f"not a device of {name}, which has {count} devices per node (the profile's "
                             f"gpu_count). Valid: indexes 0 to {count - 1}")


def device_bytes(host: Any, devices: list[int] | None, count: int | None) -> int | None:
    """Total memory (bytes) of the smallest device the plan uses on ``host``: the picked
    ``devices``, else the first ``count`` (None: all); None when the node's devices are unknown."""
    known = list(getattr(host, "devices", None) or [])
    if not known:
        return None
    used = [d for d in known if d["index"] in devices] if devices else known[: count or len(known)]
    sizes = [d["memory_bytes"] for d in used if d.get("memory_bytes")]
    return min(sizes) if sizes else None


def pin_devices(profile: Any, plan: Any, devices: list[int], host: Any = None) -> list[str]:
    """Pin ``plan``'s serve processes to ``devices`` (module docstring); changes ``plan`` in place
    and returns notes. ``host``: the node's facts (visible ids and device nodes), or None."""
    backend = backend_for(profile).key
    if backend == "cpu":
        return ["--devices: a CPU plan has no devices to pick (vLLM CPU binds NUMA nodes)"]
    by_index = {d["index"]: d for d in (getattr(host, "devices", None) or [])}
    visible = [int(by_index.get(i, {}).get("visible_id", i)) for i in devices]
    variables = set(backend_for(profile).visibility_vars)
    for proc in plan.processes:
        if proc.role not in _SERVE_ROLES:
            continue
        own = next((proc.env[v] for v in variables if v in proc.env), None)
        share = [visible[int(i)] for i in own.split(",") if i.strip().isdigit() and int(i) < len(visible)] \
            if own else visible
        # the visibility variables are set; other pins of the shape (TPU process port, bounds) are kept
        env = {k: v for k, v in pin_env(profile, share or visible).items()
               if k in backend_for(profile).visibility_vars or k not in proc.env}
        if backend in _CUDA_ORDER:
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        set_process_env(proc, env, (plan.docker or {}).get("image"))
    from vllm_deploy_wizard.common.memory_labels import device_total

    names = ", ".join(f"{i} {by_index[i].get('name')} {device_total(by_index[i].get('memory_bytes'))}"
                      if i in by_index and by_index[i].get("name") else str(i) for i in devices)
    return [f"devices picked: {names} (pinned with {', '.join(sorted(variables))}"
            + (", CUDA_DEVICE_ORDER=PCI_BUS_ID" if backend in _CUDA_ORDER else "") + ")"]


def mixed_devices_note(host: Any, devices: list[int] | None, count: int | None) -> list[str]:
    """A ``warning:`` when this node's devices differ (name or total memory) and the plan uses them
    without ``--devices``: it names each and the memory the fit takes (the smallest used)."""
    from vllm_deploy_wizard.common.memory_labels import device_list, device_total, devices_differ

    known = list(getattr(host, "devices", None) or [])
    if devices or not devices_differ(known):
        return []
    used = known[: count or len(known)]
    return [f"warning: this node's devices differ ({'; '.join(device_list(known))}); the plan uses devices "
            f"{', '.join(str(d['index']) for d in used)} and sizes the KV cache for the smallest, "
            f"{device_total(device_bytes(host, None, count))}: pick others with --devices (the wizard's Devices field)"]


def set_process_env(proc: Any, env: dict[str, str], image: str | None) -> None:
    """Merge ``env`` into ``proc.env``; a docker process also gets its ``-e`` flags before the image
    (an old ``-e KEY=…`` of the same key replaced)."""
    proc.env.update(env)
    if proc.argv[:2] != ["docker", "run"] or not image or image not in proc.argv:
        return
    at = proc.argv.index(image)
    head: list[str] = []
    skip = False
    for i, tok in enumerate(proc.argv[:at]):
        if skip:
            skip = False
            continue
        if tok == "-e" and i + 1 < at and proc.argv[i + 1].split("=", 1)[0] in env:
            skip = True
            continue
        head.append(tok)
    for key, value in env.items():
        head += ["-e", f"{key}={value}"]
    proc.argv = head + proc.argv[at:]


def ascend_device_nodes(plan: Any, host: Any = None) -> list[str]:
    """On Ascend docker processes, pass one ``--device`` per die the process uses — the dies of its
    ``ASCEND_RT_VISIBLE_DEVICES`` (logic ids), else those synthesis listed — each as the device file
    this node names it (``/dev/davinci<phy-id>``, detect/ascend.py), so a node with a missing slot
    passes the files that exist. ``host`` None: the file of logic id N is ``/dev/davinciN``.
    Returns a note when a file differs from its logic id."""
    nodes = {int(d["visible_id"]): d["dev_node"] for d in (getattr(host, "devices", None) or [])
             if d.get("dev_node") and d.get("visible_id") is not None}
    renamed: dict[int, str] = {}
    for proc in plan.processes:
        if proc.argv[:2] != ["docker", "run"]:
            continue
        argv, listed, at = list(proc.argv), [], None
        i = 0
        while i < len(argv) - 1:
            tok, nxt = argv[i], argv[i + 1]
            if tok == "--device" and nxt.startswith("/dev/davinci") and nxt[12:].isdigit():
                listed.append(int(nxt[12:]))
                at = i if at is None else at
                del argv[i:i + 2]
                continue
            i += 1
        if at is None:
            continue
        pinned = proc.env.get("ASCEND_RT_VISIBLE_DEVICES", "")
        ids = [int(x) for x in pinned.split(",") if x.strip().isdigit()] or listed
        flags: list[str] = []
        for n in ids:
            path = nodes.get(n, f"/dev/davinci{n}")
            if path != f"/dev/davinci{n}":
                renamed[n] = path
            flags += ["--device", path]
        proc.argv = argv[:at] + flags + argv[at:]
    if not renamed:
        return []
    pairs = ", ".join(f"logic id {k} = {v}" for k, v in sorted(renamed.items()))
    return [f"Ascend device files as this node names them ({pairs}): docker passes those, "
            "ASCEND_RT_VISIBLE_DEVICES takes the logic ids"]
