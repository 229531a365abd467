"""Google TPU facts a plan states: what ``--tensor-parallel-size`` counts, and where a pod schedules.

vLLM TPU addresses each TensorCore as one device: TPU v6e (Trillium) has one per chip, TPU7x
(Ironwood) two, so Google's Ironwood recipes run ``--tensor-parallel-size=8`` on a 2x2x1 (4-chip)
node that requests ``google.com/tpu: 4``. GKE schedules a TPU pod only onto a node pool whose
``cloud.google.com/gke-tpu-accelerator`` and ``cloud.google.com/gke-tpu-topology`` labels it selects
(GKE "About TPUs in GKE", "TPU7x (Ironwood) in GKE"; docs/backends.md §5).
"""

from __future__ import annotations

from .models import HardwareProfile

TPU_PIN_NOTE = ("processes sharing one TPU VM are pinned with TPU_VISIBLE_CHIPS, TPU_CHIPS_PER_PROCESS_BOUNDS and "
                "TPU_PROCESS_BOUNDS")


def tensorcores_per_chip(profile: HardwareProfile) -> int:
    """TensorCores per TPU chip of a profile: ``gpu_count`` (the devices vLLM sees) over
    ``chips_per_node`` (TPU7x Ironwood: 8 over 4 = 2); 1 where the profile gives no chip count."""
    chips = profile.chips_per_node or profile.gpu_count
    return max(1, profile.gpu_count // chips) if chips else 1


def tpu_note(profile: HardwareProfile) -> str:
    """What --tensor-parallel-size counts on this TPU (docs/backends.md §5)."""
    cores = tensorcores_per_chip(profile)
    if cores > 1:
        chips = profile.chips_per_node or profile.gpu_count
        return (f"TPU: --tensor-parallel-size counts TensorCores: each chip has {cores} and vLLM TPU addresses each "
                f"TensorCore as one device ({profile.gpu_count} devices on a {chips}-chip node; Kubernetes requests "
                f"google.com/tpu: {chips}); {TPU_PIN_NOTE}")
    return (f"TPU: --tensor-parallel-size counts chips (one TensorCore each, one device to vLLM TPU); "
            f"{TPU_PIN_NOTE}")


#: GKE's node label value per TPU generation (GKE "About TPUs in GKE": cloud.google.com/gke-tpu-accelerator).
GKE_TPU_ACCELERATOR = {"tpu7x": "tpu7x", "v6e": "tpu-v6e-slice"}
#: Single-host slice topology per chip count for 2D TPUs (v6e: 1x1, 2x2, 2x4).
GKE_2D_TOPOLOGY = {1: "1x1", 4: "2x2", 8: "2x4"}


def tpu_placement(profile: HardwareProfile, nodes: int = 1) -> tuple[dict[str, str], int]:
    """(node selector, devices per requested resource unit) of a TPU engine pod on Kubernetes.

    TPU pods select their node pool with ``cloud.google.com/gke-tpu-accelerator`` and
    ``cloud.google.com/gke-tpu-topology`` (a TPU pod without them never schedules) and request
    ``google.com/tpu`` in chips, so the devices vLLM counts are divided by
    :func:`tensorcores_per_chip`. ``nodes``: the slice's hosts."""
    name = f"{profile.display_name} {profile.description}".lower()
    accelerator = next((v for k, v in GKE_TPU_ACCELERATOR.items() if k in name), None)
    chips = profile.chips_per_node or profile.gpu_count
    topology: str | None
    if profile.slice_topology:
        topology = profile.slice_topology.replace("{n}", str(max(1, nodes)))
    else:
        topology = GKE_2D_TOPOLOGY.get(chips)
    selector = {}
    if accelerator:
        selector["cloud.google.com/gke-tpu-accelerator"] = accelerator
    if topology:
        selector["cloud.google.com/gke-tpu-topology"] = topology
    return selector, tensorcores_per_chip(profile)
