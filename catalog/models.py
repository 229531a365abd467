"""Typed models of the vLLM recipes catalog: taxonomy, strategies, kv_store and model recipes.

Schemas follow ``docs/synthesis.md`` §1 (snapshot) and §4/§5 (seed extensions).

Decisions:

* Every model allows unknown keys (``extra="allow"``) so a newer recipes checkout still loads;
  reporting unknown keys as warnings is the job of ``catalog check`` (:mod:`.diagnostics`), not of the model.
* ``null`` is "absent" (§0): :class:`CatalogModel` drops ``None`` values before validation so the
  field default applies. The one place where a key's presence and order matter, ``model.install``,
  is kept as a plain ``dict`` (§2.10: ``install.<mode> is False`` hides a mode; key order picks
  the default tab).
* YAML dates become ``YYYY-MM-DD`` strings; env values are stringified the way JavaScript's
  ``String()`` does (``PYTHONHASHSEED: 0`` → ``"0"``, ``true`` → ``"true"``), because every consumer
  exports them into a shell or a process environment (§0).
* JSON configs that are *data* (Mooncake ``config``/``template``) stay typed (docs/plan-file.md §3.1).
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator


def js_string(value: Any) -> str:
    """Stringify a scalar as JavaScript's ``String()`` would (``0`` → ``"0"``, ``True`` → ``"true"``).

    Used for env values (docs/synthesis.md §0: ``PYTHONHASHSEED: 0`` is an int in YAML but a string when exported).
    Floats that are whole numbers print without ``.0``; dicts/lists become compact JSON.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _date_string(value: Any) -> Any:
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.strftime("%Y-%m-%d")
    return value


def _string_list(value: Any) -> Any:
    """Tokens of an args list; YAML may type a bare ``8`` as int — keep it a string."""
    if isinstance(value, list):
        return [v if isinstance(v, str) else js_string(v) for v in value]
    return value


#: An env value: any YAML scalar, stored as its JavaScript string form (docs/synthesis.md §0).
EnvValue = Annotated[str, BeforeValidator(js_string)]
#: An environment mapping, insertion order preserved (it fixes docker ``-e`` order, §2.7).
Env = dict[str, EnvValue]
#: A list of command-line tokens (strings).
Args = Annotated[list[str], BeforeValidator(_string_list)]
#: A ``YYYY-MM-DD`` date (YAML dates normalised, §0).
DateStr = Annotated[str, BeforeValidator(_date_string)]


class CatalogModel(BaseModel):
    """Base of every catalog model: unknown keys allowed, ``null`` treated as absent (docs/synthesis.md §0)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict) and None in data.values():
            return {k: v for k, v in data.items() if v is not None}
        return data


# ---------------------------------------------------------------------------------------------
# taxonomy (§1.2, docs/synthesis.md §4.1-4.3)


class HardwareProfile(CatalogModel):
    """One ``taxonomy.hardware_profiles`` entry: a node type of the recipes taxonomy (§1.2)."""

    brand: str = ""
    """Vendor: NVIDIA, AMD, Google, Intel, Huawei (seed: Zhenwu)."""
    generation: Union[str, list[str]] = ""
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


# ---------------------------------------------------------------------------------------------
# strategies (§1.3, docs/synthesis.md §4.4-4.8)


class HardwareMatch(CatalogModel):
    """Declared strategy constraints (not enforced by the snapshot, §3.2)."""

    min_gpus: int | None = None
    max_gpus: int | None = None
    multi_node: bool | None = None
    architecture: str | None = None


class PdRoleStrategy(CatalogModel):
    """``strategy.prefill`` / ``strategy.decode`` of ``pd_cluster`` (§1.3)."""

    vllm_args: Args = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    parallelism: str | None = None
    tp: int | None = None
    parallel_flag: str | None = None


class RouterPolicy(CatalogModel):
    """``strategy.router`` (pd_cluster) — router policy."""

    policy: str | None = None


class ConnectorRole(CatalogModel):
    """Seed: one role of a PD connector: ``--kv-transfer-config`` JSON and role env (§4.7)."""

    config: dict[str, Any] = Field(default_factory=dict)
    env: Env = Field(default_factory=dict)


class ConnectorDocker(CatalogModel):
    """Seed: docker flags a connector needs on role containers (§4.7)."""

    host_network: bool = False
    flags: Args = Field(default_factory=list)


class Connector(CatalogModel):
    """Seed: a PD KV connector (``pd_cluster.connectors.<id>``: nixl, mooncake, moriio, §4.7)."""

    display_name: str = ""
    description: str = ""
    docs: str | None = None
    default: bool = False
    brands: list[str] | None = None
    routers: list[str] | None = None
    prefill: ConnectorRole = Field(default_factory=ConnectorRole)
    decode: ConnectorRole = Field(default_factory=ConnectorRole)
    router: dict[str, Any] = Field(default_factory=dict)
    install: list[InstallStep] = Field(default_factory=list)
    docker: ConnectorDocker | None = None


class SmgRouter(CatalogModel):
    """Seed: the SMG PD router (``pd_cluster.smg``, §4.8)."""

    display_name: str = "SMG"
    description: str = ""
    version: str = ""
    install: str | None = None
    docker_image: str | None = None
    policy: str = "round_robin"
    grpc: dict[str, Any] | None = None


class DynamoInfra(CatalogModel):
    """Seed: Dynamo's etcd control plane (started first, §4.8)."""

    label: str = ""
    description: str = ""
    command: str = ""


