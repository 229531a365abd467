"""What every vendor probe receives: the facts source plus the cheap facts gathered first.

The PCI scan, the /dev listing, container evidence and MemTotal are read once by
:func:`vllm_deploy_wizard.detect.detect` and shared, so that the vendor probes (docs/detection.md §3) can pair
"present on the PCI bus" with "device node passed in" without re-reading sysfs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_deploy_wizard.detect.facts import Facts
from vllm_deploy_wizard.detect.pci import PciFunction


@dataclass
class ProbeContext:
    """Shared input of the vendor probes.

    ``pci`` is None when PCI sysfs is missing (WSL); ``by_vendor`` maps a PCI vendor id to its
    accelerator functions; ``dev_nodes`` are absolute /dev paths that exist.
    """

    facts: Facts
    pci: list[PciFunction] | None
    by_vendor: dict[str, list[PciFunction]]
    dev_nodes: list[str] = field(default_factory=list)
    in_container: bool = False
    arch: str | None = None
    wsl: bool = False
    mem_total_bytes: int | None = None

    def has_dev(self, prefix: str) -> bool:
        """True when some /dev entry starts with ``prefix`` (``/dev/nvidia``, ``/dev/davinci``)."""
        return any(path.startswith(prefix) for path in self.dev_nodes)
