"""Device-control variables: "host has N, this shell sees M" (docs/detection.md §0.6, §3.1).

NVML, amdsmi, DCMI and sysfs enumerate physical devices and ignore ``CUDA_VISIBLE_DEVICES`` and
friends, so the profile keeps the physical count and the variable becomes a note plus
:attr:`AcceleratorGroup.visible`. ``CUDA_VISIBLE_DEVICES`` follows nvitop's parser: indices or
``GPU-``/``MIG-`` UUIDs, no mixing, parsing stops at the first invalid entry, a duplicate empties
the list, an empty string hides every GPU.
"""

from __future__ import annotations

from collections.abc import Mapping

from vllm_deploy_wizard.common import backends_registry
from vllm_deploy_wizard.detect.inventory import AcceleratorGroup

#: brand → variables in the order the runtime honours them (the backend registry's, docs/backends.md §13).
VARIABLES = backends_registry.visibility_variables()


def parse_cuda_visible(value: str, count: int) -> tuple[list[str], bool]:
    """Entries CUDA honours in ``value`` for ``count`` GPUs, and whether forms were mixed.

    >>> parse_cuda_visible("0,GPU-dd61,5", 8)
    (['0'], True)
    """
    entries: list[str] = []
    mixed = False
    form = None
    for raw in value.split(","):
        item = raw.strip()
        kind = "uuid" if item.startswith(("GPU-", "MIG-")) else "index" if item.isdigit() else None
        if kind is None or (kind == "index" and int(item) >= count):
            break
        if form is None:
            form = kind
        elif kind != form:
            mixed = True
            break
        if item in entries:
            return [], mixed
        entries.append(item)
    return entries, mixed


def apply(group: AcceleratorGroup, env: Mapping[str, str]) -> None:
    """Set ``group.visible`` and add notes from the brand's device-control variable."""
    var = next((v for v in VARIABLES.get(group.brand, ()) if env.get(v) is not None), None)
    if var is None:
        return
    value = env[var]
    if value.strip() == "":
        group.visible = 0
        runtime = {"NVIDIA": "CUDA", "AMD": "ROCm"}.get(group.brand, "the runtime")
        group.notes.append(f"{var} is set but empty: {runtime} will see no {group.unit}")
        return
    if var == "CUDA_VISIBLE_DEVICES" and group.brand == "NVIDIA":
        entries, mixed = parse_cuda_visible(value, group.count)
        if mixed:
            group.notes.append(f"{var} mixes indices and UUIDs; CUDA only honours the entries before the first "
                               "inconsistent one")
        if entries and entries[0].isdigit() and group.count > 1 and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
            group.notes.append(f"{var} uses indices but CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA may number "
                               "the GPUs differently from nvidia-smi")
    else:
        entries = []
        for item in value.split(","):
            head = item.strip().split(".")[0]
            if head and head not in entries:
                entries.append(head)
    group.visible = len(entries)
    if group.visible < group.count:
        group.notes.append(f"{var} limits this shell to {group.visible} of {group.count} {group.units()}")
