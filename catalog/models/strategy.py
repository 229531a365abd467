"""Strategy models (docs/synthesis.md §1.3, §4.4–4.8): :class:`Strategy` with its hardware match, PD
role blocks, PD connectors, and the SMG and Dynamo routers.
"""

from __future__ import annotations

from typing import Any

from ..record import Field
from .base import Args, CatalogModel, Env
from .taxonomy import Companion, InstallStep

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