class DynamoRole(CatalogModel):
    """Seed: per-role worker args for Dynamo."""

    vllm_args: Args = Field(default_factory=list)


class DynamoRouter(CatalogModel):
    """Seed: the NVIDIA Dynamo PD router (``pd_cluster.dynamo``, §4.8)."""

    display_name: str = "Dynamo"
    description: str = ""
    brands: list[str] | None = None
    version: str = ""
    install: list[InstallStep] = Field(default_factory=list)
    launcher: str = "python3 -m dynamo.vllm"
    remove_args: list[str] = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    prefill: DynamoRole = Field(default_factory=DynamoRole)
    decode: DynamoRole = Field(default_factory=DynamoRole)
    infra: DynamoInfra | None = None
    frontend: dict[str, Any] = Field(default_factory=dict)


class Strategy(CatalogModel):
    """A serving strategy (a checkout's ``strategies/<name>.yaml`` or an entry of the bundled
    ``strategies.json``, §1.3)."""

    name: str
    deploy_type: str
    """single_node | multi_node | pd_cluster (kv_store entries are :class:`KvStore`)."""
    display_name: str = ""
    short_label: str | None = None
    orientation: str | None = None
    description: str = ""
    hardware_match: HardwareMatch | None = None
    vllm_args: Args = Field(default_factory=list)
    parallel_flag: str | None = None
    parallelism: str | None = None
    env: Env = Field(default_factory=dict)
    prefill: PdRoleStrategy | None = None
    decode: PdRoleStrategy | None = None
    router: RouterPolicy | None = None
    companion: Companion | None = None
    """Seed: e.g. the vLLM Router after single-node DEP (§4.5)."""
    remove_args: list[str] = Field(default_factory=list)
    """Seed: flags stripped from the final list whatever added them (§4.6)."""
    kv_offload: bool | None = None
    """Seed: ``False`` = no KV option composes (§4.6)."""
    connectors: dict[str, Connector] = Field(default_factory=dict)
    smg: SmgRouter | None = None
    dynamo: DynamoRouter | None = None

    def role(self, role: str) -> PdRoleStrategy:
        """The ``prefill``/``decode`` block, empty when absent."""
        block = getattr(self, role, None) if role in ("prefill", "decode") else None
        return block if isinstance(block, PdRoleStrategy) else PdRoleStrategy()


# ---------------------------------------------------------------------------------------------
# kv_store (Mooncake, §1.4)


class KvStoreRouter(CatalogModel):
    """kv_store ``router``: the cache-aware vllm-router in front of ≥ 2 instances (§2.9)."""

    policy: str = "cache_aware"
    install: str | None = None
    port: int | None = None


