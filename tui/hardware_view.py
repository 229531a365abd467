"""What the hardware screen shows of the catalog and the node, as plain data (pure, no Textual).

:func:`hardware_facts` is the one place that turns the catalog's hardware profiles, detect's inventory
and the ranked candidates into what the hardware step paints: the Detected panel's lines, the profile
rows grouped by brand, each profile's device count, the detected profile and the devices-per-node
default on it (the rule ``plan --detect`` applies). The app computes it from its own state; at
start-up the forked start-up child (:mod:`vllm_deploy_wizard.tui.start_up`) computes it with the same
function before Textual has painted anything, and hands it over as plain data (strings, tuples), so
the first frame can show the detected profile preselected without the parent importing the catalog
or detect packages first (docs/architecture.md §4 "Wizard start-up").

What depends on the selection or the constraints answer (the ● pick mark, the H1–H5 gates once a
model is chosen) is not here: the screen applies it when it paints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_deploy_wizard.tui.catalog_view import ProfileRow, field, profile_groups
from vllm_deploy_wizard.tui.inventory_view import detected_node_size, inventory_lines, match_lines


@dataclass(frozen=True)
class HardwareFacts:
    """The hardware step's data, before the selection is applied.

    - ``detected``: the Detected panel's lines (inventory, then the preselection line and its notes;
      ``("Detecting accelerators and host facts…",)`` while the node is not detected yet).
    - ``groups``: ``(brand, rows)`` in listing order (:func:`~vllm_deploy_wizard.tui.catalog_view.profile_groups`);
      None while the catalog is not loaded.
    - ``gpu_counts``: profile id → the profile's ``gpu_count`` (the Devices-per-node placeholder).
    - ``best``: the detected profile's id (the best candidate with a quality other than ``none``), or None.
    - ``start_gpus``: the devices per node to preselect on ``best`` (None = the profile's own count;
      :func:`~vllm_deploy_wizard.workflows.planning.apply_detected_defaults`).
    """

    detected: tuple[str, ...]
    groups: tuple[tuple[str, tuple[ProfileRow, ...]], ...] | None
    gpu_counts: tuple[tuple[str, int], ...] = ()
    best: str | None = None
    start_gpus: int | None = None

    def gpu_count(self, profile_id: str) -> int | None:
        """The profile's device count per node, or None for an unknown id."""
        return dict(self.gpu_counts).get(profile_id)


def best_candidate(candidates: Iterable[Any]) -> Any | None:
    """The first of detect's ranked candidates whose quality is not ``none`` (the detected profile's
    candidate), or None when nothing matches."""
    return next((c for c in candidates if str(getattr(c, "quality", "none")) != "none"), None)


def hardware_facts(catalog: Any, inventory: Any, candidates: list) -> HardwareFacts:
    """:class:`HardwareFacts` for ``catalog`` (a Catalog, or None while loading), ``inventory`` (detect's
    Inventory, or None while detecting) and ``candidates`` (detect's ranked Candidates for them; empty
    until both are in). Pure and deterministic: the start-up child and the app get equal results from
    equal inputs."""
    profiles: Mapping[str, Any] = catalog.taxonomy.hardware_profiles if catalog is not None else {}
    lines = inventory_lines(inventory)
    if candidates:
        lines += [""] + match_lines(candidates, profiles)
    if catalog is None:
        return HardwareFacts(tuple(lines), None)
    best = best_candidate(candidates)
    groups = tuple((brand, tuple(rows)) for brand, rows in
                   profile_groups(profiles, candidates, detected_node_size(inventory)))
    counts = tuple((pid, int(n)) for pid, p in profiles.items() if isinstance(n := field(p, "gpu_count"), int))
    start_gpus = None
    if best is not None and inventory is not None:
        from vllm_deploy_wizard.workflows.planning import apply_detected_defaults

        data: dict[str, Any] = {"hardware": best.profile_id}
        apply_detected_defaults(catalog, data, best, inventory)
        start_gpus = int(data["gpus"]) if "gpus" in data else None
    return HardwareFacts(tuple(lines), groups, counts, best.profile_id if best is not None else None, start_gpus)
