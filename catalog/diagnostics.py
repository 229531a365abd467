"""Catalog diagnostics for the person fixing the file: ``file:line: message``, all at once.

``check_catalog(path) -> Report`` reads a recipes checkout (or the bundled data folder) file by
file, and reports

* **errors** (the file can't be used, or ``plan`` can't use what it describes): YAML/JSON syntax
  (line from the parser's mark), schema violations from the pydantic models (line of the offending
  key, found by walking the ``yaml.compose`` node tree along the error's ``loc``), a recipe without
  ``variants.default``, a taxonomy without hardware profiles (e.g. a misspelled
  ``hardware_profiles:`` key), a checkout without strategies, a non-positive number where only a
  positive one makes sense (GPU counts, VRAM, TP, GPU floors, context length) and a recipe none of
  whose strategies loads;
* **warnings** (a newer recipes checkout may legitimately have them — docs/synthesis.md §5: unknown ids are
  ignored, not rejected): keys the models don't know, ids that name no strategy / hardware profile /
  KV option / feature / variant of the catalog — each with "did you mean …" (difflib) when a
  close id exists; an unknown precision (the known ones listed); a model file outside
  ``models/<org>/`` (the loader ignores it); two recipe ids that differ only in case (lookups are
  case-insensitive, so one of them can't be selected).

Decisions:

* Validation is delegated to the pydantic models of :mod:`vllm_deploy_wizard.catalog.models`; this module
  only turns their errors into text, branching on the pydantic error ``type`` (missing, wrong type,
  literal) for a message that says what would be valid.
* Line numbers are computed only for files that have a problem (``yaml.compose`` is slower than the
  libyaml load), so checking the whole snapshot stays cheap.
* Messages are sorted by file then line so the output reads top-down per file.
* Keys the seed strategies carry for documentation only (``pd_cluster.smg.docs``,
  ``pd_cluster.dynamo.docs`` — docs/synthesis.md §4.7–4.8) are not declared by the models (nothing
  reads them); :data:`EXTRA_KNOWN_KEYS` lists them so they don't warn.
* When a catalog-wide id set is empty because its source is broken (no hardware profiles, no
  strategy loads), the per-recipe "unknown hardware/strategy id" warnings are skipped: the one error
  says what is wrong, instead of hundreds of consequential warnings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from vllm_deploy_wizard.common import suggest, yamlio

from .models import DynamoRouter, KvStore, Recipe, SmgRouter, Strategy, Taxonomy
from .models.recipe import ARCHITECTURES, HARDWARE_STATUSES
from .record import Record, type_hints

#: Keys some models don't declare but catalogs legitimately carry (model class → extra key names).
#: The seed's PD routers have a ``docs`` link (docs/synthesis.md §4.7–4.8).
EXTRA_KNOWN_KEYS: dict[type[Record], frozenset[str]] = {
    SmgRouter: frozenset({"docs"}),
    DynamoRouter: frozenset({"docs"}),
}


def known_precisions() -> tuple[str, ...]:
    """Precisions a variant may name: those with a bytes-per-parameter figure in
    :data:`vllm_deploy_wizard.catalog.custom.BYTES_PER_PARAM`, plus the snapshot's mixed ``int2/4/8``."""
    from .custom import BYTES_PER_PARAM

    return (*BYTES_PER_PARAM, "int2/4/8")


