"""Taxonomy models (docs/synthesis.md §1.2, §4.1–4.3): :class:`Taxonomy` with its hardware profiles,
tasks, KV offload options and groups (with their companions, install steps, overrides and PD roles)
and frontends.
"""

from __future__ import annotations

from typing import Any, Literal

from ..record import Field
from .base import Args, CatalogModel, Env

# ---------------------------------------------------------------------------------------------
# taxonomy (§1.2, docs/synthesis.md §4.1-4.3)


class HardwareProfile(CatalogModel):
    """One ``taxonomy.hardware_profiles`` entry: a node type of the recipes taxonomy (§1.2)."""

    brand: str = ""
    """Vendor: NVIDIA, AMD, Google, Intel, Huawei (seed: Zhenwu)."""
    generation: str | list[str] = ""
    """hopper, blackwell, ada, amd, tpu, cpu, xpu, npu (seed: rubin, ppu); a list uses its first item."""
    display_name: str = ""
    description: str = ""
    gpu_count: int = 1
    """Accelerators per node (NUMA nodes for ``cpu``, chips for TPU)."""
    vram_gb: float | None = None
    """Accelerator memory per NODE in GB (all devices together)."""
    multi_node: bool = False
    """Dead metadata in the snapshot (informational)."""
    scalable: bool = True
    """False = cannot be clustered; VRAM is a hard limit (§3.1 N2)."""
    restricted: bool = False
    """Hidden unless the recipe lists the id in ``meta.hardware`` (§3.1 H1)."""
    compute_arch: str | None = None
    """Seed: sm90, sm100, gfx942, … — used by detection (§4.1)."""
    chips_per_node: int | None = None
    slice_topology: str | None = None
    docker_image: str | None = None
    """Seed: an image that wins over recipe images on this hardware (§4.1 proposal)."""
    install: dict[str, Any] | None = None
    """Seed: ``{pip: false, docker: {note}}`` per hardware (§4.1)."""

    @property
    def gen(self) -> str:
        """The generation key used by lookups (first element when a list, §2)."""
        g = self.generation
        return (g[0] if g else "") if isinstance(g, list) else g

    @property
    def memory_term(self) -> str:
        """What this profile's ``vram_gb`` is, in words for messages: ``RAM`` on a CPU backend
        (``generation: cpu``, where a "device" is a NUMA node and its memory is host RAM), else
        ``VRAM`` (GPUs and the other accelerators' device memory)."""
        return "RAM" if self.gen == "cpu" else "VRAM"

    @property
    def vram_per_device_gb(self) -> float | None:
        """``vram_gb / gpu_count`` (None when the profile gives no VRAM)."""
        if not self.vram_gb or not self.gpu_count:
            return None
        return self.vram_gb / self.gpu_count


class Task(CatalogModel):
    """A taxonomy task (text, multimodal, omni, embedding)."""

    id: str
    display_name: str = ""
    description: str = ""


class KvOffloadGroup(CatalogModel):
    """A pill group of KV offload options (``taxonomy.kv_offload_groups``)."""

    display_name: str = ""
    label: str = ""
    order: int = 0
    sub_row_label: str = ""
    docs_url: str = ""
    tooltip: str = ""
    description: str = ""


class Companion(CatalogModel):
    """A companion process: shell command text plus labels (§2.11; seed strategy companions §4.5)."""

    label: str = ""
    description: str = ""
    command: str = ""
    install: str | None = None
    """Seed: the companion's own install snippet."""
    start: Literal["before", "after"] = "before"
    """Seed: launch before (default) or after ``vllm serve`` (§4.5)."""


class InstallStep(CatalogModel):
    """An install snippet with a note (seed IAXL ``hardware_overrides.install``, connector installs)."""

    command: str
    note: str = ""
    optional: bool = False


class KvOffloadOverride(CatalogModel):
    """Seed: ``kv_offload.<k>.hardware_overrides.<gen|brand>`` (§4.3)."""

    description: str | None = None
    docs_url: str | None = None
    install: list[InstallStep] = Field(default_factory=list)
    env: Env = Field(default_factory=dict)


class KvOffloadPd(CatalogModel):
    """Seed: ``kv_offload.<k>.pd`` — the PD roles the option applies to (§4.3)."""

    roles: list[str] = Field(default_factory=list)


class KvOffloadOption(CatalogModel):
    """A composing KV-offload option (``taxonomy.kv_offload.<key>``, §1.2, §2.9, docs/synthesis.md §4.3)."""

    display_name: str = ""
    label: str | None = None
    order: int = 0
    description: str = ""
    args: Args = Field(default_factory=list)
    group: str | None = None
    strategies: list[str] | None = None
    brands: list[str] | None = None
    requires_opt_in: bool = False
    env: Env = Field(default_factory=dict)
    install: str | None = None
    docs_url: str | None = None
    companion: Companion | None = None
    hardware: dict[str, str] = Field(default_factory=dict)
    """Seed: ``{gen_or_id: unsupported}`` gate."""
    pd: KvOffloadPd | None = None
    """Seed: composes with PD on these roles only."""
    docker: bool | None = None
    """Seed: ``False`` = unavailable in docker mode."""
    setup: str | None = None
    """Seed: bash prelude run before ``vllm serve`` (IAXL)."""
    hardware_overrides: dict[str, KvOffloadOverride] = Field(default_factory=dict)


class Frontend(CatalogModel):
    """Seed: an API-server frontend choice (``taxonomy.frontends.<id>``, §4.2)."""

    label: str = ""
    env: Env = Field(default_factory=dict)


class Taxonomy(CatalogModel):
    """The taxonomy (a checkout's ``taxonomy.yaml`` or the bundled ``taxonomy.json``, §1.2, §5)."""

    hardware_profiles: dict[str, HardwareProfile] = Field(default_factory=dict)
    tasks: list[Task] = Field(default_factory=list)
    strategies: list[str] = Field(default_factory=list)
    """Informational only — never used to validate strategy ids (§5)."""
    kv_offload_groups: dict[str, KvOffloadGroup] = Field(default_factory=dict)
    kv_offload: dict[str, KvOffloadOption] = Field(default_factory=dict)
    frontends: dict[str, Frontend] = Field(default_factory=dict)
    """Seed only; empty for a recipes checkout."""
