"""KV-store deployment models (Mooncake, docs/synthesis.md §1.4): :class:`KvStore` with its router,
vLLM and PD blocks, command blocks and the vLLM config template.
"""

from __future__ import annotations

from typing import Any

from ..record import Field
from .base import Args, CatalogModel, Env

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
