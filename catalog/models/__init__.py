"""Typed models of the vLLM recipes catalog: taxonomy, strategies, kv_store and model recipes.

Schemas follow ``docs/synthesis.md`` §1 (snapshot) and §4/§5 (seed extensions).

Decisions:

* Every model allows unknown keys (``extra="allow"``) so a newer recipes checkout still loads;
  reporting unknown keys as warnings is the job of ``catalog check`` (:mod:`..diagnostics`), not of the model.
* ``null`` is "absent" (§0): :class:`CatalogModel` drops ``None`` values before validation so the
  field default applies. The one place where a key's presence and order matter, ``model.install``,
  is kept as a plain ``dict`` (§2.10: ``install.<mode> is False`` hides a mode; key order picks
  the default tab).
* YAML dates become ``YYYY-MM-DD`` strings; env values are stringified the way JavaScript's
  ``String()`` does (``PYTHONHASHSEED: 0`` → ``"0"``, ``true`` → ``"true"``), because every consumer
  exports them into a shell or a process environment (§0).
* JSON configs that are *data* (Mooncake ``config``/``template``) stay typed (docs/plan-file.md §3.1).

Modules of this package (every public name is importable from the package itself):

* :mod:`.base` — :class:`CatalogModel`, :func:`js_string` and the field types ``EnvValue``, ``Env``,
  ``Args``, ``DateStr``;
* :mod:`.taxonomy` — :class:`Taxonomy`, :class:`HardwareProfile`, :class:`KvOffloadOption` and the rest
  of the taxonomy (§1.2);
* :mod:`.strategy` — :class:`Strategy`, its PD connectors and the SMG / Dynamo routers (§1.3);
* :mod:`.kv_store` — :class:`KvStore` (Mooncake, §1.4);
* :mod:`.recipe` — :class:`Recipe`, :class:`Variant`, :class:`Feature` and the rest of a model recipe (§1.1).
"""

from __future__ import annotations

from .base import Args, CatalogModel, DateStr, Env, EnvValue, js_string
from .kv_store import CommandBlock, KvStore, KvStorePd, KvStorePdRole, KvStoreRouter, KvStoreVllm, VllmConfigTemplate
from .recipe import (
    ArgsOverride,
    Dependency,
    Feature,
    FeatureMode,
    HwOverride,
    Meta,
    ModelSpec,
    Omni,
    OmniTask,
    PdRoleOverride,
    Recipe,
    StrategyOverride,
    Variant,
)
from .strategy import (
    Connector,
    ConnectorDocker,
    ConnectorRole,
    DynamoInfra,
    DynamoRole,
    DynamoRouter,
    HardwareMatch,
    PdRoleStrategy,
    RouterPolicy,
    SmgRouter,
    Strategy,
)
from .taxonomy import (
    Companion,
    Frontend,
    HardwareProfile,
    InstallStep,
    KvOffloadGroup,
    KvOffloadOption,
    KvOffloadOverride,
    KvOffloadPd,
    Task,
    Taxonomy,
)

__all__ = [
    "js_string", "EnvValue", "Env", "Args", "DateStr", "CatalogModel", "HardwareProfile", "Task",
    "KvOffloadGroup", "Companion", "InstallStep", "KvOffloadOverride", "KvOffloadPd", "KvOffloadOption",
    "Frontend", "Taxonomy", "HardwareMatch", "PdRoleStrategy", "RouterPolicy", "ConnectorRole",
    "ConnectorDocker", "Connector", "SmgRouter", "DynamoInfra", "DynamoRole", "DynamoRouter", "Strategy",
    "KvStoreRouter", "KvStoreVllm", "KvStorePdRole", "KvStorePd", "CommandBlock", "VllmConfigTemplate",
    "KvStore", "Meta", "ModelSpec", "HwOverride", "Variant", "ArgsOverride", "FeatureMode", "Feature",
    "PdRoleOverride", "StrategyOverride", "Dependency", "OmniTask", "Omni", "Recipe",
]
