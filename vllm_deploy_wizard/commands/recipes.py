"""``vllm-wizard recipes sync|use|show``: where the catalog comes from.

* ``sync [--url URL]`` downloads a recipes repository archive (default: vllm-project/recipes main),
  validates it, swaps it into the cache atomically and remembers it as the catalog in use
  (``--no-use`` keeps the current choice).
* ``use DIR`` remembers a recipes checkout in the user config; ``use --bundled`` forgets it.
  Both (and ``sync``) repair a broken config file: it is moved aside to
  ``config.yaml.broken-<timestamp>`` (and the user told so) before the new one is written — these are
  the commands the "fix it or delete it" message points to, so they must not fail on it.
* ``show`` prints the source in use, its revision, the config file and the cache folder.

See :mod:`vllm_deploy_wizard.catalog.sources` for the resolution order and the sync safety rules.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``recipes`` with ``sync``, ``use`` and ``show``."""
    parser = subparsers.add_parser("recipes", help="sync, choose and show the recipes catalog source",
                                   description="Sync, choose and show where the recipes catalog comes from.")
    sub = parser.add_subparsers(dest="recipes_command", metavar="SUBCOMMAND", required=True)
    sync = sub.add_parser("sync", help="download the recipes repository archive into the cache",
                          description="Download a recipes repository archive (.tar.gz or .zip with one top "
                          "folder), validate it and make it the catalog in use.")
    sync.add_argument("--url", help="archive URL (default: the vllm-project/recipes main-branch archive)")
    sync.add_argument("--no-use", action="store_true", help="download only; keep the current catalog choice")
    sync.set_defaults(handler=handle_sync)
    use = sub.add_parser("use", help="remember a recipes checkout (or go back to the bundled catalog)",
                         description="Remember DIR as the recipes checkout to use, or --bundled to forget it.")
    group = use.add_mutually_exclusive_group(required=True)
    group.add_argument("dir", nargs="?", type=Path, metavar="DIR", help="recipes checkout")
    group.add_argument("--bundled", action="store_true", help="use the bundled catalog again")
    use.set_defaults(handler=handle_use)
    show = sub.add_parser("show", help="print the catalog source in use")
    show.set_defaults(handler=handle_show)


def handle_sync(args: argparse.Namespace) -> int:
    """Handler of ``recipes sync``."""
    from vllm_deploy_wizard.catalog.sources import (
        DEFAULT_SYNC_URL,
        read_revision,
        remember_recipes_dir,
        sync_recipes,
        synced_checkout,
    )

    url = args.url or DEFAULT_SYNC_URL
    print(f"downloading {url} …")
    path = sync_recipes(url)
    print(f"synced revision {read_revision(path)} into {path}")
    if not args.no_use:
        _set_aside_broken_config()
        remember_recipes_dir(synced_checkout())  # the `current` link: later syncs swap what it points to
        print("now using it (vllm-wizard recipes use --bundled to go back)")
    return 0


def handle_use(args: argparse.Namespace) -> int:
    """Handler of ``recipes use``: DIR must load and pass ``catalog check`` (no errors) before it is
    remembered; raises :class:`CatalogError` with the problems otherwise."""
    from vllm_deploy_wizard.catalog.diagnostics import check_catalog
    from vllm_deploy_wizard.catalog.loader import load_catalog
    from vllm_deploy_wizard.catalog.sources import check_checkout, config_file, remember_recipes_dir
    from vllm_deploy_wizard.common.errors import CatalogError

    if args.bundled:
        _set_aside_broken_config()
        remember_recipes_dir(None)
        print(f"using the bundled catalog ({config_file()})")
        return 0
    root = check_checkout(args.dir)
    cat = load_catalog(root)  # raises CatalogError (file:line problems) before anything is stored
    report = check_catalog(root)
    if report.errors:  # loads, but plan can't use it (no profiles, no strategies, …): don't remember it
        raise CatalogError([*report.errors, f"not remembering {root}: `vllm-wizard catalog check {root}` "
                            f"finds {len(report.errors)} error(s)"])
    _set_aside_broken_config()
    remember_recipes_dir(root)
    print(f"using {root} ({len(cat.recipes)} recipes; remembered in {config_file()})")
    return 0


def _set_aside_broken_config() -> None:
    """Move a broken user config aside (see module docstring) and say where the copy went."""
    from vllm_deploy_wizard.catalog.sources import config_file, set_aside_broken_config

    backup = set_aside_broken_config()
    if backup is not None:
        print(f"{config_file()} was not a valid config file; moved it to {backup} and wrote a new one")


def handle_show(args: argparse.Namespace) -> int:
    """Handler of ``recipes show``."""
    from vllm_deploy_wizard.catalog.sources import cache_root, config_file, resolve_source, synced_checkout

    src = resolve_source()
    print(f"source:   {src.label} ({src.kind})")
    if src.revision:
        print(f"revision: {src.revision}")
    print(f"config:   {config_file()}")
    synced = synced_checkout()
    print(f"cache:    {cache_root()}" + (f" (synced: {synced.resolve()})" if synced else " (never synced)"))
    return 0
