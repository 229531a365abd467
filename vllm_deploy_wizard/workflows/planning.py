"""Planning for this node: the rules that join detection and the catalog, for the CLI and the wizard.

``vllm-wizard plan --detect`` and the wizard both call these, so a plan made for the detected node
is the same file whichever face made it: the planning defaults detection gives a selection
(hardware profile, devices per node), the hardware snapshot recorded in the plan file's provenance,
and the plan-time warnings about this node (device memory vLLM sees vs the profile's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def detect_defaults(cat: Any, data: dict[str, Any], replay: Path | None = None,
                    scenario: str | None = None) -> dict[str, Any]:
    """Run detection (or replay the fixture ``replay``, with its ``scenario``); fill ``hardware``/``gpus`` in ``data`` when not given.

    ``gpus`` is set only when the detected count differs from the profile's ``gpu_count`` (a node
    with 4 of an 8-GPU profile's devices), so a matching node plans exactly like the profile.
    Returns the hardware snapshot recorded in the plan file's provenance (with ``host_capacity``:
    the node's RAM and CPUs, which :func:`catalog.hostfit.host_fit_warnings` checks the plan against).
    """
    from vllm_deploy_wizard.detect import detect, match_profiles

    facts = None
    if replay is not None:
        from vllm_deploy_wizard.detect.fixture import FixtureFacts

        facts = FixtureFacts.load(replay, scenario)
    inv = detect(facts)
    profiles = cat.taxonomy.hardware_profiles
    best = match_profiles(inv, profiles)[0]
    if "hardware" not in data and best.profile_id:
        data["hardware"] = best.profile_id
    profile = profiles.get(data.get("hardware", ""))
    from vllm_deploy_wizard.detect.partitions import vllm_view

    view = vllm_view(inv.primary) if inv.primary is not None and not inv.primary.pci_only else None
    count = view.devices if view is not None else inv.device_count  # what vLLM sees (partitions, tiles)
    if "gpus" not in data and count and profile is not None and count != profile.gpu_count:
        data["gpus"] = count
    primary = inv.primary
    from dataclasses import asdict

    from vllm_deploy_wizard.catalog.hostfit import HostCapacity

    return {
        "source": inv.source,
        "device_count": inv.device_count,
        "accelerator": primary.name if primary else None,
        "brand": primary.brand if primary else None,
        "matched_profile": best.profile_id,
        "match_quality": best.quality,
        "notes": list(best.notes),
        # RAM/CPUs of the node, for catalog.hostfit's warnings (docs/detection.md §5.1)
        "host_capacity": asdict(HostCapacity.from_inventory(inv)),
        "vllm_view": asdict(view) if view is not None else None,
    }


def device_memory_warnings(cat: Any, plan: Any, view: dict[str, Any] | None) -> list[str]:
    """A warning when the memory per device vLLM sees on this node (MIG slice, AMD partition, XPU
    tile) differs by more than 10 % from the profile's per-device VRAM the plan was sized with."""
    profile = cat.taxonomy.hardware_profiles.get(str(plan.resolved.get("hardware") or ""))
    each = (view or {}).get("memory_bytes_each")
    per = profile.vram_per_device_gb if profile is not None else None
    if not each or not per or not (view or {}).get("reason"):
        return []
    have = each / 2**30
    if abs(have - per) <= 0.1 * per:
        return []
    return [f"warning: vLLM sees {view['devices']} devices of {have:.0f} GiB each on this node ({view['reason']}); "
            f"the {plan.resolved['hardware']} profile sizes the plan for {per:.0f} GB each"]
