"""``vllm-wizard [wizard] [--recipes DIR] [--model ID|PATH] [--attach RUN]``: the Textual wizard.

The default command (cli.py runs it when no command is given). Textual and the TUI package are
imported inside the handler only, so ``vllm-wizard --help`` and the headless commands never load
them (DESIGN.md boundaries; tests/test_boundaries.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``wizard`` sub-command (also the default when no command is given)."""
    parser = subparsers.add_parser(
        "wizard",
        help="open the interactive wizard (default)",
        description="Open the Textual wizard: detect this node, pick hardware, model and options, review "
        "the exact commands, launch and monitor them. Keys are shown in the footer; ctrl+p opens the "
        "command palette. Honours NO_COLOR.",
    )
    parser.add_argument("--recipes", type=Path, metavar="DIR", help="a vLLM recipes checkout replacing the bundled catalog")
    parser.add_argument("--model", metavar="ID|PATH", help="preselect a recipe HF id, or a custom model (HF id or local dir)")
    parser.add_argument("--attach", metavar="RUN", help="open the monitor on this live run")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the app until the person quits; returns 0."""
    from vllm_wizard.errors import WizardError
    from vllm_wizard.tui.app import make_app

    if args.recipes is not None and not args.recipes.is_dir():
        raise WizardError(f"--recipes {args.recipes}: not a directory (expected a recipes checkout with taxonomy.yaml)")
    app = make_app(recipes=args.recipes, model=args.model, attach=args.attach)
    result = app.run()
    if isinstance(result, str):
        print(result)
    return 0
