"""Load a catalog: the bundled one (seeds + every recipe), a layered one, or a recipes checkout.

Sources and layering (``docs/catalog.md``, ``docs/contracts.md`` §1, ``docs/plan-file.md`` §1):

* **bundled** — ``catalog/data/taxonomy.json`` (the seed taxonomy), ``catalog/data/strategies.json``
  (the seed strategies, a JSON map keyed by strategy id), ``catalog/data/kv_store/*.yaml`` and
  ``catalog/data/recipes.json``: every model recipe of the vLLM recipes repository in a facts-only
  form, written by ``tools/build_catalog.py`` (its ``source`` block names the recipes revision);
  any ``catalog/data/recipes/<org>/<repo>.yaml`` is read after it and wins for its id;
* **layered** (:func:`layer`, a remembered or synced checkout) — the bundled catalog, then the
  checkout's recipes added or replacing the bundled ones by id, and the checkout's hardware
  profiles, tasks, KV-offload options/groups, strategies and kv_store entries added only where the
  seeds lack that id: the seeds define the system, a checkout never removes or redefines one;
* **a recipes checkout exactly** (``--recipes DIR``: ``taxonomy.yaml``, ``strategies/*.yaml``,
  ``kv_store/*.yaml``, ``models/<org>/<repo>.yaml``) — the reference builder's view: nothing of the
  seeds leaks in (the seed ``pd_cluster``/``single_node_dep`` would change the commands).

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
* The bundled catalog is validated once per installation and kept, pickled, in the user's cache
  folder (:mod:`.bundled_cache`, keyed by the bytes of the data and of the model code); a recipes
  checkout is never cached. A hit costs ~10 ms and builds no pydantic validator.
* Recipe ids derive from the path (``models/<org>/<repo>.yaml`` → ``org/repo``, §0); lookups are
  case-insensitive; a variant whose ``model_id`` differs from the recipe id is an alias that selects
  that variant.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common import suggest
from vllm_deploy_wizard.common.errors import CatalogError, SelectionError

from .data import DATA_DIR
from .models import KvStore, Recipe, Strategy, Taxonomy
from .record import Record


@dataclass
class Catalog:
    """A loaded catalog.

    ``strategies`` holds serving strategies keyed by id; ``kv_stores`` the Mooncake deployments
    (``deploy_type: kv_store_lb``) — docs/synthesis.md §0 loads both into one map, :meth:`strategy_map`
    gives that view. ``recipes`` is keyed by canonical hf id (path case).
    """

    taxonomy: Taxonomy
    strategies: dict[str, Strategy]
    kv_stores: dict[str, KvStore]
    recipes: Mapping[str, Recipe]
    """By canonical hf id; the bundled catalog's is a :class:`LazyRecipes` (validated on read)."""
    source: str = "bundled"
    """``"bundled"``, the absolute path of an exact recipes checkout, or ``"bundled+<path>"`` for a
    checkout layered over the bundled catalog."""
    revision: str = ""
    """sha256 (hex, first 16 chars) over every file's relative path and bytes, in sorted order."""
    recipes_revision: str = ""
    """Revision of the recipes the models came from: the bundled data's recorded revision (a git
    commit or ``sha256:…``), a synced checkout's stamp, or ``""`` when unknown."""
    _index: dict[str, tuple[str, str | None]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self._index:
            self._index = build_index(self.recipes)

    def strategy_map(self) -> dict[str, Strategy | KvStore]:
        """Strategies and kv_store entries in one map keyed by name (docs/synthesis.md §0)."""
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

    def served_model_id(self, model_id: str, variant: str | None = None) -> str:
        """The Hugging Face id ``vllm serve`` gets for a recipe id or variant alias (case-insensitive):
        the variant's ``model_id``, else the recipe's ``model.model_id``, else the recipe id
        (docs/synthesis.md §2 ``modelId``). ``variant``: a variant key (default: the alias's, else
        ``default``).

        Why: a recipe id is the recipes folder path and may differ from the model's own id in case
        (``Google/gemma-4-12B-it`` serves ``google/gemma-4-12B-it``). The hub finds a repo in any
        case, but the local cache folder (``models--<org>--<name>``) and vLLM's served model name
        keep the case given, so downloading or reading config.json under the recipe id would miss
        what vLLM loads.
        """
        recipe, alias = self.resolve_model(model_id)
        v = recipe.variants.get(variant or alias or "default")
        return (v.model_id if v is not None else None) or recipe.model.model_id or recipe.hf_id

    def recipe(self, model_id: str) -> Recipe:
        """The recipe for ``model_id`` (case-insensitive; variant aliases resolve to their parent)."""
        return self.resolve_model(model_id)[0]

    def with_recipe(self, recipe: Recipe) -> Catalog:
        """A copy of this catalog with ``recipe`` added (e.g. a custom model derived from its
        ``config.json``); the original is left untouched."""
        recipes = {**self.recipes, recipe.hf_id: recipe}
        return Catalog(self.taxonomy, self.strategies, self.kv_stores, recipes, self.source, self.revision,
                       self.recipes_revision)

    def sorted_recipes(self) -> list[Recipe]:
        """Recipes in catalog order: ``date_updated`` descending, ties by hf id (§0)."""
        by_id = sorted(self.recipes.values(), key=lambda r: r.hf_id)
        return sorted(by_id, key=lambda r: r.meta.date_updated or "", reverse=True)


class LazyRecipes(Mapping):
    """A read-only ``hf_id → Recipe`` mapping over parsed recipe dicts that validates each recipe
    the first time it is read (bundled data is validated when it is generated and by the test
    suite; a load should not pay for the 140+ recipes a session never opens).

    Reading a recipe whose data does not validate raises :class:`CatalogError` naming the file and
    the key path. ``raw(hf_id)`` is the parsed dict (used to index variant aliases without
    validating).
    """

    def __init__(self, path: Path, data: dict[str, dict[str, Any]]):
        self._path = path
        self._raw = data
        self._done: dict[str, Recipe] = {}

    def __getitem__(self, hf_id: str) -> Recipe:
        hit = self._done.get(hf_id)
        if hit is None:
            data = self._raw[hf_id]
            org, _, repo = hf_id.partition("/")
            from pydantic import ValidationError

            try:
                hit = Recipe.model_validate({**data, "hf_org": org, "hf_repo": repo, "hf_id": hf_id})
            except ValidationError as exc:
                from .diagnostics import validation_problems

                try:
                    raw = self._path.read_bytes()
                except OSError:
                    raw = b""
                raise CatalogError(validation_problems(self._path, raw, exc, ("recipes", hf_id))) from None
            self._done[hf_id] = hit
        return hit

    def __iter__(self):
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, hf_id: object) -> bool:
        return hf_id in self._raw

    def raw(self, hf_id: str) -> dict[str, Any]:
        """The parsed, unvalidated data of ``hf_id``."""
        return self._raw[hf_id]


