"""Planning for this node: the rules that join detection and the catalog, for the CLI and the wizard.

``vllm-wizard plan --detect`` and the wizard both call these, so a plan made for the detected node
is the same file whichever face made it: the planning defaults detection gives a selection
(hardware profile, devices per node), the hardware snapshot recorded in the plan file's provenance,
and the plan-time warnings about this node (device memory vLLM sees vs the profile's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def detected_device_count(inventory: Any) -> int | None:
    """Devices per node vLLM sees on this machine, the count a plan for this node is sized with.

    For accelerators it is vLLM's view of the primary group (:func:`detect.partitions.vllm_view`:
    MIG slices, AMD compute partitions and XPU tiles count as devices), else detect's
    ``device_count``; for a CPU-only node, the NUMA nodes with CPUs (vLLM's CPU backend runs one TP
    rank per NUMA node, so that is what a CPU profile's ``gpu_count`` means, docs/catalog.md §5).
    None when nothing is known (no inventory, a PCI-only group and no count)."""
    if inventory is None:
        return None
    primary = getattr(inventory, "primary", None)
    if primary is not None and not getattr(primary, "pci_only", False):
        from vllm_deploy_wizard.detect.partitions import vllm_view

        view = vllm_view(primary)
        if view.devices:
            return int(view.devices)
    count = getattr(inventory, "device_count", 0) or 0
    if not count and not (getattr(inventory, "accelerators", None) or []):
        count = getattr(getattr(inventory, "host", None), "numa_nodes_with_cpus", 0) or 0
    return int(count) if count else None


def apply_detected_defaults(catalog: Any, data: dict[str, Any], best: Any, inventory: Any) -> None:
    """Fill ``hardware`` and ``gpus`` in the selection mapping ``data`` from detection, where not given.

    ``hardware`` is the best candidate's profile (``best``: detect's top :class:`Candidate`).
    ``gpus`` is set only when planning for the detected profile and the count vLLM sees here
    (:func:`detected_device_count`) differs from the profile's ``gpu_count`` (a node with 4 of an
    8-GPU profile's devices; 64 CPX partitions of an 8-GPU MI300X node), so a matching node plans
    exactly like the profile. With ``devices`` picked, ``gpus`` is their count (the planner sets it)."""
    if "hardware" not in data and getattr(best, "profile_id", None):
        data["hardware"] = best.profile_id
    if data.get("devices"):  # the devices picked are the count (docs/fit.md §10)
        return
    if "gpus" in data or data.get("hardware") != getattr(best, "profile_id", None):
        return
    profile = catalog.taxonomy.hardware_profiles.get(data.get("hardware", ""))
    count = detected_device_count(inventory)
    if count and profile is not None and count != profile.gpu_count:
        data["gpus"] = count


def hardware_snapshot(inventory: Any, best: Any) -> dict[str, Any]:
    """The detect summary a plan file records in its provenance (docs/contracts.md §2).

    Keys: ``source``, ``device_count``, ``accelerator``, ``brand``, ``matched_profile``,
    ``match_quality``, ``notes``, ``host_capacity`` (the node's RAM and CPUs, which
    :func:`catalog.hostfit.host_fit_warnings` checks a plan against, docs/detection.md §5.1) and
    ``vllm_view`` (the devices vLLM sees: partitions, tiles; None for a CPU node). An inventory
    without accelerator groups (a CPU node; the wizard's tests give partial ones) records none.
    Raises AttributeError when the inventory has no host facts at all."""
    from dataclasses import asdict

    from vllm_deploy_wizard.catalog.hostfit import HostCapacity
    from vllm_deploy_wizard.detect.partitions import vllm_view

    primary = getattr(inventory, "primary", None)
    view = vllm_view(primary) if primary is not None and not primary.pci_only else None
    return {
        "source": getattr(inventory, "source", "live"),
        "device_count": getattr(inventory, "device_count", 0),
        "accelerator": primary.name if primary else None,
        "brand": primary.brand if primary else None,
        "matched_profile": getattr(best, "profile_id", None),
        "match_quality": getattr(best, "quality", None),
        "notes": list(getattr(best, "notes", None) or []),
        "host_capacity": asdict(HostCapacity.from_inventory(inventory)),
        "vllm_view": asdict(view) if view is not None else None,
    }


def detect_defaults(cat: Any, data: dict[str, Any], replay: Path | None = None,
                    scenario: str | None = None) -> dict[str, Any]:
    """Run detection (or replay the fixture ``replay``, with its ``scenario``), fill ``hardware`` and
    ``gpus`` in ``data`` (:func:`apply_detected_defaults`) and return the :func:`hardware_snapshot`."""
    from vllm_deploy_wizard.detect import detect, match_profiles

    facts = None
    if replay is not None:
        from vllm_deploy_wizard.detect.fixture import FixtureFacts

        facts = FixtureFacts.load(replay, scenario)
    inv = detect(facts)
    best = match_profiles(inv, cat.taxonomy.hardware_profiles)[0]
    apply_detected_defaults(cat, data, best, inv)
    return hardware_snapshot(inv, best)


def host_capacity(snapshot: dict[str, Any] | None, hardware: str | None) -> Any:
    """This node's :class:`~vllm_deploy_wizard.catalog.hostfit.HostCapacity` from a hardware
    snapshot, when the plan is for this node (``hardware`` is the detected profile; another profile
    means planning for another machine); else None."""
    if not snapshot or not hardware or hardware != snapshot.get("matched_profile"):
        return None
    from vllm_deploy_wizard.catalog.hostfit import HostCapacity

    return HostCapacity(**snapshot["host_capacity"])


def host_for_exports(host: Any, exports: list[str]) -> tuple[Any, list[str]]:
    """``(host, warnings)`` for a plan also written as ``exports`` (the flags given, e.g. ``["--k8s"]``).

    The exports run on other machines: the settings the planner derives from this node's facts
    (CPU thread binding ``VLLM_CPU_OMP_THREADS_BIND``, ``VLLM_CPU_KVCACHE_SPACE``, offload sizes
    lowered to its RAM, device pins) would be this node's, measured here and different run to run.
    With ``exports`` the plan is made without them (``host`` None) and one warning says so; otherwise
    ``host`` is returned as given."""
    if host is None or not exports:
        return host, []
    flags = " and ".join(exports)
    return None, [f"{flags}: the export is for other machines, so it is planned without this node's detected "
                  "facts (no CPU thread binding, KV cache space or offload sizes measured here; the profile's "
                  f"values apply): plan without {flags} for this node's own settings"]


def plan_provenance(plan: Any, selection: Any, catalog: Any, source: Any,
                    snapshot: dict[str, Any] | None) -> dict[str, Any]:
    """The provenance block of a plan file (docs/contracts.md §2): catalog source and revision,
    recipes revision, unverified marks, hardware profile, device count, the hardware snapshot
    (None when the plan was made without detection) and the selection it was made from.

    ``source`` is the :class:`~vllm_deploy_wizard.catalog.sources.CatalogSource` the catalog came
    from (None: the bundled catalog)."""
    return {
        "catalog_source": getattr(source, "label", None) or "bundled",
        "catalog_revision": getattr(source, "revision", None) or catalog.revision,
        "recipes_revision": catalog.recipes_revision or None,
        "unverified": list(plan.unverified),
        "hardware_profile": plan.resolved["hardware"],
        "device_count": plan.device_count,
        "hardware_snapshot": snapshot,
        "selection": selection.model_dump(exclude_none=True, exclude_defaults=True),
    }


def plan_document(plan: Any, selection: Any, catalog: Any, source: Any,
                  snapshot: dict[str, Any] | None) -> dict[str, Any]:
    """The plan-file mapping (docs/contracts.md §2) of ``plan`` with its :func:`plan_provenance` —
    what ``vllm-wizard plan --out`` and the wizard's export and launch write."""
    from vllm_deploy_wizard import __version__
    from vllm_deploy_wizard.catalog.render import plan_file

    return plan_file(plan, plan_provenance(plan, selection, catalog, source, snapshot), __version__)


def device_memory_warnings(cat: Any, plan: Any, view: dict[str, Any] | None) -> list[str]:
    """A warning when the memory per device vLLM sees on this node (``view``: a hardware snapshot's
    ``vllm_view``; MIG slice, AMD partition, XPU tile) differs by more than 10 % from the profile's
    per-device VRAM the plan was sized with; ``[]`` otherwise."""
    profile = cat.taxonomy.hardware_profiles.get(str(plan.resolved.get("hardware") or ""))
    seen = view or {}
    each = seen.get("memory_bytes_each")
    per = profile.vram_per_device_gb if profile is not None else None
    if not each or not per or not seen.get("reason"):
        return []
    have = each / 2**30
    if abs(have - per) <= 0.1 * per:
        return []
    return [f"warning: vLLM sees {seen['devices']} devices of {have:.0f} GiB each on this node ({seen['reason']}); "
            f"the {plan.resolved['hardware']} profile sizes the plan for {per:.0f} GB each"]


def node_plan_warnings(cat: Any, plan: Any, snapshot: dict[str, Any] | None) -> list[str]:
    """The plan-time warnings about this node for a plan made for it (the plan's hardware is the
    detected profile of ``snapshot``): :func:`device_memory_warnings`. ``[]`` without a snapshot
    or for a plan made for another machine."""
    if not snapshot or plan.resolved.get("hardware") != snapshot.get("matched_profile"):
        return []
    return device_memory_warnings(cat, plan, snapshot.get("vllm_view"))

