"""What one vLLM process sees of a partitioned accelerator group (docs/detection.md, docs/backends.md §9).

Detection counts physical units (the profile match needs them); vLLM sees the partitions the
driver exposes. :func:`vllm_view` says, per group, how many devices a vLLM process enumerates and
how much memory each has:

* **NVIDIA MIG**: a GPU with MIG on is one device of its first MIG instance's memory (a CUDA
  process reaches one MIG instance of a GPU; tensor parallelism cannot span slices); GPUs without
  MIG count as themselves.
* **AMD compute / memory partitions** (CPX, NPS4 …): each amdsmi handle is one device; memory is
  the card's VRAM split evenly over its partitions (per-partition VRAM reports are unreliable).
* **Ascend**: each die (logical NPU id of ``npu-smi info``) is a device already — the A3 two-die
  modules count as two; ``ASCEND_RT_VISIBLE_DEVICES`` takes those logical ids.
* **TPU**: chips, except TPU7x whose TensorCores are separate devices (the group's unit says which).
* **Intel XPU tiles**: with Level Zero's flat device hierarchy (the default) each tile of a
  multi-tile card is a device, with the card's VRAM split over its tiles.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_deploy_wizard.detect.inventory import AcceleratorGroup


@dataclass(frozen=True)
class VllmView:
    """``devices`` a vLLM process enumerates, ``memory_bytes_each`` (None = unknown), and
    ``reason`` (None when the view equals the physical count)."""

    devices: int
    memory_bytes_each: int | None
    reason: str | None = None


def vllm_view(group: AcceleratorGroup) -> VllmView:
    """The group as vLLM sees it (module docstring); never raises. A device-control variable that
    limits this shell (``CUDA_VISIBLE_DEVICES``, ``ASCEND_RT_VISIBLE_DEVICES`` …) limits vLLM too:
    ``devices`` is then the visible count."""
    view = _partitions(group)
    visible = group.visible
    if visible is not None and 0 < visible < view.devices:
        return VllmView(visible, view.memory_bytes_each,
                        f"this shell sees {visible} of {view.devices} devices (device-control variable)")
    return view


def _partitions(group: AcceleratorGroup) -> VllmView:
    """MIG instances, AMD partitions and XPU tiles (module docstring)."""
    physical = group.count
    each = int(group.mem_gib_each * 2**30) if group.mem_gib_each else None
    if group.brand == "NVIDIA" and group.flags.get("mig"):
        mig = [d for d in group.devices if d.details.get("mig")]
        sizes = [d.details["mig_memory_bytes"][0] for d in mig if d.details.get("mig_memory_bytes")]
        plain = [d.memory_bytes for d in group.devices if not d.details.get("mig") and d.memory_bytes]
        smallest = min(sizes + plain) if sizes + plain else each
        where = ", ".join(str(d.index) for d in mig)
        slice_text = f" ({sizes[0] / 2**30:.0f} GiB)" if sizes else ""
        return VllmView(physical, smallest, f"MIG on GPU {where}: vLLM gets one MIG instance there{slice_text}")
    if group.brand == "AMD" and group.flags.get("partitioned"):
        handles = int(group.flags.get("partition_handles") or 0)
        if handles and physical and handles != physical:
            per_card = handles // physical
            mem = each // per_card if each else None
            return VllmView(handles, mem, f"partitioned ({group.flags['partitioned']}): {handles} devices of "
                                          f"1/{per_card} card each")
    if group.brand == "Intel" and group.kind == "xpu":
        tiles = [int(d.details.get("tiles") or 1) for d in group.devices]
        if any(t > 1 for t in tiles):
            count = sum(tiles)
            mem = min((d.memory_bytes or 0) // t for d, t in zip(group.devices, tiles, strict=True)) or None
            return VllmView(count, mem, f"{count} tiles on {physical} cards (Level Zero flat hierarchy: one device "
                                        "per tile)")
    return VllmView(physical, each)