def _variant_ids(recipes: Mapping, hf_id: str) -> list[tuple[str, str | None]]:
    """``[(variant key, Hugging Face id)]`` of one recipe, ``default`` first, from raw data when the
    mapping is lazy. A variant without its own ``model_id`` serves the recipe's ``model.model_id``
    (how synthesis picks the id), so that id names it too."""
    if isinstance(recipes, LazyRecipes):
        raw = recipes.raw(hf_id)
        variants = raw.get("variants") or {}
        model = raw.get("model")
        if not isinstance(model, dict):
            model = {}
        own = [(k, v.get("model_id") if isinstance(v, dict) else None) for k, v in variants.items()]
        base = model.get("model_id")
    else:
        recipe = recipes[hf_id]
        own = [(k, v.model_id) for k, v in recipe.variants.items()]
        base = recipe.model.model_id
    pairs = [(k, mid or base) for k, mid in own]
    return sorted(pairs, key=lambda kv: kv[0] != "default")


def build_index(recipes: Mapping[str, Recipe]) -> dict[str, tuple[str, str | None]]:
    """Lower-cased id → (hf_id, variant key or None): every variant's Hugging Face id (its
    ``model_id``, else the recipe's ``model.model_id``) names that variant —
    ``thinkingmachines/Inkling-NVFP4`` the Inkling recipe's ``default``. Recipe ids win over variant
    ids; two variants with one id resolve to the first (``default`` first)."""
    index: dict[str, tuple[str, str | None]] = {}
    for hf_id in recipes:
        for key, mid in _variant_ids(recipes, hf_id):
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
        self._unreadable: set[Path] = set()  # files whose read or parse error is already a problem

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
            self._unreadable.add(path)
            return None
        self._hash.update(self.rel(path).encode() + b"\0" + data + b"\0")
        self._raw[path] = data
        if path.suffix == ".json":
            try:
                return json.loads(data)
            except json.JSONDecodeError as exc:
                self.problems.append(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}")
                self._unreadable.add(path)
                return None
        import yaml  # YAML files only: a bundled-cache hit parses none

        from vllm_deploy_wizard.common import yamlio

        try:
            return yamlio.load(data)
        except yaml.YAMLError as exc:
            self.problems.append(yamlio.error_message(path, exc))
            self._unreadable.add(path)
        return None

    def validate(self, model: type[Record], data: Any, path: Path, prefix: str = "") -> Any:
        """``model.model_validate(data)``; on failure records one problem per pydantic error."""
        if data is None and path in self._unreadable:  # its read/parse error is the one problem
            return None
        if not isinstance(data, dict):
            self.problems.append(f"{path}: {prefix or 'top level'}: expected a mapping, got {type(data).__name__}")
            return None
        from pydantic import ValidationError

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
    """Load a recipes checkout, laid out as the module docstring says (docs/plan-file.md §1).

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


#: The bundled recipes in facts-only form (written by ``tools/build_catalog.py``).
RECIPES_FILE = "recipes.json"


def _load_recipe_facts(reader: _Reader, path: Path) -> tuple[Mapping[str, Recipe], str]:
    """Recipes of a ``tools/build_catalog.py`` document (a :class:`LazyRecipes`) and its recorded
    revision. The shape (``{source, recipes: {org/repo: mapping}}``) is checked now; each recipe is
    validated when first read."""
    if not path.is_file():
        return {}, ""
    doc = reader.read(path)
    if doc is None:
        return {}, ""
    if not isinstance(doc, dict) or not isinstance(doc.get("recipes"), dict):
        reader.problems.append(f"{path}: top level: expected {{source: ..., recipes: {{org/repo: recipe}}}}")
        return {}, ""
    for hf_id, data in doc["recipes"].items():
        if not isinstance(data, dict) or "/" not in str(hf_id):
            reader.problems.append(f"{path}: recipes.{hf_id}: expected a recipe mapping keyed by org/repo")
    source = doc.get("source")
    if not isinstance(source, dict):
        source = {}
    return LazyRecipes(path, doc["recipes"]), str(source.get("revision") or "")


def load_bundled(data_dir: Path = DATA_DIR, *, cache: Path | None = None) -> Catalog:
    """Load the bundled catalog: seeds 000/001 + ``data/kv_store`` + ``data/recipes.json`` (+ any
    ``data/recipes/<org>/<repo>.yaml``, which win for their id).

    ``cache``: the folder of validated catalogs (:mod:`.bundled_cache`, keyed by the bytes of the data
    and of the model code, so never stale); None = the user's cache folder when ``data_dir`` is the
    installed :data:`DATA_DIR`, no cache for any other folder. Raises :class:`CatalogError` (every
    problem at once) for data that does not load, cached or not.
    """
    if cache is None and data_dir == DATA_DIR:
        from . import bundled_cache

        cache = bundled_cache.default_folder()
    if cache is not None:
        from . import bundled_cache

        return bundled_cache.load(data_dir, cache, _load_bundled_uncached)
    return _load_bundled_uncached(data_dir)


def _load_bundled_uncached(data_dir: Path) -> Catalog:
    """:func:`load_bundled` without the cache: parse and validate (recipes lazily, :class:`LazyRecipes`)."""
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
    recipes, recipes_revision = _load_recipe_facts(reader, data_dir / RECIPES_FILE)
    overrides = _load_recipes(reader, _yaml_files(data_dir / "recipes", "*/*.yaml"))
    if overrides:
        recipes = {**recipes, **overrides}
    if reader.problems or taxonomy is None:
        raise CatalogError(reader.problems)
    return Catalog(taxonomy, strategies, kv_stores, recipes, source="bundled", revision=reader.revision,
                   recipes_revision=recipes_revision)


def _add_missing(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``base`` in its order, then the entries of ``extra`` whose key ``base`` lacks."""
    return {**base, **{k: v for k, v in extra.items() if k not in base}}


