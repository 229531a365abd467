"""``vllm-wizard catalog check [DIR]``: validate a recipes checkout (or the bundled catalog).

Prints every warning and error as ``file:line: message`` (warnings first, each line prefixed with
``warning:`` / ``error:``), then a one-line summary. Exit status 0 when there are only warnings,
1 when there is at least one error (docs/synthesis.md §5: unknown keys and ids are warnings).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``catalog`` with its ``check`` sub-command."""
    parser = subparsers.add_parser("catalog", help="inspect and validate the recipe catalog",
                                   description="Inspect and validate the recipe catalog.")
    sub = parser.add_subparsers(dest="catalog_command", metavar="SUBCOMMAND", required=True)
    check = sub.add_parser(
        "check", help="validate a recipes checkout: file:line errors and warnings",
        description="Validate a recipes checkout (taxonomy.yaml, strategies/, kv_store/, models/). "
        "Without DIR, checks the catalog in use (--recipes / remembered recipes_dir / bundled). "
        "Exits non-zero only when there are errors; unknown keys and ids are warnings.")
    check.add_argument("dir", nargs="?", type=Path, metavar="DIR", help="recipes checkout to check")
    check.add_argument("--quiet", "-q", action="store_true", help="print errors and the summary only")
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    """Handler of ``catalog check``; returns 0 (no errors) or 1 (errors)."""
    from vllm_deploy_wizard.catalog.diagnostics import check_catalog
    from vllm_deploy_wizard.catalog.sources import resolve_source

    target = args.dir
    if target is None:
        target = resolve_source().path  # None = bundled data folder
    report = check_catalog(target)
    if not args.quiet:
        for line in report.warnings:
            print(f"warning: {line}")
    for line in report.errors:
        print(f"error: {line}", file=sys.stderr)
    where = target if target is not None else "bundled catalog"
    print(f"{where}: {report.files} files, {len(report.errors)} error(s), {len(report.warnings)} warning(s)")
    return 0 if report.ok else 1
