"""The selection a plan is made from: ``docs/plan-file.md`` §2 plus product extensions.

Every key but ``model`` is optional; ``None`` means "the reference builder's default" and is resolved
by synthesis (never here), so the same selection file means the same thing for every catalog.

Product extensions (never used by the goldens): ``gpus`` (devices per node, default the profile's
``gpu_count``), ``connector`` (PD KV connector, docs/synthesis.md §4.7), ``router`` (PD router, docs/synthesis.md §4.8).
``frontend`` is in docs/plan-file.md §2 already (docs/synthesis.md §4.2).

Decision: unknown keys are rejected (docs/plan-file.md §2 allows it) — a typo such as ``hardwre`` would
otherwise silently plan the default hardware. Errors name the file and the key and say what is valid.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from vllm_deploy_wizard.common.contract import MAX_NODES
from vllm_deploy_wizard.common.errors import SelectionError

from .record import Before, Field, Record, fast_validate

PoolMode = Literal["tp", "tep", "dep"]


class PdPool(Record):
    """One PD pool (docs/plan-file.md §2 ``pd.<role>``): node count (0 = co-located half node) and mode."""

    model_config = {"extra": "forbid"}
    validate_init = True

    nodes: int | None = Field(default=None, ge=0, le=MAX_NODES)
    mode: PoolMode | None = None
    rank: int | None = None
    """Accepted and ignored: every pool node is in the plan."""


class PdSelection(Record):
    """``pd``: the prefill and decode pools; a role left out uses the legacy layout."""

    model_config = {"extra": "forbid"}
    validate_init = True

    prefill: PdPool | None = None
    decode: PdPool | None = None


class KvInstances(Record):
    """``kv_instances``: Mooncake instance count (``current`` accepted and ignored)."""

    model_config = {"extra": "forbid"}
    validate_init = True

    count: int = Field(ge=1, le=MAX_NODES)
    current: int | None = None


def _count_shorthand(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return {"count": value}
    return value


def _null_to(empty: type) -> Any:
    return Before(lambda value: empty() if value is None else value)


class Selection(Record):
    """A selection to plan (docs/plan-file.md §2). Only ``model`` is required; ``None`` = reference default.

    ``features``: a list of feature keys, ``"default"`` or ``"none"`` (None = ``"default"``).
    ``kv_offload``: a taxonomy ``kv_offload`` key, a kv_store id, or ``"none"``.
    """

    model_config = {"extra": "forbid"}
    validate_init = True

    model: str
    variant: str | None = None
    hardware: str | None = None
    strategy: str | None = None
    nodes: int | None = Field(default=None, ge=1, le=MAX_NODES)
    features: list[str] | Literal["default", "none"] | None = None
    feature_modes: Annotated[dict[str, str], _null_to(dict)] = Field(default_factory=dict)
    advanced_args: Annotated[list[str], _null_to(list)] = Field(default_factory=list)
    kv_offload: str | None = None
    kv_instances: Annotated[KvInstances | None, Before(_count_shorthand)] = None
    pd: PdSelection | None = None
    task: str | None = None
    install_mode: Literal["pip", "docker"] | None = None
    frontend: str | None = None
    # product extensions
    gpus: int | None = Field(default=None, ge=1, le=1024)
    """Devices per node; None = the hardware profile's ``gpu_count``."""
    devices: list[int] | None = None
    """Device indexes of this node to run on, as ``vllm-wizard detect`` lists them (``plan --devices
    0,2``); the serve processes are pinned to them and ``gpus`` defaults to their count
    (docs/fit.md §10). None = the first ``gpus`` devices, unpinned."""
    connector: str | None = None
    """PD KV connector id (seed ``pd_cluster.connectors``); None = the connector marked default."""
    router: str | None = None
    """PD router: ``vllm`` (default), ``smg`` or ``dynamo`` (docs/synthesis.md §4.8)."""
    companion_args: dict[str, str | int | float] = Field(default_factory=dict)
    """Values for the companions' own arguments (docs/catalog.md §6): ``l1_size_gb`` and
    ``max_cpu_workers`` (the LMCache server), ``router_host`` and ``router_port`` (fill
    ``$ROUTER_HOST`` / ``$ROUTER_PORT``), ``prometheus_port`` (every vllm-router). Unknown keys are an
    error naming the valid ones."""
    allow_unverified: bool = False
    """Lift the gates that close a choice only for lack of a recorded verified run (an IAXL-style
    opt-in KV option the recipe has not verified, K3; a restricted profile the recipe does not list,
    H1). The plan marks each lifted gate under ``unverified`` (docs/catalog.md §4). Hard
    incompatibilities (brand, device kind, strategy shape) are never lifted."""


def _field_names() -> list[str]:
    return list(Selection.model_fields)


def selection_from_data(data: Any, source: str = "selection", flags: dict[str, str] | None = None) -> Selection:
    """Validate a mapping as a :class:`Selection`; errors name ``source`` and each bad key.

    ``flags`` maps a top-level key (``pd``, ``nodes``, ``kv_instances``, …) to the command-line flag
    it came from; an error in such a key names the flag (``--pd-prefill: mode 'x' …``) instead of
    the field path. Raises :class:`SelectionError` listing every problem (unknown keys with the
    valid ones; the allowed values or range for a bad value).
    """
    if not isinstance(data, dict):
        raise SelectionError(f"{source}: expected a mapping with at least `model`, got {type(data).__name__}")
    fast = fast_validate(Selection, data)
    if fast is not None:
        return fast
    from pydantic import ValidationError

    try:
        return Selection.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = [str(p) for p in err["loc"]]
            key = ".".join(loc)
            flag = _flag_for(loc, flags or {})
            if err["type"] == "extra_forbidden":
                lines.append(f"{source}: unknown key `{key}` (valid keys: {', '.join(_field_names())})")
            elif err["type"] == "missing":
                lines.append(f"{source}: `{key}` is required")
            elif flag:
                what = f"{loc[-1]} " if len(loc) > 1 and not flag.endswith(loc[-1].replace("_", "-")) else ""
                lines.append(f"{flag}: {what}{err.get('input')!r} is not valid: {err['msg']}")
            else:
                lines.append(f"{source}: `{key}`: {err['msg']} (got {err.get('input')!r})")
        raise SelectionError("\n".join(lines)) from None


def _flag_for(loc: list[str], flags: dict[str, str]) -> str | None:
    """The flag that set the value at ``loc``: ``pd.prefill.*`` → ``flags['pd.prefill']``, else the
    flag of the top-level key."""
    for depth in range(len(loc), 0, -1):
        flag = flags.get(".".join(loc[:depth]))
        if flag:
            return flag
    return None


def load_selection(path: Path | str) -> Selection:
    """Read a selection file (YAML or JSON; JSON is valid YAML) and validate it.

    Raises :class:`SelectionError` naming the file (and line for syntax errors; byte and offset for
    a file that is not UTF-8 text).
    """
    import yaml

    from vllm_deploy_wizard.common import yamlio

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SelectionError(f"{path}: cannot read selection file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        from vllm_deploy_wizard.common.errors import not_utf8

        raise SelectionError(not_utf8(path, exc, "a selection file: YAML or JSON (docs/plan-file.md §2)")) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yamlio.load(text)
    except json.JSONDecodeError as exc:
        raise SelectionError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except yaml.YAMLError as exc:
        raise SelectionError(yamlio.error_message(path, exc)) from None
    return selection_from_data(data, str(path))
