"""Where the catalog comes from: bundled data, a recipes checkout, the user config, the sync cache.

Resolution order (first hit wins), see :func:`resolve_source`:

1. ``--recipes DIR`` on the command line (explicit, for that run only);
2. ``recipes_dir`` remembered in the user config
   (``platformdirs.user_config_path("vllm-wizard") / "config.yaml"``), written by
   ``vllm-wizard recipes use DIR`` and by ``vllm-wizard recipes sync``;
3. the bundled catalog (the seeds + every recipe in facts-only form + Mooncake kv_store), shipped
   as package data.

How each source is loaded (:func:`vllm_deploy_wizard.catalog.loader.load_for_source`,
docs/catalog.md §1): ``--recipes DIR`` is exactly that checkout (the reference builder's view);
a remembered or synced checkout is layered over the bundled catalog — it adds and updates models
and adds taxonomy ids the seeds lack, and never removes a seed system.

``sync_recipes`` downloads a GitHub-style repository archive (``.tar.gz`` or ``.zip`` with exactly one
top folder), unpacks it safely, validates that it loads, and swaps it in atomically. Decisions:

- The format is sniffed from the first bytes (gzip ``1f 8b``, zip ``PK\\x03\\x04``), not the URL, so a
  redirecting ``/archive/<ref>`` URL works.
- Safety: members with an absolute path, a ``..`` component, a link, a device or anything that would
  land outside the extraction folder are refused (the whole archive is rejected — a recipes archive
  never legitimately has them). On Python ≥ 3.12 tarfile's ``data`` filter is applied as well.
- Atomic replace: every sync unpacks into ``<cache>/checkouts/<revision>-<n>``; ``<cache>/current`` is a
  symlink swapped with ``os.replace`` (atomic on POSIX), so readers see the old or the new checkout,
  never a half-written one. Older checkouts are removed after the swap.
- Revision: GitHub writes the commit id into the archive (tar pax global header ``comment``, zip file
  comment); when absent the archive's sha256 (first 12 hex digits) is recorded. The revision and URL
  land in ``<checkout>/.vllm-wizard-sync.json``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from vllm_deploy_wizard.common import appdirs
from vllm_deploy_wizard.common.errors import WizardError

#: Default archive for ``vllm-wizard recipes sync``: the vllm-project/recipes main branch.
DEFAULT_SYNC_URL = "https://github.com/vllm-project/recipes/archive/refs/heads/main.tar.gz"

#: File written into every synced checkout: ``{url, revision, sha256, fetched_at}``.
SYNC_STAMP = ".vllm-wizard-sync.json"

#: Largest archive ``sync_recipes`` accepts, in bytes (the real repository is a few MB).
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024


class SyncError(WizardError):
    """A recipes archive could not be downloaded, unpacked or validated (message says which and why)."""


class SourceError(WizardError):
    """A recipes directory (``--recipes DIR``, ``recipes use DIR``, the user config) is not a checkout."""


@dataclasses.dataclass(frozen=True)
class CatalogSource:
    """Where one catalog load reads from.

    Attributes:
        kind: ``"bundled"``, ``"dir"`` (``--recipes``) or ``"config"`` (remembered ``recipes_dir``).
        path: the checkout root (``taxonomy.yaml``, ``strategies/``, ``kv_store/``, ``models/``);
            ``None`` for the bundled catalog.
        revision: the sync revision when the checkout came from ``recipes sync``, else ``None``.
    """

    kind: str
    path: Path | None = None
    revision: str | None = None

    @property
    def label(self) -> str:
        """The ``provenance.catalog_source`` of a plan file: ``"bundled"``, the checkout path
        (``--recipes``), or ``"bundled+<path>"`` (a remembered checkout layered over the bundled one)."""
        if self.path is None:
            return "bundled"
        return str(self.path) if self.kind == "dir" else f"bundled+{self.path}"


# --------------------------------------------------------------------------- user folders / config


def config_file() -> Path:
    """The user config file: ``user_config_path("vllm-wizard")/config.yaml`` (XDG on Linux)."""
    return appdirs.config_dir() / "config.yaml"


def cache_root() -> Path:
    """Where synced recipes live: ``user_cache_path("vllm-wizard")/recipes``."""
    return appdirs.cache_dir() / "recipes"


#: What to do about a broken config file, appended to every :class:`SourceError` about it.
_CONFIG_FIX = ("fix it or delete it (or run `vllm-wizard recipes use --bundled` / `recipes use DIR`, "
               "which replace it and keep a backup copy)")


def read_config(path: Path | None = None) -> dict[str, Any]:
    """The user config as a dict (``{}`` when the file does not exist or is empty).

    Raises:
        SourceError: the file exists but can't be read, is not valid YAML or is not a mapping —
            ``"config file FILE:LINE: problem — fix it or delete it …"``. Every command that reads the
            catalog source (``plan``, ``catalog check``, ``recipes show``, the TUI) goes through here,
            so they all print this one line instead of a YAML traceback.
    """
    path = path or config_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"config file {path}: cannot read ({exc}) — {_CONFIG_FIX}") from None
    import yaml  # only when there is a config file: a start without one imports no YAML reader

    from vllm_deploy_wizard.common import yamlio

    try:
        data = yamlio.load(text)
    except yaml.YAMLError as exc:
        raise SourceError(f"config file {yamlio.error_message(path, exc)} — {_CONFIG_FIX}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SourceError(f"config file {path}:1: expected a mapping of settings (e.g. `recipes_dir: DIR`), "
                          f"got {type(data).__name__} — {_CONFIG_FIX}")
    return data


def set_aside_broken_config(path: Path | None = None) -> Path | None:
    """Move an unreadable/invalid config file to ``config.yaml.broken-<UTC timestamp>`` so it can be
    rewritten; returns the backup path, or ``None`` when the config is fine (or absent).

    Used by ``recipes use`` / ``recipes sync`` — the commands a user runs to repair the source —
    so a broken config never locks them out; the old content is kept for the user to look at.
    """
    path = path or config_file()
    try:
        read_config(path)
        return None
    except SourceError:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        backup = path.with_name(f"{path.name}.broken-{stamp}")
        n = 1
        while backup.exists():
            n += 1
            backup = path.with_name(f"{path.name}.broken-{stamp}-{n}")
        os.replace(path, backup)
        return backup


def write_config(data: dict[str, Any], path: Path | None = None) -> Path:
    """Write the user config atomically (temp file + ``os.replace``); returns its path."""
    import yaml

    from vllm_deploy_wizard.common.files import write_atomic

    return write_atomic(path or config_file(), yaml.safe_dump(data, sort_keys=True))


def check_checkout(path: Path) -> Path:
    """Check ``path`` is laid out like a recipes checkout; returns it absolute (symlinks kept, so the
    sync cache's ``current`` link stays valid across syncs).

    A checkout has ``taxonomy.yaml`` and a ``models/`` folder (``strategies/`` and ``kv_store/`` are
    looked for by the loader; docs/plan-file.md §1).

    Raises:
        SourceError: the folder does not exist or lacks ``taxonomy.yaml`` / ``models/``.
    """
    path = Path(path).expanduser().absolute()  # keep symlinks: `<cache>/current` must stay the link
    if not path.is_dir():
        raise SourceError(f"recipes directory {path} does not exist (or is not a directory)")
    missing = [name for name in ("taxonomy.yaml", "models") if not (path / name).exists()]
    if missing:
        raise SourceError(
            f"{path} is not a recipes checkout: missing {', '.join(missing)} "
            "(expected taxonomy.yaml, strategies/, kv_store/ and models/<org>/<repo>.yaml)"
        )
    return path


def remember_recipes_dir(path: Path | None, config: Path | None = None) -> Path | None:
    """Store ``path`` as ``recipes_dir`` in the user config (``None`` forgets it → bundled catalog).

    Returns the stored absolute path (or ``None``).

    Raises:
        SourceError: ``path`` is not a recipes checkout (see :func:`check_checkout`).
    """
    data = read_config(config)
    if path is None:
        data.pop("recipes_dir", None)
        write_config(data, config)
        return None
    resolved = check_checkout(path)
    data["recipes_dir"] = str(resolved)
    write_config(data, config)
    return resolved


def resolve_source(recipes: Path | None = None, config: Path | None = None) -> CatalogSource:
    """Pick the catalog source: ``--recipes`` > remembered ``recipes_dir`` > bundled.

    Raises:
        SourceError: the chosen directory is not a checkout. A remembered directory that vanished
            is an error too (naming the config file), rather than a silent fallback to bundled data.
    """
    if recipes is not None:
        root = check_checkout(Path(recipes))
        return CatalogSource("dir", root, read_revision(root))
    remembered = read_config(config).get("recipes_dir")
    if remembered:
        try:
            root = check_checkout(Path(str(remembered)))
        except SourceError as exc:
            raise SourceError(
                f"config file {config or config_file()}: recipes_dir: {exc} — run `vllm-wizard recipes use DIR` "
                "or `vllm-wizard recipes use --bundled`"
            ) from None
        return CatalogSource("config", root, read_revision(root))
    return CatalogSource("bundled")


def read_revision(root: Path) -> str | None:
    """The revision recorded by :func:`sync_recipes` in ``root``, or ``None`` for other folders."""
    try:
        return json.loads((root / SYNC_STAMP).read_text(encoding="utf-8")).get("revision")
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- sync


def sync_recipes(
    url: str = DEFAULT_SYNC_URL,
    dest: Path | None = None,
    *,
    validate: Callable[[Path], object] | None = None,
    timeout: float = 60.0,
) -> Path:
    """Download a recipes repository archive, unpack it safely and make it the cached checkout.

    Args:
        url: an ``http(s)://`` or ``file://`` URL of a ``.tar.gz``/``.tgz``/``.tar`` or ``.zip``
            archive whose members all sit under exactly one top folder (GitHub's ``/archive/`` form).
        dest: the cache folder (default :func:`cache_root`); the checkout ends up at
            ``dest/current`` (a symlink to ``dest/checkouts/<revision>-<n>``).
        validate: called with the unpacked checkout root; must raise to reject it. Default: load it
            with :func:`vllm_deploy_wizard.catalog.loader.load_catalog` and require ``catalog check`` to
            find no errors (any exception rejects the archive).
        timeout: network timeout in seconds.

    Returns:
        The resolved checkout path (inside ``dest/checkouts``).

    Raises:
        SyncError: download failed (HTTP status, network), the archive is not tar/zip, has
            no single top folder, contains an unsafe member (traversal, link, device), is not a
            recipes checkout, or fails validation. The previous checkout stays in place.
    """
    dest = Path(dest) if dest is not None else cache_root()
    dest.mkdir(parents=True, exist_ok=True)
    payload = _download(url, timeout)
    sha = hashlib.sha256(payload).hexdigest()
    checkouts = dest / "checkouts"
    checkouts.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest))
    try:
        revision = _unpack(payload, staging, url)
        tops = [p for p in staging.iterdir()]
        if len(tops) != 1 or not tops[0].is_dir():
            names = ", ".join(sorted(p.name for p in tops)) or "nothing"
            raise SyncError(f"{url}: expected exactly one top folder in the archive, found {names}")
        root = tops[0]
        _make_writable(staging)
        try:
            check_checkout(root)
        except SourceError as exc:
            raise SyncError(f"{url}: {exc}") from None
        try:
            (validate or _default_validate)(root)
        except Exception as exc:  # any failure to load rejects the archive
            raise SyncError(f"{url}: the unpacked recipes do not load:\n{exc}") from None
        revision = revision or sha[:12]
        stamp = {"url": url, "revision": revision, "sha256": sha,
                 "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (root / SYNC_STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        final = checkouts / f"{_safe_name(revision)}-{time.time_ns()}"
        os.replace(root, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _swap_current(dest, final)
    for old in checkouts.iterdir():
        if old != final:
            shutil.rmtree(old, ignore_errors=True)
    return final


def synced_checkout(dest: Path | None = None) -> Path | None:
    """The stable path of the synced checkout, ``dest/current`` (a symlink swapped by every sync),
    or ``None`` before the first sync."""
    link = (Path(dest) if dest is not None else cache_root()) / "current"
    return link if link.exists() else None


def _default_validate(root: Path) -> object:
    """Load ``root`` and run ``catalog check`` on it: a checkout that loads but that ``plan`` can't
    use (no hardware profiles, no strategies, negative GPU counts, …) is rejected too.

    Raises:
        CatalogError: the load's problems, or the check's errors (``file:line: message`` each).
    """
    from vllm_deploy_wizard.catalog.diagnostics import check_catalog
    from vllm_deploy_wizard.catalog.loader import load_catalog
    from vllm_deploy_wizard.common.errors import CatalogError

    catalog = load_catalog(recipes=root)
    report = check_catalog(root)
    if report.errors:
        raise CatalogError(report.errors)
    return catalog


def _download(url: str, timeout: float) -> bytes:
    if url.startswith("file://"):
        try:
            return Path(url[len("file://"):]).read_bytes()
        except OSError as exc:
            raise SyncError(f"{url}: cannot read ({exc.strerror})") from None
    import httpx

    buf = io.BytesIO()
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=timeout) as resp:
            if resp.status_code != 200:
                raise SyncError(f"{url}: HTTP {resp.status_code} {resp.reason_phrase}")
            for chunk in resp.iter_bytes():
                buf.write(chunk)
                if buf.tell() > MAX_ARCHIVE_BYTES:
                    raise SyncError(f"{url}: archive larger than {MAX_ARCHIVE_BYTES // 2**20} MiB")
    except httpx.HTTPError as exc:
        raise SyncError(f"{url}: download failed ({type(exc).__name__}: {exc})") from None
    return buf.getvalue()


def _unsafe(name: str) -> str | None:
    """Why member ``name`` may not be extracted, or ``None`` when it is a plain relative path."""
    if not name or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "absolute path"
    if ".." in PurePosixPath(name.replace("\\", "/")).parts:
        return "'..' path component"
    return None


def _unpack(payload: bytes, into: Path, url: str) -> str | None:
    """Extract ``payload`` into ``into``; return the revision recorded in the archive, if any."""
    if payload[:2] == b"\x1f\x8b" or _is_plain_tar(payload):
        try:
            tf = tarfile.open(fileobj=io.BytesIO(payload), mode="r:*")
        except tarfile.TarError as exc:
            raise SyncError(f"{url}: not a readable tar archive ({exc})") from None
        with tf:
            try:
                members = tf.getmembers()
            except (tarfile.TarError, EOFError, OSError) as exc:
                raise SyncError(f"{url}: corrupt tar archive ({exc})") from None
            for m in members:
                why = _unsafe(m.name)
                if why is None and not (m.isfile() or m.isdir()):
                    why = "links and special files are not allowed"
                if why:
                    raise SyncError(f"{url}: refusing archive member {m.name!r}: {why}")
            try:
                if sys.version_info >= (3, 12):
                    tf.extractall(into, members=members, filter="data")
                else:
                    tf.extractall(into, members=members)
            except (tarfile.TarError, OSError) as exc:
                raise SyncError(f"{url}: could not extract ({exc})") from None
            comment = tf.pax_headers.get("comment")
        return comment.strip() if comment else None
    if payload[:4] == b"PK\x03\x04":
        try:
            zf = zipfile.ZipFile(io.BytesIO(payload))
        except zipfile.BadZipFile as exc:
            raise SyncError(f"{url}: not a readable zip archive ({exc})") from None
        with zf:
            base = into.resolve()
            for info in zf.infolist():
                why = _unsafe(info.filename)
                mode = info.external_attr >> 16
                if why is None and (mode & 0o170000) == 0o120000:
                    why = "links and special files are not allowed"
                if why:
                    raise SyncError(f"{url}: refusing archive member {info.filename!r}: {why}")
                target = (base / info.filename).resolve()
                if base not in target.parents and target != base:
                    raise SyncError(f"{url}: refusing archive member {info.filename!r}: escapes the folder")
            try:
                zf.extractall(into)
            except (zipfile.BadZipFile, OSError) as exc:
                raise SyncError(f"{url}: could not extract ({exc})") from None
            comment = zf.comment.decode("utf-8", "replace").strip()
        return comment or None
    raise SyncError(f"{url}: not a .tar.gz or .zip archive (starts with {payload[:8]!r})")


def _is_plain_tar(payload: bytes) -> bool:
    return len(payload) > 262 and payload[257:262] == b"ustar"


def _safe_name(revision: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in revision)
    return keep[:40] or "rev"


def _make_writable(folder: Path) -> None:
    """Give the owner write access to every unpacked folder (archives often carry ``r-x`` modes),
    so the stamp can be written and a later sync can delete the old checkout."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o700)


def _swap_current(dest: Path, target: Path) -> None:
    link = dest / "current"
    tmp = dest / f".current-{os.getpid()}-{time.time_ns()}"
    os.symlink(target, tmp)
    os.replace(tmp, link)
