"""Model recipe models (docs/synthesis.md §1.1): :class:`Recipe` with its meta, model spec, variants,
hardware / args / strategy / PD-role overrides, features and their modes, dependencies and the omni
tasks (:class:`Omni`).
"""

from __future__ import annotations

from typing import Annotated, Any

from ..record import Before, Field
from .base import Args, CatalogModel, DateStr, Env
from .taxonomy import Companion

# ---------------------------------------------------------------------------------------------
# recipes (§1.1)

#: Values of ``model.architecture`` (docs/synthesis.md §1.1); the builder only tests for ``moe``.
ARCHITECTURES = ("dense", "moe")
#: Values of a ``meta.hardware`` status (§1.1): ``verified`` shows the badge (B1), ``unsupported`` gates the
#: hardware (H2), ``supported`` — and any other value — behaves like absent (§3.2).
HARDWARE_STATUSES = ("verified", "unsupported", "supported")


class Meta(CatalogModel):
    """``meta`` of a recipe (display + hardware status)."""

    title: str = ""
    slug: str = ""
    provider: str = ""
    description: str = ""
    date_added: DateStr | None = None
    date_updated: DateStr | None = None
    difficulty: str | None = None
    tasks: list[str] = Field(default_factory=list)
    performance_headline: str | None = None
    related_recipes: list[str] = Field(default_factory=list)
    default_hardware: str | None = None
    hardware: dict[str, str] = Field(default_factory=dict)
    """``{hw_id: verified | unsupported | supported}``; unknown ids tolerated."""
    platforms: list[Any] | None = None


class ModelSpec(CatalogModel):
    """``model`` of a recipe: checkpoint and base flags."""

    model_id: str = ""
    min_vllm_version: str | None = None
    architecture: str | None = None
    parameter_count: str | int | float | None = None
    active_parameters: str | int | float | None = None
    context_length: int | None = None
    base_args: Args = Field(default_factory=list)
    base_env: Env = Field(default_factory=dict)
    docker_image: str | dict[str, Any] | None = None
    """String (NVIDIA pin), brand map, CUDA map or brand map of CUDA maps (§2.10)."""
    nightly_required: bool = False
    install: dict[str, Any] | None = None
    """Raw: ``{pip: false|null|{command?, note?}, docker: …}`` — key order and ``False`` matter."""
    docker_source: dict[str, Any] | None = None
    """``{mount_path: DIR}``: a source checkout the docker form mounts read-only and puts on
    ``PYTHONPATH`` (MiniMax-H3's vLLM-Omni main); the builder does not read it, the plan's
    correction does (``catalog/corrections.py``, docs/synthesis.md §7.3)."""
    supports_dcp: bool = False
    flashinfer_autotune: bool = False


class HwOverride(CatalogModel):
    """A hardware-override block: extra args/env (recipe, variant, strategy-override levels)."""

    extra_args: Args = Field(default_factory=list)
    extra_env: Env = Field(default_factory=dict)
    install_note: str | None = None
    docker_image: str | dict[str, Any] | None = None
    """Only read for a variant's exact-id override (§2.10)."""


class Variant(CatalogModel):
    """``variants.<key>``: a checkpoint/precision choice of a recipe (§1.1)."""

    precision: str = ""
    vram_minimum_gb: float | None = None
    description: str = ""
    model_id: str | None = None
    label: str | None = None
    extra_args: Args = Field(default_factory=list)
    extra_env: Env = Field(default_factory=dict)
    tp: int | dict[str, int] | None = None
    supported_hardware: list[str] | None = None
    precision_hardware: dict[str, Any] | None = None
    default_modes: dict[str, str] = Field(default_factory=dict)
    min_vllm_version: str | None = None
    nightly_required: bool = False
    docker_image: str | dict[str, Any] | None = None
    hardware_overrides: dict[str, HwOverride] = Field(default_factory=dict)

    @property
    def pill_label(self) -> str:
        """Pill text: ``label`` or the precision upper-cased."""
        return self.label or self.precision.upper()


class ArgsOverride(CatalogModel):
    """``{args: [...]}`` — feature / mode hardware override (args replace)."""

    args: Args = Field(default_factory=list)


class FeatureMode(CatalogModel):
    """``features.<key>.modes.<m>`` (§1.1, §2.8)."""

    label: str = ""
    description: str = ""
    args: Args = Field(default_factory=list)
    variants: list[str] | None = None
    hardware: dict[str, str] = Field(default_factory=dict)
    hardware_overrides: dict[str, ArgsOverride] = Field(default_factory=dict)


class Feature(CatalogModel):
    """``features.<key>``: flags a person can toggle (§1.1, §2.8)."""

    description: str = ""
    label: str | None = None
    args: Args = Field(default_factory=list)
    modes: dict[str, FeatureMode] | None = None
    hardware_overrides: dict[str, ArgsOverride] = Field(default_factory=dict)
    strategies: list[str] | None = None
    companion: Companion | None = None
    default_mode: str | None = None
    hardware: dict[str, str] = Field(default_factory=dict)
    """Feature-level gate — unread by the snapshot (§3.2)."""