def layer(base: Catalog, checkout: Catalog) -> Catalog:
    """``checkout`` layered over ``base`` (docs/catalog.md §1): recipes are added or replaced by id;
    hardware profiles, tasks, KV-offload options and groups, strategies and kv_store entries are added
    only where ``base`` lacks the id. Neither input is changed.

    Returns a catalog whose ``source`` is ``"<base source>+<checkout source>"`` and whose revision
    hashes both revisions.
    """
    tb, tc = base.taxonomy, checkout.taxonomy
    known_tasks = {t.id for t in tb.tasks}
    taxonomy = tb.model_copy(update={
        "hardware_profiles": _add_missing(tb.hardware_profiles, tc.hardware_profiles),
        "tasks": [*tb.tasks, *(t for t in tc.tasks if t.id not in known_tasks)],
        "strategies": [*tb.strategies, *(s for s in tc.strategies if s not in tb.strategies)],
        "kv_offload_groups": _add_missing(tb.kv_offload_groups, tc.kv_offload_groups),
        "kv_offload": _add_missing(tb.kv_offload, tc.kv_offload),
        "frontends": _add_missing(tb.frontends, tc.frontends),
    })
    strategies = _add_missing(base.strategies, checkout.strategies)
    kv_stores = _add_missing(base.kv_stores, checkout.kv_stores)
    recipes = {**base.recipes, **checkout.recipes}
    revision = hashlib.sha256(f"{base.revision}+{checkout.revision}".encode()).hexdigest()[:16]
    return Catalog(taxonomy, strategies, kv_stores, recipes, source=f"{base.source}+{checkout.source}",
                   revision=revision, recipes_revision=checkout.recipes_revision or base.recipes_revision)


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