@dataclass
class Report:
    """Result of :func:`check_catalog`: ``errors`` and ``warnings`` as ``"file:line: message"``."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files: int = 0
    """How many files were read."""

    @property
    def ok(self) -> bool:
        """True when there are no errors (warnings don't fail a check)."""
        return not self.errors


# --------------------------------------------------------------------------------------------
# text helpers


def node_line(root: yaml.Node | None, loc: Iterable[Any], *, key: bool = False) -> int | None:
    """1-based line of the node at ``loc`` (pydantic ``loc``: mapping keys and list indexes).

    Walks as deep as the path exists; a missing leaf (e.g. a required key) resolves to its parent
    mapping's line. ``key=True`` returns the line of the last mapping *key* rather than its value.
    """
    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    line = (k if key else v).start_mark.line + 1
                    node = v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def compose(text: str) -> yaml.Node | None:
    """The node tree of ``text`` (None when empty or not parseable)."""
    try:
        return yamlio.compose(text)
    except yaml.YAMLError:
        return None


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validation_messages(path: Path | str, exc: ValidationError, root: yaml.Node | None,
                        prefix: tuple[Any, ...] = ()) -> list[str]:
    """One ``file:line: message`` per offending value, branching on the pydantic error ``type``.

    Errors of one union field (pydantic reports one per member, tagged in ``loc``) are merged into
    "expected X or Y". ``prefix`` is prepended to each ``loc`` (seed JSON maps keyed by id).
    """
    merged: dict[tuple[str, str], list[Any]] = {}
    for err in exc.errors():
        raw = tuple(err["loc"])
        loc = tuple(p for p in raw if not _is_union_tag(p))
        dotted = ".".join(str(p) for p in (*prefix, *loc)) or "top level"
        line = node_line(root, (*prefix, *loc))
        where = f"{path}:{line}" if line else str(path)
        kind = err["type"]
        if kind == "missing":
            msg, expected = f"`{dotted}` is required", None
        elif kind.endswith(("_type", "_parsing")):
            expected = err["msg"].replace("Input should be ", "").split(",")[0]
            msg = None
        elif kind in ("literal_error", "enum"):
            msg, expected = f"`{dotted}`: {err['msg']} (got {_describe(err.get('input'))})", None
        else:
            msg, expected = f"`{dotted}`: {err['msg']}", None
        slot = merged.setdefault((where, dotted), [None, [], err.get("input")])
        if msg and slot[0] is None:
            slot[0] = msg
        if expected and expected not in slot[1]:
            slot[1].append(expected)
    out = []
    for (where, dotted), (msg, expected, value) in merged.items():
        if expected:
            out.append(f"{where}: `{dotted}`: expected {' or '.join(expected)}, got {_describe(value)}")
        elif msg:
            out.append(f"{where}: {msg}")
    return out


def validation_problems(path: Path | str, raw: bytes | str, exc: ValidationError,
                        prefix: tuple[Any, ...] = ()) -> list[str]:
    """``file:line: message`` lines for a ValidationError of the file whose content is ``raw``.

    Convenience for loaders that parsed ``raw`` fast and only need line numbers on failure
    (composes the node tree once, here).
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return validation_messages(path, exc, compose(text), prefix)


def _is_union_tag(part: Any) -> bool:
    """pydantic inserts the union member (``int``, ``dict[str,int]``, ``function-after[...]``) in ``loc``."""
    return isinstance(part, str) and ("[" in part or part in {"str", "int", "float", "bool", "list", "dict"})


def unknown_keys(model: type[Record], data: Any,
                 loc: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str, list[str]]]:
    """Keys of ``data`` that ``model`` does not declare, recursively through nested models.

    Returns ``[(loc_of_key, key, known_keys)]``. Dict-valued fields (``dict[str, Model]``) and lists
    of models are followed; free-form dict fields (``dict[str, Any]``) are not.
    """
    if not isinstance(data, dict):
        return []
    hints = type_hints(model)
    names = {n: n for n in hints}
    extra = EXTRA_KNOWN_KEYS.get(model, frozenset())
    out = []
    for key, value in data.items():
        if key in extra:
            continue
        if key not in names:
            out.append(((*loc, key), str(key), sorted(names)))
            continue
        sub = _submodel(hints[names[key]])
        if sub is None:
            continue
        kind, cls = sub
        if kind == "model":
            out += unknown_keys(cls, value, (*loc, key))
        elif kind == "dict" and isinstance(value, dict):
            for k, v in value.items():
                out += unknown_keys(cls, v, (*loc, key, k))
        elif kind == "list" and isinstance(value, list):
            for i, v in enumerate(value):
                out += unknown_keys(cls, v, (*loc, key, i))
    return out


def _submodel(annotation: Any) -> tuple[str, type[Record]] | None:
    """``("model"|"dict"|"list", Model)`` for annotations that nest a model, else None."""
    import typing

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return "model", annotation
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for a in args:
            hit = _submodel(a)
            if hit is not None and hit[0] == "model":
                return hit
        for a in args:
            hit = _submodel(a)
            if hit is not None:
                return hit
        return None
    if origin is dict and len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], Record):
        return "dict", args[1]
    if origin is list and args and isinstance(args[0], type) and issubclass(args[0], Record):
        return "list", args[0]
    if origin is typing.Annotated and args:
        return _submodel(args[0])
    return None


# --------------------------------------------------------------------------------------------
# per-file checks


@dataclass
class _File:
    path: Path
    text: str
    data: Any
    root: yaml.Node | None = None
    _composed: bool = False

    def nodes(self) -> yaml.Node | None:
        if not self._composed:
            self.root = compose(self.text)  # JSON is YAML, so seed files get lines too
            self._composed = True
        return self.root

    def line(self, loc: Iterable[Any], key: bool = True) -> str:
        ln = node_line(self.nodes(), loc, key=key)
        return f"{self.path}:{ln}" if ln else str(self.path)


def _read(path: Path, report: Report) -> _File | None:
    report.files += 1
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        report.errors.append(f"{path}: cannot read ({exc})")
        return None
    try:
        data = json.loads(text) if path.suffix == ".json" else yamlio.load(text)
    except json.JSONDecodeError as exc:
        report.errors.append(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}")
        return None
    except yaml.YAMLError as exc:
        report.errors.append(yamlio.error_message(path, exc))
        return None
    if not isinstance(data, dict):
        report.errors.append(f"{path}:1: expected a mapping at the top level, got {type(data).__name__}")
        return None
    return _File(path, text, data)


def _validate(f: _File, model: type[Record], data: dict, report: Report, prefix: tuple = ()) -> Any:
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        report.errors += validation_messages(f.path, exc, f.nodes(), prefix)
        obj = None
    for loc, key, known in unknown_keys(model, data):
        report.warnings.append(f"{f.line((*prefix, *loc))}: unknown key `{'.'.join(map(str, (*prefix, *loc)))}`"
                               f" (ignored){suggest.did_you_mean(key, known)}")
    return obj


def _positive(f: _File | _Within, loc: tuple[Any, ...], value: Any, report: Report, *, integer: bool = True,
              zero_ok: bool = False) -> None:
    """Error when ``value`` (a count, a size) is a number ≤ 0 (< 0 with ``zero_ok``):
    ``file:line: `a.b` must be …, got …``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value > 0 or (zero_ok and value == 0):
        return
    dotted = ".".join(map(str, loc))
    want = ("0 or more" if zero_ok else "a whole number ≥ 1" if integer else "a number > 0")
    report.errors.append(f"{f.line(loc, key=False)}: `{dotted}` must be {want}, got {_describe(value)}")


def _check_profile_numbers(f: _File, tax: Taxonomy, report: Report) -> None:
    """Hardware profiles: ``gpu_count`` / ``chips_per_node`` ≥ 1, ``vram_gb`` > 0 (§1.2)."""
    for hw_id, prof in tax.hardware_profiles.items():
        _positive(f, ("hardware_profiles", hw_id, "gpu_count"), prof.gpu_count, report)
        _positive(f, ("hardware_profiles", hw_id, "vram_gb"), prof.vram_gb, report, integer=False)
        _positive(f, ("hardware_profiles", hw_id, "chips_per_node"), prof.chips_per_node, report)


def _check_strategy_numbers(f: _File, s: Any, report: Report, prefix: tuple[Any, ...] = ()) -> None:
    """Strategies: ``hardware_match.min_gpus`` / ``max_gpus`` ≥ 1, role ``tp`` ≥ 1 (§1.3, §3.2)."""
    hm = getattr(s, "hardware_match", None)
    if hm is not None:
        _positive(f, (*prefix, "hardware_match", "min_gpus"), hm.min_gpus, report)
        _positive(f, (*prefix, "hardware_match", "max_gpus"), hm.max_gpus, report)
    for role in ("prefill", "decode"):
        block = getattr(s, role, None)
        if block is not None and hasattr(block, "tp"):
            _positive(f, (*prefix, role, "tp"), block.tp, report)


def _check_recipe(f: _File | _Within, recipe: Recipe, ids: dict[str, set[str]], report: Report) -> None:
    """One recipe: ``variants.default``, positive numbers and at least one loadable strategy
    (errors); unknown ids and precisions (warnings)."""
    if "default" not in recipe.variants:
        report.errors.append(f"{f.line(('variants',))}: `variants` must contain `default` "
                             f"(found: {', '.join(recipe.variants) or 'none'})")
    _check_model_id(f, recipe, report)
    _check_values(f, recipe, ids, report)
    strategies, hardware = ids["strategies"], ids["hardware"]
    check_strategy_ids = bool(ids.get("serving"))  # none loaded at all: one error says so, no flood
    # 0 = no text context (the snapshot's TTS / image models), so only negatives are wrong
    _positive(f, ("model", "context_length"), recipe.model.context_length, report, zero_ok=True)
    precisions = known_precisions()
    for key, v in recipe.variants.items():
        _positive(f, ("variants", key, "vram_minimum_gb"), v.vram_minimum_gb, report, integer=False)
        if isinstance(v.tp, dict):
            for hw, n in v.tp.items():
                _positive(f, ("variants", key, "tp", hw), n, report)
        else:
            _positive(f, ("variants", key, "tp"), v.tp, report)
        if v.precision and v.precision.lower() not in precisions:
            report.warnings.append(
                f"{f.line(('variants', key, 'precision'), key=False)}: unknown precision {v.precision!r} in "
                f"`variants.{key}.precision` (no VRAM estimate or hardware rule for it; known: "
                f"{', '.join(precisions)}){suggest.did_you_mean(v.precision.lower(), precisions)}")
    serving = ids.get("serving", set())
    if serving and not recipe.is_omni:
        from .gates import offered_strategies

        offered = offered_strategies(recipe)
        if not any(sid in serving for sid in offered):
            named = ", ".join(offered) or "none"
            report.errors.append(
                f"{f.line(('compatible_strategies',))}: no strategy of this recipe loads (names: {named}) — "
                f"plan can't use it; valid strategy ids: {', '.join(sorted(serving))}")
    for i, sid in enumerate(recipe.compatible_strategies if check_strategy_ids else ()):
        if sid not in strategies:
            report.warnings.append(f"{f.line(('compatible_strategies', i), key=False)}: unknown strategy id "
                                   f"{sid!r} in `compatible_strategies` (ignored)"
                                   f"{suggest.did_you_mean(sid, strategies)}")
    if check_strategy_ids and recipe.default_strategy and recipe.default_strategy not in strategies:
        report.warnings.append(f"{f.line(('default_strategy',))}: unknown strategy id {recipe.default_strategy!r} "
                               f"in `default_strategy`{suggest.did_you_mean(recipe.default_strategy, strategies)}")
    for field_name in ("strategy_overrides", "strategy_hardware"):
        for sid in getattr(recipe, field_name) if check_strategy_ids else ():
            if sid not in strategies:
                report.warnings.append(f"{f.line((field_name, sid))}: unknown strategy id {sid!r} in "
                                       f"`{field_name}` (ignored){suggest.did_you_mean(sid, strategies)}")
    for hw in recipe.meta.hardware if hardware else ():  # no profiles at all: one taxonomy error says so
        if hw not in hardware:
            report.warnings.append(f"{f.line(('meta', 'hardware', hw))}: unknown hardware id {hw!r} in "
                                   f"`meta.hardware` (ignored){suggest.did_you_mean(hw, hardware)}")
    dh = recipe.meta.default_hardware
    if dh and hardware and dh not in hardware:
        report.warnings.append(f"{f.line(('meta', 'default_hardware'))}: unknown hardware id {dh!r} in "
                               f"`meta.default_hardware`{suggest.did_you_mean(dh, hardware)}")
    for key, v in recipe.variants.items():
        for i, hw in enumerate((v.supported_hardware or []) if hardware else []):
            if hw not in hardware:
                report.warnings.append(
                    f"{f.line(('variants', key, 'supported_hardware', i), key=False)}: unknown hardware id "
                    f"{hw!r} in `variants.{key}.supported_hardware` (ignored){suggest.did_you_mean(hw, hardware)}")
    kv = ids["kv_offload"]
    for key in recipe.kv_offload_support if not ids.get("taxonomy_failed") else ():
        if key not in kv:
            report.warnings.append(f"{f.line(('kv_offload_support', key))}: unknown KV offload option {key!r} "
                                   f"in `kv_offload_support` (ignored){suggest.did_you_mean(key, kv)}")
    for i, feat in enumerate(recipe.opt_in_features):
        if feat not in recipe.features:
            report.warnings.append(f"{f.line(('opt_in_features', i), key=False)}: `opt_in_features` names "
                                   f"{feat!r}, which is not a feature of this recipe"
                                   f"{suggest.did_you_mean(feat, recipe.features)}")
    for key, v in recipe.variants.items():
        for feat, mode in v.default_modes.items():
            feature = recipe.features.get(feat)
            modes = (feature.modes or {}) if feature is not None else {}
            if feature is None or mode not in modes:
                hint = (suggest.did_you_mean(mode, modes) if feature is not None
                        else suggest.did_you_mean(feat, recipe.features))
                report.warnings.append(
                    f"{f.line(('variants', key, 'default_modes', feat))}: `variants.{key}.default_modes` "
                    f"names {feat}={mode}, which is not a mode of this recipe{hint}")


def _check_model_id(f: _File | _Within, recipe: Recipe, report: Report) -> None:
    """Error for each variant that serves no checkpoint: no ``model_id`` of its own and no
    ``model.model_id`` (plan refuses it; the reference builder renders ``vllm serve unknown``, §2).
    An omni recipe is fine when every ``omni.tasks`` entry names its own ``model_id``."""
    if recipe.model.model_id:
        return
    tasks = recipe.omni.tasks if recipe.is_omni and recipe.omni is not None else []
    if tasks and all(t.model_id for t in tasks):
        return
    for key, v in recipe.variants.items():
        if not recipe.served_model_id(v):
            report.errors.append(
                f"{f.line(('model', 'model_id'))}: `model.model_id` is missing and `variants.{key}` sets no "
                f"`model_id` — plan can't name the checkpoint to serve (e.g. `model:` misspelled, or its "
                f"`model_id:` line deleted); add `model_id: <org>/<repo>` under `model:`")


def _check_values(f: _File | _Within, recipe: Recipe, ids: dict[str, set[str]], report: Report) -> None:
    """Warnings for values outside their closed sets (docs/synthesis.md §1.1): ``model.architecture``
    (``dense``/``moe``; the builder only tests for ``moe``, so another value plans as dense),
    ``meta.tasks`` (the taxonomy's task ids; an unknown one is ignored) and ``meta.hardware``
    statuses (``verified``/``unsupported``/``supported``; another value behaves like absent)."""
    arch = recipe.model.architecture
    if arch is not None and arch.lower() not in ARCHITECTURES:
        report.warnings.append(
            f"{f.line(('model', 'architecture'), key=False)}: unknown architecture {arch!r} in "
            f"`model.architecture` (plans as dense; valid: {', '.join(ARCHITECTURES)})"
            f"{suggest.did_you_mean(arch.lower(), ARCHITECTURES)}")
    tasks = ids.get("tasks", set())
    for i, task in enumerate(recipe.meta.tasks if tasks else ()):  # no taxonomy tasks: nothing to compare
        if task not in tasks:
            report.warnings.append(
                f"{f.line(('meta', 'tasks', i), key=False)}: unknown task {task!r} in `meta.tasks` (ignored; "
                f"valid: {', '.join(sorted(tasks))}){suggest.did_you_mean(task, tasks)}")
    for hw, status in recipe.meta.hardware.items():
        if status not in HARDWARE_STATUSES:
            report.warnings.append(
                f"{f.line(('meta', 'hardware', hw), key=False)}: unknown status {status!r} for {hw!r} in "
                f"`meta.hardware` (behaves like absent; valid: {', '.join(HARDWARE_STATUSES)})"
                f"{suggest.did_you_mean(status, HARDWARE_STATUSES)}")


def _yaml_files(folder: Path, pattern: str) -> list[Path]:
    return sorted(folder.glob(pattern)) if folder.is_dir() else []


def check_catalog(path: Path | str | None = None) -> Report:
    """Check a recipes checkout (``taxonomy.yaml``, ``strategies/``, ``kv_store/``, ``models/``) or,
    with ``path=None``, the bundled data folder (seed JSON + ``recipes.json`` + kv_store).

    Returns a :class:`Report`; never raises for bad content (a missing folder is an error entry).
    """
    from .data import DATA_DIR

    report = Report()
    root = Path(path).expanduser().resolve() if path is not None else DATA_DIR
    if not root.is_dir():
        report.errors.append(f"{root}: not a directory")
        return report
    bundled = (root / "taxonomy.json").is_file() and not (root / "taxonomy.yaml").is_file()
    # "strategies": every strategy-map name (serving strategies + kv_store); "serving": the former only
    ids: dict[str, set[str]] = {"strategies": set(), "serving": set(), "hardware": set(), "kv_offload": set(),
                                "tasks": set()}

    tax_path = root / ("taxonomy.json" if bundled else "taxonomy.yaml")
    tax = None
    if not tax_path.is_file():
        report.errors.append(f"{tax_path}: missing (a recipes checkout needs taxonomy.yaml)")
    else:
        f = _read(tax_path, report)
        if f is not None:
            tax = _validate(f, Taxonomy, f.data, report)
            if tax is not None:
                ids["hardware"] = set(tax.hardware_profiles)
                ids["kv_offload"] = set(tax.kv_offload)
                ids["tasks"] = {t.id for t in tax.tasks}
                _check_profile_numbers(f, tax, report)
                if not tax.hardware_profiles:
                    report.errors.append(_no_profiles(f))

    if bundled:
        sp = root / "strategies.json"
        f = _read(sp, report) if sp.is_file() else None
        if f is not None:
            for sid, entry in f.data.items():
                if isinstance(entry, dict):
                    entry = {"name": sid, **entry}
                s = _validate(f, Strategy, entry, report, prefix=(sid,))
                if s is not None:
                    ids["strategies"].add(s.name)
                    ids["serving"].add(s.name)
                    _check_strategy_numbers(f, s, report, prefix=(sid,))
        if not ids["serving"]:
            report.errors.append(f"{sp}: no strategy loads — plan needs at least one "
                                 "(a JSON map of strategy id → strategy, e.g. \"single_node_tp\")")
    else:
        strat_dir = root / "strategies"
        for sp in _yaml_files(strat_dir, "*.yaml"):
            f = _read(sp, report)
            if f is None:
                continue
            model = KvStore if f.data.get("deploy_type") == "kv_store_lb" else Strategy
            s = _validate(f, model, f.data, report)
            if s is not None:
                ids["strategies"].add(s.name)
                if model is Strategy:
                    ids["serving"].add(s.name)
                    _check_strategy_numbers(f, s, report)
        if not strat_dir.is_dir():
            report.errors.append(f"{strat_dir}: missing — plan needs at least one strategy "
                                 "(strategies/<id>.yaml, e.g. strategies/single_node_tp.yaml)")
        elif not ids["serving"]:
            report.errors.append(f"{strat_dir}: no strategy loads — plan needs at least one "
                                 "(strategies/<id>.yaml with `name` and `deploy_type`, e.g. single_node_tp.yaml)")
    for kp in _yaml_files(root / "kv_store", "*.yaml"):
        f = _read(kp, report)
        if f is not None:
            s = _validate(f, KvStore, f.data, report)
            if s is not None:
                ids["strategies"].add(s.name)

    if tax is None:  # its errors say why: no flood of "unknown hardware/KV offload option" per recipe
        ids["taxonomy_failed"] = {str(tax_path)}
    models_dir = root / ("recipes" if bundled else "models")
    _stray_model_files(models_dir, report)
    loaded: dict[str, Path] = {}
    for rp in _yaml_files(models_dir, "*/*.yaml"):
        f = _read(rp, report)
        if f is None:
            continue
        org, repo = rp.parent.name, rp.stem
        data = {**f.data, "hf_org": org, "hf_repo": repo, "hf_id": f"{org}/{repo}"}
        recipe = _validate(f, Recipe, data, report)
        if recipe is not None:
            _check_recipe(f, recipe, ids, report)
            loaded[recipe.hf_id] = rp
    if bundled:
        _check_recipe_facts(root / "recipes.json", ids, loaded, report)
    _case_duplicates(loaded, report)
    if tax is None and loaded:
        report.warnings.append(f"{tax_path}: has errors, so recipes were not checked against it "
                               "(hardware ids, tasks, KV offload options) — fix it and check again")
    report.errors = _sorted_unique(report.errors)
    report.warnings = _sorted_unique(report.warnings)
    return report


class _Within:
    """One recipe inside ``recipes.json`` seen as a recipe file: key paths get the
    ``recipes.<hf_id>`` prefix, so ``file:line`` points into the JSON document."""

    def __init__(self, f: _File, prefix: tuple):
        self.f, self.prefix, self.path = f, prefix, f.path

    def nodes(self):
        return self.f.nodes()

    def line(self, loc: Iterable[Any], key: bool = True) -> str:
        return self.f.line((*self.prefix, *loc), key=key)


def _check_recipe_facts(path: Path, ids: dict[str, set[str]], loaded: dict[str, Path], report: Report) -> None:
    """The bundled ``recipes.json`` (tools/build_catalog.py): every recipe as :func:`_check_recipe`
    checks a recipe file."""
    if not path.is_file():
        return
    f = _read(path, report)
    if f is None:
        return
    recipes = f.data.get("recipes") if isinstance(f.data, dict) else None
    if not isinstance(recipes, dict):
        report.errors.append(f"{path}:1: expected {{source: ..., recipes: {{org/repo: recipe}}}}")
        return
    for hf_id, data in recipes.items():
        org, _, repo = str(hf_id).partition("/")
        if not isinstance(data, dict) or not repo:
            report.errors.append(f"{f.line(('recipes', hf_id))}: expected a recipe mapping keyed by org/repo")
            continue
        prefix = ("recipes", hf_id)
        recipe = _validate(f, Recipe, {**data, "hf_org": org, "hf_repo": repo, "hf_id": hf_id}, report, prefix)
        if recipe is not None:
            _check_recipe(_Within(f, prefix), recipe, ids, report)
            loaded.setdefault(recipe.hf_id, path)


def _no_profiles(f: _File) -> str:
    """The error for a taxonomy without hardware profiles, naming a misspelled key when there is one."""
    near = suggest.close_matches("hardware_profiles", [str(k) for k in f.data], n=1)
    if near and near[0] != "hardware_profiles":
        return (f"{f.line((near[0],))}: `{near[0]}` is not a taxonomy key — did you mean `hardware_profiles`? "
                "Without it the catalog has no hardware profiles and plan can't pick any hardware")
    return (f"{f.line(('hardware_profiles',))}: no hardware profiles — plan needs `hardware_profiles:` "
            "mapping profile ids (e.g. h100) to {brand, generation, gpu_count, vram_gb, …}")


def _stray_model_files(models_dir: Path, report: Report) -> None:
    """Warn for recipe files the loader never reads: only ``<models>/<org>/<repo>.yaml`` loads (§0)."""
    if not models_dir.is_dir():
        return
    for path in sorted(models_dir.rglob("*.y*ml")):
        depth = len(path.relative_to(models_dir).parts)
        if depth == 2 and path.suffix == ".yaml":
            continue
        why = ("not under an <org>/ folder" if depth == 1 else "nested deeper than <org>/" if depth > 2
               else "extension must be .yaml")
        report.warnings.append(f"{path}: ignored by the loader ({why}) — recipe files go in "
                               f"{models_dir.name}/<org>/<repo>.yaml, e.g. {models_dir.name}/Qwen/Qwen3-8B.yaml")


def _case_duplicates(loaded: dict[str, Path], report: Report) -> None:
    """Warn when recipe ids differ only in case: lookups are case-insensitive and the loader's index
    keeps the id loaded last (files in sorted path order), so the others can't be selected."""
    groups: dict[str, list[str]] = {}
    for hf_id in loaded:  # insertion order = the loader's order
        groups.setdefault(hf_id.lower(), []).append(hf_id)
    for ids in groups.values():
        if len(ids) < 2:
            continue
        winner = ids[-1]
        for loser in ids[:-1]:
            report.warnings.append(
                f"{loaded[loser]}:1: recipe id {loser!r} differs from {winner!r} ({loaded[winner]}) only in "
                f"case; model lookups ignore case, so {winner!r} wins and this file can't be selected — "
                "rename or remove one of them")


def _sorted_unique(lines: list[str]) -> list[str]:
    def key(line: str) -> tuple[str, int, str]:
        head, _, rest = line.partition(": ")
        file, _, num = head.rpartition(":")
        if num.isdigit():
            return file, int(num), rest
        return head, 0, rest

    return sorted(dict.fromkeys(lines), key=key)