class PdRoleOverride(CatalogModel):
    """``strategy_overrides.pd_cluster.<role>`` (§1.1)."""

    nodes: int | dict[str, int] | None = None
    parallelism: str | None = None
    tp: int | None = None
    parallel_flag: str | None = None
    vllm_args: Args = Field(default_factory=list)
    extra_args: Args = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    hardware_overrides: dict[str, HwOverride] = Field(default_factory=dict)


class StrategyOverride(CatalogModel):
    """``strategy_overrides.<strategy_id>`` (§1.1, §2.4, §2.7)."""

    tp: int | dict[str, int] | None = None
    extra_args: Args = Field(default_factory=list)
    vllm_args: Args = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    extra_env: Env = Field(default_factory=dict)
    hardware_overrides: dict[str, HwOverride] = Field(default_factory=dict)
    prefill: PdRoleOverride | None = None
    decode: PdRoleOverride | None = None
    router: dict[str, Any] | None = None
    pool_modes: list[str] | None = None

    def role(self, role: str) -> PdRoleOverride:
        """The ``prefill``/``decode`` override, empty when absent."""
        block = getattr(self, role, None) if role in ("prefill", "decode") else None
        return block if isinstance(block, PdRoleOverride) else PdRoleOverride()


class Dependency(CatalogModel):
    """``dependencies[]``: an extra install step (§2.10)."""

    command: str
    note: str | None = None
    optional: bool = False
    brand: str | list[str] | None = None
    install_modes: list[str] | None = None


class OmniTask(CatalogModel):
    """An ``omni.tasks`` entry given as an object (bare ids are normalised to ``{id}``, §2.12)."""

    id: str
    key: str | None = None
    label: str | None = None
    endpoint: str | None = None
    model_id: str | None = None
    vram_minimum_gb: float | None = None
    description: str | None = None
    axes: dict[str, str] | None = None
    extra_args: Args = Field(default_factory=list)
    curl: str | None = None
    hardware_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @property
    def selector(self) -> str:
        """The selection key: ``key`` else ``id``."""
        return self.key or self.id


def _task_objects(value: Any) -> Any:
    if isinstance(value, list):
        return [{"id": t} if isinstance(t, str) else t for t in value]
    return value


class Omni(CatalogModel):
    """``omni``: vllm-omni serving config of a diffusion/audio recipe (§1.1, §2.12)."""

    tasks: Annotated[list[OmniTask], Before(_task_objects)] = Field(default_factory=list)
    port: int | None = None
    serve_binary: str | None = None
    task_label: str | None = None
    task_hint: str | None = None
    variant_label: str | None = None
    variant_hint: str | None = None
    task_axes: list[dict[str, Any]] = Field(default_factory=list)


class Recipe(CatalogModel):
    """A model recipe (``models/<org>/<repo>.yaml``, §1.1).

    ``hf_org``/``hf_repo``/``hf_id`` come from the file path, not the file (§0); the loader sets them.
    """

    hf_org: str = ""
    hf_repo: str = ""
    hf_id: str = ""
    meta: Meta = Field(default_factory=Meta)
    model: ModelSpec = Field(default_factory=ModelSpec)
    variants: dict[str, Variant]
    compatible_strategies: list[str] = Field(default_factory=list)
    features: dict[str, Feature] = Field(default_factory=dict)
    opt_in_features: list[str] = Field(default_factory=list)
    hardware_opt_in_features: dict[str, list[str]] = Field(default_factory=dict)
    hardware_overrides: dict[str, HwOverride] = Field(default_factory=dict)
    strategy_overrides: dict[str, StrategyOverride] = Field(default_factory=dict)
    strategy_hardware: dict[str, dict[str, str]] = Field(default_factory=dict)
    strategy_min_gpus: int | dict[str, Any] | None = None
    default_strategy: str | None = None
    kv_offload_support: dict[str, str] = Field(default_factory=dict)
    kv_cache_strategy_hardware: dict[str, dict[str, str]] = Field(default_factory=dict)
    dependencies: list[Dependency] = Field(default_factory=list)
    omni: Omni | None = None
    hardware_notes: dict[str, Any] = Field(default_factory=dict)
    advanced_options: list[dict[str, Any]] = Field(default_factory=list)
    guide: str = ""
    custom_source: str | None = None
    """Custom models only (:mod:`vllm_deploy_wizard.catalog.custom`): the ``config.json`` the recipe was
    derived from; None for a recipe file. Not a recipes-repo key (no snapshot recipe has it)."""

    @property
    def is_custom(self) -> bool:
        """True for a recipe derived from a ``config.json`` (no recipe file lists its hardware)."""
        return self.custom_source is not None

    def served_model_id(self, variant: Variant) -> str:
        """The checkpoint ``vllm serve`` names for ``variant``: its ``model_id``, else ``model.model_id``;
        ``""`` when neither is set (the reference builder would render ``vllm serve unknown``, §2)."""
        return variant.model_id or self.model.model_id

    @property
    def is_omni(self) -> bool:
        """True when ``meta.tasks`` contains ``omni`` (§2.12)."""
        return "omni" in self.meta.tasks

    def variant(self, key: str | None) -> Variant:
        """The variant ``key``; an unknown key falls back to ``default`` (§2 fallbacks)."""
        v = self.variants.get(key or "default")
        if v is None:
            v = self.variants.get("default") or next(iter(self.variants.values()))
        return v