def load_catalog(recipes: Path | str | None = None, *, over_bundled: Path | str | None = None) -> Catalog:
    """The catalog (docs/catalog.md §1).

    * ``load_catalog()`` — the bundled catalog (seeds + every bundled recipe);
    * ``load_catalog(DIR)`` — exactly the checkout at ``DIR`` (``--recipes``, the reference view);
    * ``load_catalog(over_bundled=DIR)`` — the checkout at ``DIR`` layered over the bundled catalog
      (a remembered or synced checkout, :func:`layer`).

    Raises :class:`CatalogError` (every problem at once) when a file is unreadable or malformed;
    ``ValueError`` when both arguments are given.
    """
    if recipes is not None and over_bundled is not None:
        raise ValueError("load_catalog: pass recipes (exact checkout) or over_bundled (layered), not both")
    with _gc_paused():
        if over_bundled is not None:
            return layer(load_bundled(), load_recipes_dir(Path(over_bundled)))
        if recipes is None:
            return load_bundled()
        return load_recipes_dir(Path(recipes))


def load_for_source(source: Any) -> Catalog:
    """The catalog a :class:`~vllm_deploy_wizard.catalog.sources.CatalogSource` names:
    ``kind == "dir"`` (``--recipes``) → exactly that checkout; ``"config"`` (remembered or synced)
    → that checkout layered over the bundled catalog; ``"bundled"`` → the bundled catalog."""
    if source.path is None:
        return load_catalog()
    if source.kind == "dir":
        cat = load_catalog(source.path)
    else:
        cat = load_catalog(over_bundled=source.path)
    if source.revision:
        cat.recipes_revision = source.revision
    return cat
