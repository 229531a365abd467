"""Load a catalog: the bundled one (seeds + curated recipes) or a recipes checkout.

Sources (``docs/contracts.md`` §1, ``shared/spec/plan-json.md`` §1, recipes-synthesis §0/§5):

* **bundled** — ``catalog/data/taxonomy.json`` (seed 000), ``catalog/data/strategies.json``
  (seed 001, a JSON map keyed by strategy id), plus ``catalog/data/kv_store/*.yaml`` and
  ``catalog/data/recipes/<org>/<repo>.yaml`` when present;
* **a recipes checkout** (``taxonomy.yaml``, ``strategies/*.yaml``, ``kv_store/*.yaml``,
  ``models/<org>/<repo>.yaml``) — it REPLACES the bundled catalog: nothing of the seeds leaks in
  (the seed ``pd_cluster``/``single_node_dep`` would change the commands).

Decisions:

* Files are read as bytes once: the same bytes feed the revision hash (provenance of a plan) and the
  parser. YAML is parsed with libyaml's ``CSafeLoader`` when available (same data as ``safe_load``,
  §0), JSON with :mod:`json`.
* Every problem of every file is collected and raised together as one :class:`CatalogError`
  (``file:line: message``; line numbers are computed only for a file that failed, by
  :func:`catalog.diagnostics.validation_problems`, so a clean load stays at libyaml speed).
* Cyclic GC is paused while a catalog loads (and restored after): a load allocates ~100k small
  acyclic objects (parsed YAML, then models) that live as long as the catalog, so collection passes
  during it are pure overhead — ~20–30 % of the load time measured on the snapshot
  (``bench/bench_catalog.py`` prints both figures).
* Recipe ids derive from the path (``models/<org>/<repo>.yaml`` → ``org/repo``, §0); lookups are
  case-insensitive; a variant whose ``model_id`` differs from the recipe id is an alias that selects
  that variant.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from vllm_deploy_wizard import suggest, yamlio
from vllm_deploy_wizard.errors import CatalogError, SelectionError

from .models import KvStore, Recipe, Strategy, Taxonomy


#: Folder of the bundled catalog (package data).
DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass
class Catalog:
    """A loaded catalog.

    ``strategies`` holds serving strategies keyed by id; ``kv_stores`` the Mooncake deployments
    (``deploy_type: kv_store_lb``) — recipes-synthesis §0 loads both into one map, :meth:`strategy_map`
    gives that view. ``recipes`` is keyed by canonical hf id (path case).
    """

    taxonomy: Taxonomy
    strategies: dict[str, Strategy]
    kv_stores: dict[str, KvStore]
    recipes: dict[str, Recipe]
    source: str = "bundled"
    """``"bundled"`` or the absolute path of the recipes checkout."""
    revision: str = ""
    """sha256 (hex, first 16 chars) over every file's relative path and bytes, in sorted order."""
    _index: dict[str, tuple[str, str | None]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self._index:
            self._index = build_index(self.recipes)

    def strategy_map(self) -> dict[str, Strategy | KvStore]:
        """Strategies and kv_store entries in one map keyed by name (recipes-synthesis §0)."""
        return {**self.strategies, **self.kv_stores}

    def resolve_model(self, model_id: str) -> tuple[Recipe, str | None]:
        """``(recipe, variant_key)`` for a recipe id or a variant's ``model_id`` (case-insensitive).

        ``variant_key`` is None for the recipe's own id, else the variant the alias selects (§0).
        Raises :class:`SelectionError` naming close matches when nothing matches.
        """
        hit = self._index.get(model_id.lower())
        if hit is None:
            hint = suggest.did_you_mean(model_id, self.recipes, n=3)
            raise SelectionError(
                f"unknown model {model_id!r}: no recipe in the {self.source} catalog has that id{hint}."
            )
        hf_id, variant = hit
        return self.recipes[hf_id], variant

    def recipe(self, model_id: str) -> Recipe:
        """The recipe for ``model_id`` (case-insensitive; variant aliases resolve to their parent)."""
        return self.resolve_model(model_id)[0]

    def with_recipe(self, recipe: Recipe) -> "Catalog":
        """A copy of this catalog with ``recipe`` added (e.g. a custom model derived from its
        ``config.json``); the original is left untouched."""
        recipes = {**self.recipes, recipe.hf_id: recipe}
        return Catalog(self.taxonomy, self.strategies, self.kv_stores, recipes, self.source, self.revision)

    def sorted_recipes(self) -> list[Recipe]:
        """Recipes in catalog order: ``date_updated`` descending, ties by hf id (§0)."""
        by_id = sorted(self.recipes.values(), key=lambda r: r.hf_id)
        return sorted(by_id, key=lambda r: r.meta.date_updated or "", reverse=True)


def build_index(recipes: dict[str, Recipe]) -> dict[str, tuple[str, str | None]]:
    """Lower-cased id → (hf_id, variant key or None). Recipe ids win over variant aliases."""
    index: dict[str, tuple[str, str | None]] = {}
    for hf_id, recipe in recipes.items():
        for key, variant in recipe.variants.items():
            mid = variant.model_id
            if mid and mid.lower() != hf_id.lower():
                index.setdefault(mid.lower(), (hf_id, key))
    for hf_id in recipes:
        index[hf_id.lower()] = (hf_id, None)
    return index


# ---------------------------------------------------------------------------------------------
# reading files


class _Reader:
    """Reads and parses files, hashing their bytes and collecting problems."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems: list[str] = []
        self._hash = hashlib.sha256()
        self._raw: dict[Path, bytes] = {}

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def read(self, path: Path) -> Any:
        """Parsed content of ``path`` (YAML or JSON by suffix), or None after recording a problem."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.problems.append(f"{path}: cannot read: {exc.strerror or exc}")
            return None
        self._hash.update(self.rel(path).encode() + b"\0" + data + b"\0")
        self._raw[path] = data
        try:
            if path.suffix == ".json":
                return json.loads(data)
            return yamlio.load(data)
        except json.JSONDecodeError as exc:
            self.problems.append(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}")
        except yaml.YAMLError as exc:
            self.problems.append(yamlio.error_message(path, exc))
        return None

    def validate(self, model: type, data: Any, path: Path, prefix: str = "") -> Any:
        """``model.model_validate(data)``; on failure records one problem per pydantic error."""
        if not isinstance(data, dict):
            self.problems.append(f"{path}: {prefix or 'top level'}: expected a mapping, got {type(data).__name__}")
            return None
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            # line numbers only on failure: re-compose this one file (catalog/diagnostics.py)
            from .diagnostics import validation_problems

            raw = self._raw.get(path, b"")
            self.problems.extend(validation_problems(path, raw, exc, (prefix,) if prefix else ()))
            return None

    @property
    def revision(self) -> str:
        return self._hash.hexdigest()[:16]


def _yaml_files(folder: Path, pattern: str) -> list[Path]:
    return sorted(folder.glob(pattern)) if folder.is_dir() else []


def _load_recipes(reader: _Reader, paths: Iterable[Path]) -> dict[str, Recipe]:
    recipes: dict[str, Recipe] = {}
    for path in paths:
        data = reader.read(path)
        if data is None:
            continue
        org, repo = path.parent.name, path.stem
        if isinstance(data, dict):
            data = {**data, "hf_org": org, "hf_repo": repo, "hf_id": f"{org}/{repo}"}
        recipe = reader.validate(Recipe, data, path)
        if recipe is not None:
            recipes[recipe.hf_id] = recipe
    return recipes


def _load_kv_stores(reader: _Reader, paths: Iterable[Path]) -> dict[str, KvStore]:
    stores: dict[str, KvStore] = {}
    for path in paths:
        data = reader.read(path)
        if data is None:
            continue
        store = reader.validate(KvStore, data, path)
        if store is not None:
            stores[store.name] = store
    return stores


def load_recipes_dir(root: Path) -> Catalog:
    """Load a recipes checkout laid out like ``shared/recipes-snapshot`` (plan-json §1).

    Raises :class:`CatalogError` listing every problem (missing ``taxonomy.yaml``, YAML syntax with
    file:line, schema errors with the key path).
    """
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise CatalogError(f"{root}: recipes directory does not exist")
    reader = _Reader(root)
    tax_path = root / "taxonomy.yaml"
    taxonomy = None
    if not tax_path.is_file():
        reader.problems.append(f"{tax_path}: missing (a recipes checkout needs taxonomy.yaml)")
    else:
        taxonomy = reader.validate(Taxonomy, reader.read(tax_path), tax_path)
    strategies: dict[str, Strategy] = {}
    kv_stores = _load_kv_stores(reader, _yaml_files(root / "kv_store", "*.yaml"))
    for path in _yaml_files(root / "strategies", "*.yaml"):
        data = reader.read(path)
        if data is None:
            continue
        if isinstance(data, dict) and data.get("deploy_type") == "kv_store_lb":
            store = reader.validate(KvStore, data, path)
            if store is not None:
                kv_stores[store.name] = store
            continue
        strategy = reader.validate(Strategy, data, path)
        if strategy is not None:
            strategies[strategy.name] = strategy
    recipes = _load_recipes(reader, _yaml_files(root / "models", "*/*.yaml"))
    if reader.problems or taxonomy is None:
        raise CatalogError(reader.problems)
    return Catalog(taxonomy, strategies, kv_stores, recipes, source=str(root), revision=reader.revision)


def load_bundled(data_dir: Path = DATA_DIR) -> Catalog:
    """Load the bundled catalog: seeds 000/001 + ``data/kv_store`` + ``data/recipes`` (if present)."""
    reader = _Reader(data_dir)
    tax_path = data_dir / "taxonomy.json"
    taxonomy = reader.validate(Taxonomy, reader.read(tax_path), tax_path)
    strat_path = data_dir / "strategies.json"
    raw = reader.read(strat_path)
    strategies: dict[str, Strategy] = {}
    if isinstance(raw, dict):
        for key, entry in raw.items():
            if isinstance(entry, dict) and "name" not in entry:
                entry = {**entry, "name": key}
            strategy = reader.validate(Strategy, entry, strat_path, prefix=key)
            if strategy is not None:
                strategies[strategy.name] = strategy
    elif raw is not None:
        reader.problems.append(f"{strat_path}: top level: expected a map of strategy id → strategy")
    kv_stores = _load_kv_stores(reader, _yaml_files(data_dir / "kv_store", "*.yaml"))
    recipes = _load_recipes(reader, _yaml_files(data_dir / "recipes", "*/*.yaml"))
    if reader.problems or taxonomy is None:
        raise CatalogError(reader.problems)
    return Catalog(taxonomy, strategies, kv_stores, recipes, source="bundled", revision=reader.revision)


@contextlib.contextmanager
def _gc_paused():
    """Pause cyclic GC for a bulk load (see module docstring); restores the previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_catalog(recipes: Path | str | None = None) -> Catalog:
    """The catalog: bundled when ``recipes`` is None, else the checkout at ``recipes`` (replacing it).

    Raises :class:`CatalogError` (every problem at once) when a file is unreadable or malformed.
    """
    with _gc_paused():
        if recipes is None:
            return load_bundled()
        return load_recipes_dir(Path(recipes))
