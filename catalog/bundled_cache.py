"""The bundled catalog, validated once and kept in the user's cache folder, so that a ``vllm-wizard
plan`` or the wizard's first screen does not import pydantic nor validate at every start (issue #21).

Why: the bundled data never changes between runs of one installation, yet every process paid to
import pydantic, build the validators (core-schema generation, ~60 ms of CPU for the ~50 classes)
and validate the taxonomy and strategies (and the plan's recipe) again. A cache hit unpickles the
finished :class:`~.loader.Catalog` instead — plain records (:mod:`.record`), so pydantic is not
imported: the taxonomy, strategies and kv_store already validated, and every recipe validated and
pickled on its own (:class:`CachedRecipes`, unpickled when first read — a start reads one or two).
Pydantic is imported only if something validates later with it (a custom model, a selection that is
not exactly typed).

What is cached, and when it is used (:func:`load`):

* only the **bundled** data folder (:data:`~.data.DATA_DIR`, or a folder a caller names with a cache
  folder — tests). A recipes checkout (``--recipes``, a remembered or synced one) is never cached: it
  is the person's to edit, so it is parsed and validated every time (``loader.load_recipes_dir``);
* the key is a sha256 over :data:`FORMAT`, the Python version, pydantic's version file, the source bytes of the
  code that turns the data into objects (:data:`CODE_FILES`: the models, the loader, this module, the
  YAML reader), the data folder's path, and the relative path and bytes of every data file the loader
  reads (the file list itself included: an added ``recipes/<org>/<repo>.yaml`` override changes it).
  Any changed byte is a different key, so a stale entry is never read; reading the ~0.4 MB costs ~1 ms;
* a miss loads the catalog the normal way (errors exactly as without a cache; nothing is written
  for data that does not load), validates every recipe for the entry (a recipe that does not validate
  stays raw, so reading it raises the same :class:`CatalogError` naming file and key, as without a
  cache), writes the entry atomically (temp file + rename) and removes entries of other keys;
* an entry that cannot be read, is not the current user's, or does not unpickle into a catalog is
  ignored (and overwritten); a cache folder that cannot be written costs only the write attempt.

Pickle is safe here in the way the user's own site-packages are: the entry is written by this
program into the user's own cache folder (created 0700) and read only when owned by the user.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

from vllm_deploy_wizard.common.errors import CatalogError

from .loader import Catalog, LazyRecipes
from .models import Recipe

#: Bumped when the shape of an entry changes.
FORMAT = "2"

_CATALOG_ROOT = Path(__file__).resolve().parent
#: Source files (relative to the ``catalog`` package, ``..`` for the shared package) whose code
#: decides what a loaded catalog contains: a change to any of them invalidates every entry.
CODE_FILES = ("record.py", "validation.py", "models/__init__.py", "models/base.py", "models/kv_store.py",
              "models/recipe.py", "models/strategy.py", "models/taxonomy.py", "loader.py", "bundled_cache.py")


def _library_files() -> list[Path]:
    """The files naming the versions of the code outside the catalog that shapes an entry: the
    YAML reader, and pydantic's and pydantic-core's version files (found without importing them:
    a cache hit imports neither pydantic nor yaml). Raises OSError when one cannot be found."""
    from importlib.util import find_spec

    out = []
    for name, file in (("vllm_deploy_wizard.common", "yamlio.py"), ("pydantic", "version.py"),
                       ("pydantic_core", "__init__.py")):
        spec = find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise OSError(f"{name} not found")
        out.append(Path(next(iter(spec.submodule_search_locations))) / file)
    return out


def default_folder() -> Path:
    """``<user cache dir>/catalog`` (``$XDG_CACHE_HOME/vllm-wizard/catalog``); may not exist yet."""
    from vllm_deploy_wizard.common.appdirs import cache_dir

    return cache_dir() / "catalog"


def data_files(data_dir: Path) -> list[Path]:
    """The files :func:`~.loader.load_bundled` reads from ``data_dir``, in its order."""
    def glob(folder: Path, pattern: str) -> list[Path]:
        return sorted(folder.glob(pattern)) if folder.is_dir() else []

    return [data_dir / "taxonomy.json", data_dir / "strategies.json", *glob(data_dir / "kv_store", "*.yaml"),
            data_dir / "recipes.json", *glob(data_dir / "recipes", "*/*.yaml")]


def entry_key(data_dir: Path) -> str | None:
    """The hex sha256 naming the entry for ``data_dir`` now (see the module docstring), or None
    when a file cannot be read (then nothing is cached: the loader reports the problem)."""
    h = hashlib.sha256(f"{FORMAT}\0{sys.version}\0{data_dir}\0".encode())
    try:
        for rel in CODE_FILES:
            h.update(rel.encode() + b"\0" + (_CATALOG_ROOT / rel).read_bytes() + b"\0")
        for path in _library_files():
            h.update(path.read_bytes() + b"\0")
        for path in data_files(data_dir):
            if path.is_file():
                h.update(str(path.relative_to(data_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return h.hexdigest()


def _entry(folder: Path, key: str) -> Path:
    return folder / f"bundled-{key[:32]}.pickle"


def read(folder: Path, key: str) -> Any:
    """The cached catalog for ``key`` in ``folder``, or None (no entry, not ours, unreadable)."""
    path = _entry(folder, key)
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_uid != os.getuid():
                return None
            data = fh.read()
    except OSError:
        return None
    try:
        obj = pickle.loads(data)
    except Exception:  # noqa: BLE001 — a truncated or foreign entry: ignored, rewritten
        return None
    if not (isinstance(obj, tuple) and len(obj) == 2 and obj[0] == key and isinstance(obj[1], Catalog)):
        return None
    return obj[1]


class CachedRecipes(LazyRecipes):
    """The recipes of a cache entry: each validated recipe kept as its own pickle, unpickled on
    first read (a start reads one or two of the ~140), and its parsed data as JSON bytes (for
    :meth:`raw`). A recipe that did not validate keeps only its data: reading it validates it again
    and raises the same :class:`CatalogError` as an uncached catalog. Same mapping, same order."""

    def __init__(self, source: LazyRecipes):
        super().__init__(source._path, {})
        self._raw_json = {h: json.dumps(source.raw(h)).encode() for h in source}
        self._pickled = {h: pickle.dumps(source._done[h], protocol=pickle.HIGHEST_PROTOCOL)
                         for h in source if h in source._done}

    def __getitem__(self, hf_id: str) -> Recipe:
        hit = self._done.get(hf_id)
        if hit is None:
            blob = self._pickled.get(hf_id)
            if blob is None:
                self._raw.setdefault(hf_id, self.raw(hf_id))  # KeyError for an unknown id, as a dict
                return super().__getitem__(hf_id)
            hit = self._done[hf_id] = pickle.loads(blob)
        return hit

    def __iter__(self):
        return iter(self._raw_json)

    def __len__(self) -> int:
        return len(self._raw_json)

    def __contains__(self, hf_id: object) -> bool:
        return hf_id in self._raw_json

    def raw(self, hf_id: str) -> dict[str, Any]:
        """The parsed, unvalidated data of ``hf_id`` (a fresh copy)."""
        return json.loads(self._raw_json[hf_id])


def write(folder: Path, key: str, catalog: Any) -> bool:
    """Store ``catalog`` (every recipe validated first, where it validates) as the entry for
    ``key``; remove the entries of other keys. True when written; False when the folder is not
    writable (the cache is an optimisation: nothing is raised). A temporary file is opened in the
    folder first, so a read-only cache costs no validation."""
    target = _entry(folder, key)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".bundled-", dir=folder)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            for hf_id in list(catalog.recipes):
                try:
                    catalog.recipes[hf_id]
                except CatalogError:  # stays raw: reading it raises the same error after a cache hit
                    pass
            stored = catalog
            if isinstance(catalog.recipes, LazyRecipes):
                stored = dataclasses.replace(catalog, recipes=CachedRecipes(catalog.recipes), _index=catalog._index)
            fh.write(pickle.dumps((key, stored), protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, target)
        for old in folder.glob("bundled-*.pickle"):
            if old != target:
                old.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError):
        return False
    finally:
        Path(tmp).unlink(missing_ok=True)  # gone after the rename; left behind by a failure
    return True


def load(data_dir: Path, folder: Path, load_uncached) -> Any:
    """The catalog of the bundled data in ``data_dir``: the entry in ``folder`` for its current key,
    else ``load_uncached(data_dir)`` (which raises :class:`CatalogError` for bad data, unchanged),
    stored for the next start."""
    key = entry_key(data_dir)
    if key is None:
        return load_uncached(data_dir)
    hit = read(folder, key)
    if hit is not None:
        return hit
    catalog = load_uncached(data_dir)
    write(folder, key, catalog)
    return catalog