class KvStoreVllm(CatalogModel):
    """kv_store ``vllm``: args/env added to every instance, brand-keyed install, HTTP port (§1.4)."""

    vllm_args: Args = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    install: dict[str, str] = Field(default_factory=dict)
    """Brand-keyed (``nvidia``/``amd``) install snippet."""
    port: int = 8000


class KvStorePdRole(CatalogModel):
    """kv_store ``pd.<role>``: args replacing the role's ``--kv-transfer-config`` (MultiConnector)."""

    args: Args = Field(default_factory=list)


class KvStorePd(CatalogModel):
    """kv_store ``pd``: how Mooncake composes with a PD cluster (§2.9)."""

    prefill: KvStorePdRole = Field(default_factory=KvStorePdRole)
    decode: KvStorePdRole = Field(default_factory=KvStorePdRole)


class CommandBlock(CatalogModel):
    """A process given as shell text (``mooncake_master``, ``mooncake_store_config`` + its ``config``)."""

    command: str = ""
    description: str = ""
    note: str | None = None
    config: dict[str, Any] | None = None


class VllmConfigTemplate(CatalogModel):
    """``mooncake_vllm_config``: the JSON every instance reads from ``$MOONCAKE_CONFIG_PATH``."""

    mode: str | None = None
    note: str | None = None
    template: dict[str, Any] = Field(default_factory=dict)


class KvStore(CatalogModel):
    """A Mooncake KV-store deployment (``kv_store/*.yaml``, deploy_type ``kv_store_lb``, §1.4)."""

    name: str
    deploy_type: str = "kv_store_lb"
    display_name: str = ""
    label: str = ""
    order: int = 0
    description: str = ""
    router: KvStoreRouter = Field(default_factory=KvStoreRouter)
    vllm: KvStoreVllm = Field(default_factory=KvStoreVllm)
    pd: KvStorePd | None = None
    mooncake_master: CommandBlock | None = None
    mooncake_store_config: CommandBlock | None = None
    mooncake_vllm_config: VllmConfigTemplate | None = None
    min_vllm_version: str | None = None
    default_instances: int | None = None


# ---------------------------------------------------------------------------------------------
# recipes (§1.1)


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
    parameter_count: Union[str, int, float, None] = None
    active_parameters: Union[str, int, float, None] = None
    context_length: int | None = None
    base_args: Args = Field(default_factory=list)
    base_env: Env = Field(default_factory=dict)
    docker_image: Union[str, dict[str, Any], None] = None
    """String (NVIDIA pin), brand map, CUDA map or brand map of CUDA maps (§2.10)."""
    nightly_required: bool = False
    install: dict[str, Any] | None = None
    """Raw: ``{pip: false|null|{command?, note?}, docker: …}`` — key order and ``False`` matter."""
    supports_dcp: bool = False
    flashinfer_autotune: bool = False


class HwOverride(CatalogModel):
    """A hardware-override block: extra args/env (recipe, variant, strategy-override levels)."""

    extra_args: Args = Field(default_factory=list)
    extra_env: Env = Field(default_factory=dict)
    install_note: str | None = None
    docker_image: Union[str, dict[str, Any], None] = None
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
    tp: Union[int, dict[str, int], None] = None
    supported_hardware: list[str] | None = None
    precision_hardware: dict[str, Any] | None = None
    default_modes: dict[str, str] = Field(default_factory=dict)
    min_vllm_version: str | None = None
    nightly_required: bool = False
    docker_image: Union[str, dict[str, Any], None] = None
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

    nodes: Union[int, dict[str, int], None] = None
    parallelism: str | None = None
    tp: int | None = None
    parallel_flag: str | None = None
    vllm_args: Args = Field(default_factory=list)
    extra_args: Args = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    hardware_overrides: dict[str, HwOverride] = Field(default_factory=dict)


class StrategyOverride(CatalogModel):
    """``strategy_overrides.<strategy_id>`` (§1.1, §2.4, §2.7)."""

    tp: Union[int, dict[str, int], None] = None
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
    brand: Union[str, list[str], None] = None
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

    tasks: Annotated[list[OmniTask], BeforeValidator(_task_objects)] = Field(default_factory=list)
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
    strategy_min_gpus: Union[int, dict[str, Any], None] = None
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
